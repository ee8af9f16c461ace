// PCRE2 as an independent oracle for the constrained-output automata (regexes and grammars):
// a pattern anchored at both ends, in UTF-8, with PCRE2's defaults (ASCII \d \w \s, '.' not
// matching \n: Python's for the syntax the regex parser supports). Header-only; tests that
// include it link PkgConfig::PCRE2.
#pragma once

#include <cstdint>
#include <string>

#ifndef PCRE2_CODE_UNIT_WIDTH
#define PCRE2_CODE_UNIT_WIDTH 8
#endif
#include <pcre2.h>

#include <gtest/gtest.h>

namespace dspark::testing {

class Pcre2 {
 public:
  explicit Pcre2(const std::string& pattern) {
    const std::string whole = "(?:" + pattern + ")\\z";
    int error = 0;
    PCRE2_SIZE offset = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(whole.data()), whole.size(), PCRE2_UTF | PCRE2_ANCHORED,
                          &error, &offset, nullptr);
    EXPECT_NE(code_, nullptr) << "PCRE2 refuses " << pattern;
    data_ = pcre2_match_data_create_from_pattern(code_, nullptr);
  }
  ~Pcre2() {
    pcre2_match_data_free(data_);
    pcre2_code_free(code_);
  }
  Pcre2(const Pcre2&) = delete;
  Pcre2& operator=(const Pcre2&) = delete;

  // Whether s (valid UTF-8) matches whole / is a prefix of a match.
  bool full(const std::string& s) const { return run(s, 0) >= 0; }
  // PCRE2 reports no partial match of an empty subject; every pattern here matches something.
  bool viable(const std::string& s) const {
    if (s.empty()) return true;
    const int rc = run(s, PCRE2_PARTIAL_HARD);
    return rc >= 0 || rc == PCRE2_ERROR_PARTIAL;
  }

 private:
  int run(const std::string& s, uint32_t options) const {
    return pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, options, data_, nullptr);
  }
  pcre2_code* code_ = nullptr;
  pcre2_match_data* data_ = nullptr;
};

}  // namespace dspark::testing
