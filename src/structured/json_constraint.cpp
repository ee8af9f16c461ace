#include "structured/json_constraint.h"

#include "core/check.h"

namespace dspark {

JsonConstraint::JsonConstraint(const JsonTokenMasker& masker, const JsonMatcherOptions& options)
    : masker_(&masker), matcher_(options), bits_(static_cast<size_t>(masker.num_words())) {}

bool JsonConstraint::accept_token(int32_t token) { return masker_->advance(matcher_, token); }

int32_t JsonConstraint::valid_prefix_length(std::span<const int32_t> drafts) const {
  JsonMatcher m = matcher_;
  int32_t n = 0;
  for (const int32_t token : drafts) {
    if (!masker_->advance(m, token)) break;
    ++n;
  }
  return n;
}

JsonMatcher JsonConstraint::state_after(std::span<const int32_t> drafts) const {
  JsonMatcher m = matcher_;
  for (size_t j = 0; j < drafts.size(); ++j) {
    DSPARK_CHECK(masker_->advance(m, drafts[j]),
                 "JsonConstraint: draft {} (token {}) breaks the JSON grammar; cut the drafts at "
                 "valid_prefix_length() first", j, drafts[j]);
  }
  return m;
}

std::span<const uint64_t> JsonConstraint::allowed_tokens(std::span<const int32_t> drafts_before) {
  masker_->allowed_tokens(state_after(drafts_before), bits_);
  return bits_;
}

void JsonConstraint::mask(float* logits_row, std::span<const int32_t> drafts_before) {
  masker_->allowed_tokens(state_after(drafts_before), bits_);
  apply_token_mask(bits_, logits_row, masker_->num_logits());
}

void JsonConstraint::mask_rows(float* logits, int64_t row_stride, std::span<const int32_t> drafts) {
  DSPARK_CHECK(row_stride >= masker_->num_logits(), "JsonConstraint: row stride {} < {} logits",
               row_stride, masker_->num_logits());
  JsonMatcher m = matcher_;
  for (size_t j = 0; j <= drafts.size(); ++j) {
    masker_->allowed_tokens(m, bits_);
    apply_token_mask(bits_, logits + static_cast<int64_t>(j) * row_stride, masker_->num_logits());
    if (j == drafts.size()) break;
    DSPARK_CHECK(masker_->advance(m, drafts[j]),
                 "JsonConstraint: draft {} (token {}) breaks the JSON grammar; cut the drafts at "
                 "valid_prefix_length() first", j, drafts[j]);
  }
}

}  // namespace dspark
