// The filters (value | name(args)) and tests (value is name(args)) a template can use, and
// the helpers they share with the interpreter. The set is what real chat templates use;
// each behaves as Jinja2 3.1's builtin of the same name, except tojson, which is
// Hugging Face's: json.dumps(x, ensure_ascii=False, indent=..., separators=...,
// sort_keys=...).
//
// Builtins throw ValueError; the interpreter adds the template name and line.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

#include "chat/jinja_value.h"

namespace dspark::jinja {

using FilterFn = std::function<Value(const Value& operand, const CallArgs& args)>;
using TestFn = std::function<bool(const Value& operand, const CallArgs& args)>;

// Null when there is no filter/test of that name.
const FilterFn* find_filter(std::string_view name);
const TestFn* find_test(std::string_view name);

// Binds a call's positional and keyword arguments to parameter names, like a Python
// signature: f(a, b=..., c=...). Unknown keywords and surplus arguments throw.
class ArgBinder {
 public:
  ArgBinder(const CallArgs& args, std::initializer_list<const char*> names, std::string_view function);
  const Value* get(size_t index) const { return bound_[index]; }  // null when not passed
  Value get_or(size_t index, Value fallback) const { return bound_[index] ? *bound_[index] : std::move(fallback); }
  const Value& required(size_t index) const;

 private:
  std::vector<const Value*> bound_;
  std::vector<std::string> names_;
  std::string function_;
};

// Applies a test by name (select/reject/selectattr, and the `is` operator).
bool apply_test(std::string_view name, const Value& value, const CallArgs& args);

// Python `item in container` (substring, list element, dict key; Undefined contains nothing).
bool value_contains(const Value& container, const Value& item);

// tojson: Python json.dumps. indent: none, an int (spaces) or a string.
struct JsonOptions {
  Value indent = Value::none();
  std::string item_separator = ", ";  // "," when indent is given
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};
std::string to_json(const Value& value, const JsonOptions& options);

// Python's `format % args` (jinja_printf.cpp): a tuple gives the arguments in order, a
// dict serves %(name)s, any other value is the single argument.
std::string python_printf(const std::string& format, const Value& args);

// str.isupper() / str.islower() (jinja_methods.cpp).
bool has_case(const std::string& text, bool upper);

// HTML escaping as markupsafe.escape: & < > " ' -> &amp; &lt; &gt; &#34; &#39;
std::string html_escape(std::string_view text);

}  // namespace dspark::jinja
