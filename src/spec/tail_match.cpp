#include "spec/tail_match.h"

#include <algorithm>

namespace dspark {

TailMatch find_tail_match(std::span<const int32_t> tokens, int32_t min_n, int32_t max_n) {
  const auto size = static_cast<int64_t>(tokens.size());
  // An earlier occurrence must end at or before size - 1, so the tail is at most size - 1 long.
  const int64_t longest = std::min<int64_t>(max_n, size - 1);
  if (longest < min_n) return {};

  const int32_t* t = tokens.data();  // [size]
  const int32_t last = t[size - 1];
  TailMatch best{-1, min_n - 1};  // a match must beat this length to count
  // Scanning ends from the most recent backwards and replacing only on a strictly longer
  // match yields the longest tail, most recent occurrence. A match of length m ending at e
  // means t[e-m..e) == t[size-m..size).
  for (int64_t end = size - 1; end >= 1; --end) {
    if (t[end - 1] != last) continue;
    const int64_t limit = std::min(longest, end);
    int64_t len = 1;
    while (len < limit && t[end - 1 - len] == t[size - 1 - len]) ++len;
    if (len > best.length) {
      best = {end, len};
      if (len == longest) break;  // nothing earlier can be longer, and this one is more recent
    }
  }
  return best.found() ? best : TailMatch{};
}

int32_t leading_repeat_agreement(std::span<const int32_t> tokens, std::span<const int32_t> drafts, int32_t min_n,
                                 int32_t max_n) {
  const TailMatch match = find_tail_match(tokens, min_n, max_n);
  if (!match.found()) return 0;
  int32_t n = 0;
  while (n < static_cast<int32_t>(drafts.size()) && drafts[n] == repeated_token(tokens, match, n)) ++n;
  return n;
}

}  // namespace dspark
