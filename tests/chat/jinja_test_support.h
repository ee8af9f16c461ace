// Helpers of the Jinja interpreter's tests: render a template with a JSON context, check
// tables of (template, context, Jinja2's output), and catch the message of an error.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "chat/jinja_template.h"

namespace dspark::jinja::testing {

struct RenderCase {
  const char* source;
  const char* context;  // JSON object, or "" for none
  const char* expected;
};

inline std::string render(const std::string& source, const std::string& context = "", RenderLimits limits = {}) {
  auto json = context.empty() ? nlohmann::ordered_json::object() : nlohmann::ordered_json::parse(context);
  return Template::parse(source, "t", limits).render(json);
}

inline void expect_renders(const std::vector<RenderCase>& cases) {
  for (const RenderCase& c : cases) {
    try {
      EXPECT_EQ(render(c.source, c.context), c.expected) << "template: " << nlohmann::json(c.source).dump();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "template: " << nlohmann::json(c.source).dump() << " threw " << e.what();
    }
  }
}

// The message of the exception of type E that rendering throws ("" if none).
template <typename E>
std::string error_of(const std::string& source, const std::string& context = "", RenderLimits limits = {}) {
  try {
    render(source, context, limits);
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception type: ") + e.what();
  }
  return "";
}

}  // namespace dspark::jinja::testing
