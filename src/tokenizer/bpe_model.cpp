#include "tokenizer/bpe_model.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "tokenizer/tokenizer_utf8.h"

namespace dspark::tok {
namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return ((static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
          static_cast<uint32_t>(right)) + 1;  // +1 keeps 0 free as the empty marker
}

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

std::string optional_string(const nlohmann::json& j, const char* field) {
  if (!j.contains(field) || j[field].is_null()) return {};
  return j[field].get<std::string>();
}

bool optional_bool(const nlohmann::json& j, const char* field) {
  return j.contains(field) && j[field].is_boolean() && j[field].get<bool>();
}

}  // namespace

BpeModel::BpeModel(const nlohmann::json& model, std::string_view source) {
  const std::string type = model.value("type", std::string("BPE"));
  DSPARK_CHECK(type == "BPE", "{}: unsupported model type '{}' (only BPE is supported)", source,
               type);
  const auto& vocab = model.at("vocab");
  DSPARK_CHECK(vocab.is_object(), "{}: model.vocab must be an object of token -> id", source);
  vocab_.reserve(vocab.size());
  for (const auto& [token, id_json] : vocab.items()) {
    const auto id = id_json.get<int32_t>();
    DSPARK_CHECK(id >= 0, "{}: vocab token '{}' has negative id {}", source, token, id);
    vocab_.emplace(token, id);
    max_id_ = std::max(max_id_, id);
  }
  prefix_ = optional_string(model, "continuing_subword_prefix");
  suffix_ = optional_string(model, "end_of_word_suffix");
  fuse_unk_ = optional_bool(model, "fuse_unk");
  byte_fallback_ = optional_bool(model, "byte_fallback");
  ignore_merges_ = optional_bool(model, "ignore_merges");
  const std::string unk = optional_string(model, "unk_token");
  if (!unk.empty()) {
    const auto it = vocab_.find(unk);
    DSPARK_CHECK(it != vocab_.end(), "{}: unk_token '{}' is not in the vocabulary", source, unk);
    unk_id_ = it->second;
  }

  // Merges, "a b" strings or ["a", "b"] pairs; the rank is the position in the list.
  const auto& merges = model.contains("merges") ? model["merges"] : nlohmann::json::array();
  DSPARK_CHECK(merges.is_array(), "{}: model.merges must be an array", source);
  size_t capacity = 16;
  while (capacity < 2 * merges.size() + 16) capacity *= 2;
  merge_keys_.assign(capacity, 0);
  merge_ranks_.assign(capacity, 0);
  merge_ids_.assign(capacity, 0);
  merge_mask_ = capacity - 1;
  auto id_of = [&](const std::string& token, size_t rank) {
    const auto it = vocab_.find(token);
    DSPARK_CHECK(it != vocab_.end(), "{}: merge #{} uses '{}', which is not in the vocabulary",
                 source, rank, token);
    return it->second;
  };
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& m = merges[rank];
    std::string left, right;
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      DSPARK_CHECK(space != std::string::npos && space > 0 && space + 1 < s.size(),
                   "{}: merge #{} '{}' is not of the form 'a b'", source, rank, s);
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else {
      DSPARK_CHECK(m.is_array() && m.size() == 2, "{}: merge #{} must be 'a b' or [a, b]", source,
                   rank);
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    }
    const int32_t left_id = id_of(left, rank);
    const int32_t right_id = id_of(right, rank);
    // The merged token drops the right side's continuing-subword prefix.
    std::string merged = left;
    merged.append(right, right.compare(0, prefix_.size(), prefix_) == 0 ? prefix_.size() : 0);
    const int32_t new_id = id_of(merged, rank);
    const uint64_t key = pair_key(left_id, right_id);
    size_t slot = mix(key) & merge_mask_;
    while (merge_keys_[slot] != 0 && merge_keys_[slot] != key) slot = (slot + 1) & merge_mask_;
    // A repeated pair keeps the later rank, as a hash map built from the list would.
    merge_keys_[slot] = key;
    merge_ranks_[slot] = static_cast<int32_t>(rank);
    merge_ids_[slot] = new_id;
  }

  char_ids_.assign(0x10000, -1);
  for (const auto& [token, id] : vocab_) {
    size_t pos = 0;
    if (token.empty()) continue;
    const char32_t cp = utf8_next(token, pos);
    if (pos == token.size() && cp < 0x10000) char_ids_[cp] = id;
  }
  if (prefix_.empty() && suffix_.empty()) {
    const std::string marker = "\xE2\x96\x81";  // U+2581
    bool safe = vocab_.count(marker) > 0;
    for (const auto& [token, id] : vocab_) {
      size_t lead = 0;
      while (token.compare(lead, marker.size(), marker) == 0) lead += marker.size();
      if (token.find(marker, lead) != std::string::npos) {
        safe = false;
        break;
      }
    }
    if (safe) word_start_ = marker;
  }
  byte_ids_.assign(256, -1);
  for (int b = 0; b < 256; ++b) {
    const auto it = vocab_.find(fmt::format("<0x{:02X}>", b));
    if (it != vocab_.end()) byte_ids_[b] = it->second;
  }
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

bool BpeModel::find_merge(int32_t left, int32_t right, int32_t* rank, int32_t* new_id) const {
  const uint64_t key = pair_key(left, right);
  for (size_t slot = mix(key) & merge_mask_;; slot = (slot + 1) & merge_mask_) {
    if (merge_keys_[slot] == key) {
      *rank = merge_ranks_[slot];
      *new_id = merge_ids_[slot];
      return true;
    }
    if (merge_keys_[slot] == 0) return false;
  }
}

int32_t BpeModel::lookup_char(std::string_view ch, bool is_first, bool is_last,
                              BpeScratch& s) const {
  const bool decorate = (!is_first && !prefix_.empty()) || (is_last && !suffix_.empty());
  if (!decorate) {
    size_t pos = 0;
    const char32_t cp = utf8_next(ch, pos);
    if (cp < 0x10000) return char_ids_[cp];
    const auto it = vocab_.find(ch);
    return it == vocab_.end() ? -1 : it->second;
  }
  s.key.clear();
  if (!is_first) s.key.append(prefix_);
  s.key.append(ch);
  if (is_last) s.key.append(suffix_);
  const auto it = vocab_.find(std::string_view(s.key));
  return it == vocab_.end() ? -1 : it->second;
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out,
                           BpeScratch& s) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    const auto it = vocab_.find(word);
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  constexpr size_t kMinSplitBytes = 64;  // below this, splitting does not pay
  if (word_start_.empty() || word.size() < kMinSplitBytes) {
    encode_part(word, out, s);
    return;
  }
  const std::string_view marker = word_start_;
  size_t begin = 0;
  for (size_t pos = word.find(marker, 1); pos != std::string_view::npos;
       pos = word.find(marker, pos + marker.size())) {
    // Cut only where a run of markers starts.
    if (pos >= marker.size() && word.substr(pos - marker.size(), marker.size()) == marker) continue;
    encode_part(word.substr(begin, pos - begin), out, s);
    begin = pos;
  }
  encode_part(word.substr(begin), out, s);
}

void BpeModel::encode_part(std::string_view word, std::vector<int32_t>& out,
                           BpeScratch& s) const {
  // Natural text repeats its words; remember short ones for the rest of this call.
  constexpr size_t kMaxCachedBytes = 32, kMaxCachedWords = 1 << 16;
  const bool cacheable = word.size() <= kMaxCachedBytes;
  if (cacheable) {
    const auto it = s.cache.find(word);
    if (it != s.cache.end()) {
      const auto [offset, count] = it->second;
      out.insert(out.end(), s.cached_ids.begin() + offset, s.cached_ids.begin() + offset + count);
      return;
    }
  }
  const size_t first = out.size();
  encode_symbols(word, out, s);
  if (cacheable) {
    if (s.cache.size() >= kMaxCachedWords) {
      s.cache.clear();
      s.cached_ids.clear();
    }
    const auto offset = static_cast<uint32_t>(s.cached_ids.size());
    s.cached_ids.insert(s.cached_ids.end(), out.begin() + first, out.end());
    s.cache.emplace(std::string(word), std::make_pair(offset, static_cast<uint32_t>(out.size() - first)));
  }
}

void BpeModel::encode_symbols(std::string_view word, std::vector<int32_t>& out,
                              BpeScratch& s) const {
  auto& symbols = s.symbols;
  symbols.clear();
  auto add = [&](int32_t id, int32_t len) {
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, index + 1, len});
  };
  int32_t unk_len = 0;  // bytes covered by a pending <unk>, 0 when none
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t begin = pos;
    pos += utf8_seq_len(static_cast<unsigned char>(word[pos]));
    const std::string_view ch = word.substr(begin, pos - begin);
    const auto len = static_cast<int32_t>(ch.size());
    const int32_t id = lookup_char(ch, begin == 0, pos >= word.size(), s);
    if (id >= 0) {
      if (unk_len > 0) add(unk_id_, unk_len), unk_len = 0;
      add(id, len);
      continue;
    }
    if (byte_fallback_) {
      // The bytes of the (decorated) character, each as its <0xNN> token.
      const std::string_view bytes =
          (begin > 0 && !prefix_.empty()) || (pos >= word.size() && !suffix_.empty())
              ? std::string_view(s.key)
              : ch;
      const bool all = std::all_of(bytes.begin(), bytes.end(), [&](char b) {
        return byte_ids_[static_cast<unsigned char>(b)] >= 0;
      });
      if (all) {
        for (char b : bytes) add(byte_ids_[static_cast<unsigned char>(b)], 1);
        continue;
      }
    }
    if (unk_id_ >= 0) {
      if (unk_len > 0 && !fuse_unk_) add(unk_id_, unk_len), unk_len = 0;
      unk_len += len;
    }
    // Without an unk token an unknown character is dropped, as Hugging Face does.
  }
  if (unk_len > 0) add(unk_id_, unk_len);
  if (symbols.empty()) return;
  symbols.back().next = -1;
  if (symbols.size() > 1) merge_all(s);
  for (const auto& sym : symbols) {
    if (sym.len > 0) out.push_back(sym.id);
  }
}

void BpeModel::merge_all(BpeScratch& s) const {
  auto& symbols = s.symbols;
  auto& heap = s.heap;
  heap.clear();
  // Lowest rank first, then leftmost.
  auto later = [](const BpeScratch::Candidate& a, const BpeScratch::Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  };
  auto push = [&](int32_t pos) {
    const auto& left = symbols[pos];
    if (left.next < 0) return;
    int32_t rank, new_id;
    if (find_merge(left.id, symbols[left.next].id, &rank, &new_id)) {
      heap.push_back({rank, pos, new_id});
      std::push_heap(heap.begin(), heap.end(), later);
    }
  };
  for (int32_t i = 0; i + 1 < static_cast<int32_t>(symbols.size()); ++i) push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const BpeScratch::Candidate top = heap.back();
    heap.pop_back();
    auto& left = symbols[top.pos];
    if (left.len == 0 || left.next < 0) continue;
    const int32_t right_pos = left.next;
    const auto right = symbols[right_pos];
    // Stale entry: one side changed since it was queued.
    int32_t rank, new_id;
    if (!find_merge(left.id, right.id, &rank, &new_id) || new_id != top.new_id) continue;
    left.id = top.new_id;
    left.len += right.len;
    left.next = right.next;
    symbols[right_pos].len = 0;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) push(left.prev);
    push(top.pos);
  }
}

}  // namespace dspark::tok
