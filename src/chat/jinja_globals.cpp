#include "chat/jinja_globals.h"

#include <ctime>
#include <unordered_map>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"

namespace dspark::jinja {
namespace {

// The sandbox refuses ranges longer than this (jinja2.sandbox.MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

Value range(CallArgs args) {
  if (!args.keyword.empty()) throw ValueError("range() takes no keyword arguments");
  std::vector<int64_t> bounds;
  for (const Value& v : args.positional) {
    if (!v.is_int() && !v.is_bool()) throw ValueError("'" + v.type_name() + "' object cannot be interpreted as an integer");
    bounds.push_back(v.as_int());
  }
  int64_t start = 0, stop = 0, step = 1;
  if (bounds.size() == 1) stop = bounds[0];
  else if (bounds.size() == 2 || bounds.size() == 3) {
    start = bounds[0];
    stop = bounds[1];
    if (bounds.size() == 3) step = bounds[2];
  } else {
    throw ValueError("range expected at most 3 arguments, got " + std::to_string(bounds.size()));
  }
  if (step == 0) throw ValueError("range() arg 3 must not be zero");
  int64_t count = step > 0 ? (stop > start ? (stop - start + step - 1) / step : 0)
                           : (start > stop ? (start - stop - step - 1) / -step : 0);
  if (count > kMaxRange)
    throw ValueError("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  List items;
  items.reserve(static_cast<size_t>(count));
  for (int64_t i = 0, v = start; i < count; ++i, v += step) items.emplace_back(v);
  return Value::list(std::move(items));
}

// namespace(mapping?, **attributes) and dict(mapping?, **items).
Dict dict_from_args(const CallArgs& args, const char* function) {
  Dict out;
  if (args.positional.size() > 1) throw ValueError(std::string(function) + "() takes at most 1 positional argument");
  if (!args.positional.empty()) {
    const Value& initial = args.positional[0];
    if (initial.is_dict()) {
      out = initial.as_dict();
    } else {
      for (const Value& pair : initial.iterate()) {
        if (!pair.is_list() || pair.as_list().size() != 2) throw ValueError("dictionary update sequence element has wrong length");
        out.set(pair.as_list()[0], pair.as_list()[1]);
      }
    }
  }
  for (const auto& [name, value] : args.keyword) out.set(Value(name), value);
  return out;
}

Value raise_exception(CallArgs args) {
  ArgBinder a(args, {"message"}, "raise_exception");
  throw TemplateRaisedError(a.get_or(0, Value("")).str());
}

Value strftime_now(CallArgs args) {
  ArgBinder a(args, {"format"}, "strftime_now");
  const std::string format = a.required(0).str();
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[512];
  size_t n = std::strftime(buf, sizeof(buf), format.c_str(), &local);
  return Value(std::string(buf, n));
}

const std::unordered_map<std::string_view, Value>& globals() {
  static const auto* table = new std::unordered_map<std::string_view, Value>{
      {"range", Value::callable(std::make_shared<FunctionCallable>("range", range))},
      {"namespace", Value::callable(std::make_shared<FunctionCallable>("namespace", [](CallArgs args) {
         return Value::object(dict_from_args(args, "namespace"), "jinja2.utils.Namespace");
       }))},
      {"dict", Value::callable(std::make_shared<FunctionCallable>("dict", [](CallArgs args) {
         return Value::dict(dict_from_args(args, "dict"));
       }))},
      {"raise_exception", Value::callable(std::make_shared<FunctionCallable>("raise_exception", raise_exception))},
      {"strftime_now", Value::callable(std::make_shared<FunctionCallable>("strftime_now", strftime_now))},
  };
  return *table;
}

}  // namespace

Value find_global(std::string_view name) {
  const auto& table = globals();
  auto it = table.find(name);
  return it == table.end() ? Value() : it->second;
}

}  // namespace dspark::jinja
