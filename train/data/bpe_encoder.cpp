#include "data/bpe_encoder.h"

#include <limits>

#include "core/check.h"

namespace dspark::train {
namespace {

uint64_t key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

}  // namespace

BpeEncoder::BpeEncoder(BpeModel model) : model_(std::move(model)), pretokenizer_(model_.pattern) {
  for (size_t r = 0; r < model_.merges.size(); ++r)
    rank_.emplace(key(model_.merges[r].first, model_.merges[r].second), static_cast<int32_t>(r));
}

void BpeEncoder::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
  std::vector<int32_t> sym;  // [num_symbols]
  sym.reserve(piece.size());
  for (const char c : piece) sym.push_back(model_.byte_id(static_cast<uint8_t>(c)));
  while (sym.size() > 1) {
    int32_t best = std::numeric_limits<int32_t>::max();
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      const auto it = rank_.find(key(sym[i], sym[i + 1]));
      if (it != rank_.end() && it->second < best) best = it->second;
    }
    if (best == std::numeric_limits<int32_t>::max()) break;
    const auto [left, right] = model_.merges[best];
    const int32_t merged_id = model_.first_merge_id() + best;
    size_t w = 0;
    for (size_t i = 0; i < sym.size();) {
      if (i + 1 < sym.size() && sym[i] == left && sym[i + 1] == right) {
        sym[w++] = merged_id;
        i += 2;
      } else {
        sym[w++] = sym[i++];
      }
    }
    sym.resize(w);
  }
  out.insert(out.end(), sym.begin(), sym.end());
}

std::vector<int32_t> BpeEncoder::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  std::vector<std::string_view> pieces;
  split_on_special_tokens(
      text, model_.special_tokens,
      [&](std::string_view segment) {
        pieces.clear();
        pretokenizer_.split(segment, pieces);
        for (const auto piece : pieces) encode_piece(piece, ids);
      },
      [&](int special) { ids.push_back(special); });
  return ids;
}

std::string BpeEncoder::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  for (const int32_t id : ids) {
    DSPARK_CHECK(id >= 0 && id < model_.vocab_size(), "token id {} outside the vocabulary of {}",
                 id, model_.vocab_size());
    if (skip_special && id < model_.num_special()) continue;
    out += model_.tokens[id];
  }
  return out;
}

}  // namespace dspark::train
