// Tests: `value is name(args)`, and the `in` operator they share with the interpreter.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"

namespace dspark::jinja {
namespace {

// Tests with an argument take exactly one.
const Value& test_arg(const CallArgs& args, std::string_view test) {
  if (args.positional.size() != 1 || !args.keyword.empty())
    throw ValueError("test '" + std::string(test) + "' takes exactly one argument");
  return args.positional[0];
}

bool is_integer(const Value& v) { return v.is_int(); }

Value python_mod(const Value& value, int64_t divisor) {
  if (value.is_int() || value.is_bool()) {
    if (divisor == 0) throw ValueError("integer modulo by zero");
    int64_t r = value.as_int() % divisor;
    if (r != 0 && ((r < 0) != (divisor < 0))) r += divisor;
    return Value(r);
  }
  if (value.is_float()) {
    if (divisor == 0) throw ValueError("float modulo");
    double r = std::fmod(value.as_double(), static_cast<double>(divisor));
    if (r != 0 && ((r < 0) != (divisor < 0))) r += static_cast<double>(divisor);
    return Value(r);
  }
  throw ValueError("unsupported operand type(s) for %: '" + value.type_name() + "' and 'int'");
}

bool contains(const Value& container, const Value& item);

bool same_object(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kList: return &a.as_list() == &b.as_list();
    case Value::Kind::kDict:
    case Value::Kind::kNamespace: return &a.as_dict() == &b.as_dict();
    case Value::Kind::kCallable: return &a.as_callable() == &b.as_callable();
    case Value::Kind::kFloat: return false;  // distinct float objects
    default: return a.equals(b);
  }
}

const std::unordered_map<std::string_view, TestFn>& tests() {
  static const auto* table = new std::unordered_map<std::string_view, TestFn>{
      {"defined", [](const Value& v, const CallArgs&) { return !v.is_undefined(); }},
      {"undefined", [](const Value& v, const CallArgs&) { return v.is_undefined(); }},
      {"none", [](const Value& v, const CallArgs&) { return v.is_none(); }},
      {"string", [](const Value& v, const CallArgs&) { return v.is_string(); }},
      {"number", [](const Value& v, const CallArgs&) { return v.is_number(); }},
      {"integer", [](const Value& v, const CallArgs&) { return is_integer(v); }},
      {"float", [](const Value& v, const CallArgs&) { return v.is_float(); }},
      {"boolean", [](const Value& v, const CallArgs&) { return v.is_bool(); }},
      {"true", [](const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }},
      {"false", [](const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }},
      {"mapping", [](const Value& v, const CallArgs&) { return v.is_dict(); }},
      // Undefined iterates (as empty) and has a length, so Jinja calls it iterable.
      {"iterable", [](const Value& v, const CallArgs&) { return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined(); }},
      {"sequence", [](const Value& v, const CallArgs&) { return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined(); }},
      {"callable", [](const Value& v, const CallArgs&) { return v.is_callable(); }},
      {"odd", [](const Value& v, const CallArgs&) { return python_mod(v, 2).truthy(); }},
      {"even", [](const Value& v, const CallArgs&) { return !python_mod(v, 2).truthy(); }},
      {"divisibleby", [](const Value& v, const CallArgs& a) {
         const Value& n = test_arg(a, "divisibleby");
         if (!n.is_int()) throw ValueError("divisibleby needs an integer");
         return !python_mod(v, n.as_int()).truthy();
       }},
      {"eq", [](const Value& v, const CallArgs& a) { return v.equals(test_arg(a, "eq")); }},
      {"ne", [](const Value& v, const CallArgs& a) { return !v.equals(test_arg(a, "ne")); }},
      {"lt", [](const Value& v, const CallArgs& a) { return v.compare(test_arg(a, "lt")) < 0; }},
      {"le", [](const Value& v, const CallArgs& a) { return v.compare(test_arg(a, "le")) <= 0; }},
      {"gt", [](const Value& v, const CallArgs& a) { return v.compare(test_arg(a, "gt")) > 0; }},
      {"ge", [](const Value& v, const CallArgs& a) { return v.compare(test_arg(a, "ge")) >= 0; }},
      {"in", [](const Value& v, const CallArgs& a) { return contains(test_arg(a, "in"), v); }},
      {"sameas", [](const Value& v, const CallArgs& a) { return same_object(v, test_arg(a, "sameas")); }},
      {"lower", [](const Value& v, const CallArgs&) { return has_case(v.str(), false); }},
      {"upper", [](const Value& v, const CallArgs&) { return has_case(v.str(), true); }},
      {"escaped", [](const Value&, const CallArgs&) { return false; }},
      {"filter", [](const Value& v, const CallArgs&) { return v.is_string() && find_filter(v.as_string()) != nullptr; }},
      {"test", [](const Value& v, const CallArgs&) { return v.is_string() && find_test(v.as_string()) != nullptr; }},
  };
  return *table;
}

// Aliases Jinja registers under other names.
std::string_view canonical_test(std::string_view name) {
  if (name == "equalto" || name == "==") return "eq";
  if (name == "!=") return "ne";
  if (name == "lessthan" || name == "<") return "lt";
  if (name == "greaterthan" || name == ">") return "gt";
  if (name == "<=") return "le";
  if (name == ">=") return "ge";
  return name;
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined: return false;
    case Value::Kind::kString:
      if (!item.is_string())
        throw ValueError("'in <string>' requires string as left operand, not " + item.type_name());
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : container.as_list()) if (v.equals(item)) return true;
      return false;
    case Value::Kind::kDict: return container.as_dict().find(item) != nullptr;
    default: throw ValueError("argument of type '" + container.type_name() + "' is not iterable");
  }
}

}  // namespace

const TestFn* find_test(std::string_view name) {
  const auto& table = tests();
  auto it = table.find(canonical_test(name));
  return it == table.end() ? nullptr : &it->second;
}

bool apply_test(std::string_view name, const Value& value, const CallArgs& args) {
  const TestFn* fn = find_test(name);
  if (!fn) throw ValueError("No test named '" + std::string(name) + "'.");
  return (*fn)(value, args);
}

bool value_contains(const Value& container, const Value& item) { return contains(container, item); }

}  // namespace dspark::jinja
