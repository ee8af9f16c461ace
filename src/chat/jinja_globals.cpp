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

// Python's errors for a call of a method that takes nothing besides self.
void expect_no_arguments(const CallArgs& args, const std::string& function) {
  if (!args.positional.empty())
    throw ValueError(function + " takes 1 positional argument but " + std::to_string(args.positional.size() + 1) +
                     " were given");
  if (!args.keyword.empty())
    throw ValueError(function + " got an unexpected keyword argument '" + args.keyword[0].first + "'");
}

// cycler(*items): its state is in its attributes (items, pos, and current, Python's
// property kept up to date), so every copy of the value sees next() and reset().
Value cycler(CallArgs args) {
  if (!args.keyword.empty())
    throw ValueError("Cycler.__init__() got an unexpected keyword argument '" + args.keyword[0].first + "'");
  if (args.positional.empty()) throw ValueError("at least one item has to be provided");
  Dict attributes;
  attributes.set(Value("current"), args.positional[0]);
  attributes.set(Value("items"), Value::list(std::move(args.positional), /*is_tuple=*/true));
  attributes.set(Value("pos"), Value(0));
  return Value::object(std::move(attributes), "jinja2.utils.Cycler");
}

// joiner(sep=", "): a callable object whose call returns "" the first time, then sep.
// Its attributes sep and used are Jinja2's; the call updates `used` in place.
Value joiner(CallArgs args) {
  const std::string init = "Joiner.__init__()";
  for (const auto& [key, value] : args.keyword)
    if (key != "sep") throw ValueError(init + " got an unexpected keyword argument '" + key + "'");
  if (args.positional.size() > 1)
    throw ValueError(init + " takes from 1 to 2 positional arguments but " + std::to_string(args.positional.size() + 1) +
                     " were given");
  if (!args.positional.empty() && !args.keyword.empty()) throw ValueError(init + " got multiple values for argument 'sep'");
  Value sep = !args.positional.empty() ? args.positional[0] : !args.keyword.empty() ? args.keyword[0].second : Value(", ");
  auto attributes = std::make_shared<Dict>();
  attributes->set(Value("sep"), std::move(sep));
  attributes->set(Value("used"), Value(false));
  // Holds the attributes, which do not hold it back: no cycle.
  auto call = std::make_shared<FunctionCallable>("joiner", [attributes](CallArgs call_args) {
    expect_no_arguments(call_args, "Joiner.__call__()");
    if (!attributes->find("used")->as_bool()) {
      attributes->set(Value("used"), Value(true));
      return Value("");
    }
    return *attributes->find("sep");
  });
  return Value::object(attributes, "jinja2.utils.Joiner", std::move(call));
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
      {"cycler", Value::callable(std::make_shared<FunctionCallable>("cycler", cycler))},
      {"joiner", Value::callable(std::make_shared<FunctionCallable>("joiner", joiner))},
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

bool is_cycler(const Value& value) { return value.is_object() && value.type_name() == "Cycler"; }

Value cycler_method(const Value& cycler, const std::string& name, const CallArgs& args) {
  expect_no_arguments(args, "Cycler." + name + "()");
  Dict& attributes = cycler.object_attributes();
  const List& items = attributes.find("items")->as_list();
  const int64_t pos = attributes.find("pos")->as_int();
  Value returned = name == "next" ? items[static_cast<size_t>(pos)] : Value::none();  // reset() returns None
  const int64_t next_pos = name == "next" ? (pos + 1) % static_cast<int64_t>(items.size()) : 0;
  attributes.set(Value("pos"), Value(next_pos));
  attributes.set(Value("current"), items[static_cast<size_t>(next_pos)]);
  return returned;
}

}  // namespace dspark::jinja
