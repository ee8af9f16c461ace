// Value: what a Jinja expression evaluates to, modelled on the Python objects Jinja2 sees
// when Hugging Face renders a chat template from JSON data: Undefined, None, bool, int,
// float, str, list/tuple, dict (insertion-ordered), callables (macros, builtin functions,
// bound methods such as "s.strip") and objects (namespace(), loop, cycler(), joiner());
// an object may be callable too (loop(...) of a recursive loop, a joiner).
//
// Copying a Value is cheap: strings, lists, dicts and objects are shared. Lists and dicts
// are never mutated once built (the sandbox is immutable); objects are the mutable values
// (a namespace by {% set ns.x %}, a cycler by its methods), and a mutation is visible
// through every copy, as in Python.
//
// Semantics follow Python: truthiness (empty containers, 0, "" and None are false), ==
// across int/float/bool, ordering, str() and repr() (True/None, float repr, quoted strings
// inside containers). Undefined follows Jinja2's default Undefined: it prints as "", is
// false, iterates as empty, equals only another Undefined, and carries the message that
// using it in any other way raises.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace dspark::jinja {

class Value;
class Dict;
using List = std::vector<Value>;

// Arguments of a call: f(a, b, key=c).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

// Anything that can be called from a template. Macros capture the render that defined
// them; builtins are plain functions.
class Callable {
 public:
  virtual ~Callable() = default;
  virtual Value call(CallArgs args) const = 0;
  virtual std::string name() const = 0;
};

// A Callable from a std::function, for builtins (range, namespace, raise_exception, ...).
class FunctionCallable final : public Callable {
 public:
  using Fn = std::function<Value(CallArgs)>;
  FunctionCallable(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  Value call(CallArgs args) const override;
  std::string name() const override { return name_; }

 private:
  std::string name_;
  Fn fn_;
};

class Value {
 public:
  enum class Kind : uint8_t {
    kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kCallable, kNamespace
  };

  Value() = default;  // Undefined with no hint
  Value(bool b) : kind_(Kind::kBool), int_(b ? 1 : 0) {}  // NOLINT: implicit like Python
  Value(int i) : kind_(Kind::kInt), int_(i) {}            // NOLINT
  Value(int64_t i) : kind_(Kind::kInt), int_(i) {}        // NOLINT
  Value(double f) : kind_(Kind::kFloat), float_(f) {}     // NOLINT
  Value(std::string s);                                   // NOLINT
  Value(const char* s) : Value(std::string(s)) {}         // NOLINT

  // Undefined whose use (attribute, call, arithmetic) raises `message`.
  static Value undefined(std::string message);
  static Value none();
  static Value list(List items, bool is_tuple = false);
  static Value dict(Dict entries);
  static Value callable(std::shared_ptr<const Callable> fn);
  // A mutable attribute bag: namespace(...), the for-loop's `loop`, cycler(...). With
  // `call`, the object can also be called (loop(...), a joiner). The shared_ptr form lets
  // `call` keep the attributes it updates (Python's self).
  static Value object(Dict attributes, std::string type_name, std::shared_ptr<const Callable> call = nullptr);
  static Value object(std::shared_ptr<Dict> attributes, std::string type_name,
                      std::shared_ptr<const Callable> call = nullptr);
  static Value from_json(const nlohmann::ordered_json& json);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }  // list or tuple
  bool is_tuple() const { return kind_ == Kind::kList && is_tuple_; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_callable() const { return callable_ != nullptr; }  // a callable, or a callable object
  bool is_object() const { return kind_ == Kind::kNamespace; }
  bool is_namespace() const;  // an object made by namespace(): the only one {% set x.a %} may change

  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const { return int_; }            // int or bool
  double as_double() const;                          // any number
  const std::string& as_string() const { return *string_; }
  const List& as_list() const { return *list_; }
  const Dict& as_dict() const { return *dict_; }     // dict or object attributes
  Dict& object_attributes() const { return *dict_; }  // object only: mutable
  const Callable& as_callable() const { return *callable_; }  // is_callable() only
  const std::string& undefined_message() const;

  // Python semantics.
  bool truthy() const;
  bool equals(const Value& other) const;             // ==
  int compare(const Value& other) const;             // <0, 0, >0; throws ValueError if unorderable
  std::string str() const;                           // str(x); Undefined -> ""
  std::string repr() const;                          // repr(x)
  std::string type_name() const;                     // "int", "str", "dict", ...
  // Jinja's name for an object in "has no attribute" messages: "dict object", "None", ...
  std::string object_description() const;
  // Items of `for x in value` (dict: its keys, string: its characters); throws if not
  // iterable. Undefined iterates as empty.
  List iterate() const;
  // len(x) for strings (code points), lists and dicts; throws otherwise.
  int64_t length() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool is_tuple_ = false;
  union {
    int64_t int_ = 0;
    double float_;
  };
  std::shared_ptr<const std::string> string_;  // string text, undefined message, object type name
  std::shared_ptr<const List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<const Callable> callable_;  // callable, or the call of a callable object
};

// An insertion-ordered mapping; keys are usually strings. Lookup is linear: chat template
// dicts hold a handful of keys.
class Dict {
 public:
  using Entry = std::pair<Value, Value>;

  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  const Value* find(const std::string& key) const { return find(std::string_view(key)); }
  const Value* find(const char* key) const { return find(std::string_view(key)); }
  void set(Value key, Value value);  // inserts, or replaces keeping the position
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

// Python formatting helpers shared by str(), repr() and tojson.
std::string python_float_repr(double value);       // 1.0, 0.1, 1e+20, inf, nan
std::string python_string_repr(std::string_view text);  // 'it''s' -> "it's"

}  // namespace dspark::jinja
