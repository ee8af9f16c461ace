// A sequence's own tail found earlier in it (prompt lookup), and the continuation that
// reading the sequence as a loop from there predicts.
//
// For tokens t_0..t_{N-1}, find_tail_match() looks for an earlier occurrence of the last n
// tokens t_{N-n}..t_{N-1}, trying n from max_n down to min_n (the longest matching tail
// wins), and among the occurrences of that length takes the most recent one (it may
// overlap the tail itself). Cost: one backward scan over the end positions, comparing at
// most max_n tokens at each, stopping at the most recent full-length match; O(N) typically.
//
// repeated_token(i) is the token i places after the occurrence: t[end + i] while that
// exists, and past the sequence's end the same tokens again with period N - end, as if the
// text repeats itself. Greedy decoding of a small model often ends in such a loop; there
// the continuation is what the target will say, and a draft that agrees with it survives
// verification almost surely (DrafterConfig::confidence_repeat_shifts; DSparkProposerOptions::
// repeat_lookup_min_match drafts the continuation itself).
#pragma once

#include <cstdint>
#include <span>

namespace dspark {

// The lookup behind the repeat shifts and repeat lookup, the same in the engine and in
// calibration.
inline constexpr int32_t kRepeatMinTail = 2;
inline constexpr int32_t kRepeatMaxTail = 16;

struct TailMatch {
  int64_t end = -1;    // exclusive end of the earlier occurrence; -1: none
  int64_t length = 0;  // tokens matched

  bool found() const { return end >= 0; }
};

TailMatch find_tail_match(std::span<const int32_t> tokens, int32_t min_n, int32_t max_n);

// Requires match.found() and tokens the sequence it was found in.
inline int32_t repeated_token(std::span<const int32_t> tokens, const TailMatch& match, int64_t i) {
  const auto size = static_cast<int64_t>(tokens.size());
  const int64_t period = size - match.end;
  const int64_t at = match.end + i;
  return tokens[static_cast<size_t>(at < size ? at : match.end + (at - size) % period)];
}

// How many leading drafts equal the continuation after the tail's most recent earlier
// occurrence (the loop reading above); 0 when the tail occurs nowhere earlier.
int32_t leading_repeat_agreement(std::span<const int32_t> tokens, std::span<const int32_t> drafts, int32_t min_n,
                                 int32_t max_n);

}  // namespace dspark
