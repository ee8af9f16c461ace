#include "structured/grammar_constraint.h"

#include <type_traits>

#include "core/check.h"

namespace dspark {

GrammarConstraint::GrammarConstraint(const TokenMasker& masker, const JsonMatcherOptions& options)
    : masker_(&masker), matcher_(JsonMatcher(options)), bits_(static_cast<size_t>(masker.num_words())) {}

GrammarConstraint::GrammarConstraint(const TokenMasker& masker, std::shared_ptr<const CompiledJsonSchema> schema)
    : masker_(&masker), schema_(std::move(schema)), bits_(static_cast<size_t>(masker.num_words())) {
  DSPARK_CHECK(schema_ != nullptr, "GrammarConstraint: no compiled schema");
  matcher_ = SchemaMatcher(*schema_);
}

GrammarConstraint::GrammarConstraint(const TokenMasker& masker, std::shared_ptr<const CompiledRegex> regex,
                                     std::shared_ptr<RegexTokenMasks> masks)
    : masker_(&masker),
      regex_(std::move(regex)),
      regex_masks_(std::move(masks)),
      bits_(static_cast<size_t>(masker.num_words())) {
  DSPARK_CHECK(regex_ != nullptr, "GrammarConstraint: no compiled regex");
  matcher_ = RegexMatcher(*regex_);
  if (!regex_masks_) regex_masks_ = std::make_shared<RegexTokenMasks>(masker, *regex_);
}

GrammarConstraint::GrammarConstraint(const TokenMasker& masker, std::shared_ptr<const CompiledGrammar> grammar,
                                     std::shared_ptr<GrammarTokenMasks> masks)
    : masker_(&masker),
      cfg_(std::move(grammar)),
      grammar_masks_(std::move(masks)),
      bits_(static_cast<size_t>(masker.num_words())) {
  DSPARK_CHECK(cfg_ != nullptr, "GrammarConstraint: no compiled grammar");
  matcher_ = GrammarMatcher(*cfg_);
  if (!grammar_masks_) grammar_masks_ = std::make_shared<GrammarTokenMasks>(masker, *cfg_);
}

template <class Matcher>
void GrammarConstraint::fill_allowed(const Matcher& m) {
  if constexpr (std::is_same_v<Matcher, RegexMatcher>) {
    regex_masks_->allowed_tokens(m, bits_);
  } else if constexpr (std::is_same_v<Matcher, GrammarMatcher>) {
    grammar_masks_->allowed_tokens(m, bits_);
  } else {
    masker_->allowed_tokens(m, bits_);
  }
}

const JsonMatcher& GrammarConstraint::matcher() const {
  DSPARK_CHECK(std::holds_alternative<JsonMatcher>(matcher_), "GrammarConstraint: not a json_object constraint");
  return std::get<JsonMatcher>(matcher_);
}

const SchemaMatcher& GrammarConstraint::schema_matcher() const {
  DSPARK_CHECK(std::holds_alternative<SchemaMatcher>(matcher_), "GrammarConstraint: not a json_schema constraint");
  return std::get<SchemaMatcher>(matcher_);
}

std::string GrammarConstraint::completion() const {
  return std::visit([](const auto& m) { return m.completion(); }, matcher_);
}

bool GrammarConstraint::accept_token(int32_t token) {
  return std::visit([&](auto& m) { return masker_->advance(m, token); }, matcher_);
}

int32_t GrammarConstraint::valid_prefix_length(std::span<const int32_t> drafts) const {
  return std::visit(
      [&](const auto& state) {
        auto m = state;
        int32_t n = 0;
        for (const int32_t token : drafts) {
          if (!masker_->advance(m, token)) break;
          ++n;
        }
        return n;
      },
      matcher_);
}

GrammarConstraint::State GrammarConstraint::state_after(std::span<const int32_t> drafts) const {
  State state = matcher_;
  std::visit(
      [&](auto& m) {
        for (size_t j = 0; j < drafts.size(); ++j) {
          DSPARK_CHECK(masker_->advance(m, drafts[j]),
                       "GrammarConstraint: draft {} (token {}) breaks the grammar; cut the drafts at "
                       "valid_prefix_length() first", j, drafts[j]);
        }
      },
      state);
  return state;
}

std::span<const uint64_t> GrammarConstraint::allowed_tokens(std::span<const int32_t> drafts_before) {
  const State state = state_after(drafts_before);
  std::visit([&](const auto& m) { fill_allowed(m); }, state);
  return bits_;
}

void GrammarConstraint::mask(float* logits_row, std::span<const int32_t> drafts_before) {
  allowed_tokens(drafts_before);
  apply_token_mask(bits_, logits_row, masker_->num_logits());
}

void GrammarConstraint::mask_rows(float* logits, int64_t row_stride, std::span<const int32_t> drafts) {
  DSPARK_CHECK(row_stride >= masker_->num_logits(), "GrammarConstraint: row stride {} < {} logits",
               row_stride, masker_->num_logits());
  std::visit(
      [&](const auto& state) {
        auto m = state;
        for (size_t j = 0; j <= drafts.size(); ++j) {
          fill_allowed(m);
          apply_token_mask(bits_, logits + static_cast<int64_t>(j) * row_stride, masker_->num_logits());
          if (j == drafts.size()) break;
          DSPARK_CHECK(masker_->advance(m, drafts[j]),
                       "GrammarConstraint: draft {} (token {}) breaks the grammar; cut the drafts at "
                       "valid_prefix_length() first", j, drafts[j]);
        }
      },
      matcher_);
}

}  // namespace dspark
