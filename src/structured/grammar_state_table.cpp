#include "structured/grammar_state_table.h"

namespace dspark {

int32_t GrammarStateTable::intern(const GrammarMatcher& m) {
  m.key(key_);
  // The key's bytes in a buffer kept between calls: a state seen before costs no allocation.
  key_bytes_.assign(reinterpret_cast<const char*>(key_.data()), key_.size() * sizeof(int32_t));
  if (const auto it = ids_.find(key_bytes_); it != ids_.end()) return it->second;
  const auto id = static_cast<int32_t>(states_.size());
  ids_.emplace(key_bytes_, id);
  states_.push_back(m);
  ascii_.emplace_back().fill(kUnknown);
  return id;
}

int32_t GrammarStateTable::step(int32_t id, uint8_t byte) {
  scratch_ = states_[static_cast<size_t>(id)];
  const int32_t result = scratch_.advance(byte) ? intern(scratch_) : kDead;
  if (byte < 128) {
    ascii_[static_cast<size_t>(id)][byte] = result;
  } else {
    other_[static_cast<uint64_t>(id) << 8 | byte] = result;
  }
  return result;
}

void GrammarStateTable::clear() {
  states_.clear();
  ascii_.clear();
  other_.clear();
  ids_.clear();
}

}  // namespace dspark
