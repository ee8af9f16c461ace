#include "chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "chat/jinja_error.h"
#include "chat/jinja_unicode.h"

namespace dspark::jinja {

Value FunctionCallable::call(CallArgs args) const { return fn_(std::move(args)); }

Value::Value(std::string s) : kind_(Kind::kString), string_(std::make_shared<const std::string>(std::move(s))) {}

Value Value::undefined(std::string message) {
  Value v;
  v.string_ = std::make_shared<const std::string>(std::move(message));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::list(List items, bool is_tuple) {
  Value v;
  v.kind_ = Kind::kList;
  v.is_tuple_ = is_tuple;
  v.list_ = std::make_shared<const List>(std::move(items));
  return v;
}

Value Value::dict(Dict entries) {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<Dict>(std::move(entries));
  return v;
}

Value Value::callable(std::shared_ptr<const Callable> fn) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.callable_ = std::move(fn);
  return v;
}

Value Value::object(Dict attributes, std::string type_name, std::shared_ptr<const Callable> call) {
  return object(std::make_shared<Dict>(std::move(attributes)), std::move(type_name), std::move(call));
}

Value Value::object(std::shared_ptr<Dict> attributes, std::string type_name, std::shared_ptr<const Callable> call) {
  Value v;
  v.kind_ = Kind::kNamespace;
  v.dict_ = std::move(attributes);
  v.string_ = std::make_shared<const std::string>(std::move(type_name));
  v.callable_ = std::move(call);
  return v;
}

bool Value::is_namespace() const { return kind_ == Kind::kNamespace && *string_ == "jinja2.utils.Namespace"; }

Value Value::from_json(const nlohmann::ordered_json& json) {
  using Type = nlohmann::ordered_json::value_t;
  switch (json.type()) {
    case Type::null: return none();
    case Type::boolean: return Value(json.get<bool>());
    case Type::number_integer: return Value(json.get<int64_t>());
    case Type::number_unsigned: return Value(static_cast<int64_t>(json.get<uint64_t>()));
    case Type::number_float: return Value(json.get<double>());
    case Type::string: return Value(json.get<std::string>());
    case Type::array: {
      List items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(from_json(item));
      return list(std::move(items));
    }
    case Type::object: {
      Dict entries;
      for (const auto& [key, item] : json.items()) entries.set(Value(key), from_json(item));
      return dict(std::move(entries));
    }
    default: return none();  // binary / discarded: not produced by JSON text
  }
}

double Value::as_double() const { return kind_ == Kind::kFloat ? float_ : static_cast<double>(int_); }

const std::string& Value::undefined_message() const {
  static const std::string kGeneric = "value is undefined";
  return string_ ? *string_ : kGeneric;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool:
    case Kind::kInt: return int_ != 0;
    case Kind::kFloat: return float_ != 0.0;
    case Kind::kString: return !string_->empty();
    case Kind::kList: return !list_->empty();
    case Kind::kDict: return !dict_->empty();
    default: return true;
  }
}

bool Value::equals(const Value& other) const {
  if (is_number() && other.is_number()) {
    if (kind_ != Kind::kFloat && other.kind_ != Kind::kFloat) return int_ == other.int_;
    return as_double() == other.as_double();
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return *string_ == *other.string_;
    case Kind::kList: {
      if (is_tuple_ != other.is_tuple_ || list_->size() != other.list_->size()) return false;
      for (size_t i = 0; i < list_->size(); ++i)
        if (!(*list_)[i].equals((*other.list_)[i])) return false;
      return true;
    }
    case Kind::kDict: {  // order does not matter for dict equality
      if (dict_->size() != other.dict_->size()) return false;
      for (const auto& [key, value] : dict_->entries()) {
        const Value* theirs = other.dict_->find(key);
        if (!theirs || !value.equals(*theirs)) return false;
      }
      return true;
    }
    case Kind::kCallable: return callable_ == other.callable_;
    case Kind::kNamespace: return dict_ == other.dict_;
    default: return false;
  }
}

int Value::compare(const Value& other) const {
  if (is_number() && other.is_number()) {
    if (kind_ != Kind::kFloat && other.kind_ != Kind::kFloat) return int_ < other.int_ ? -1 : int_ > other.int_;
    double a = as_double(), b = other.as_double();
    return a < b ? -1 : a > b;
  }
  if (is_string() && other.is_string()) {  // UTF-8 byte order is code point order
    int c = string_->compare(*other.string_);
    return c < 0 ? -1 : c > 0;
  }
  if (is_list() && other.is_list() && is_tuple_ == other.is_tuple_) {
    const List& a = *list_;
    const List& b = *other.list_;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
      if (a[i].equals(b[i])) continue;
      return a[i].compare(b[i]);
    }
    return a.size() < b.size() ? -1 : a.size() > b.size();
  }
  throw ValueError("'<' not supported between instances of '" + type_name() + "' and '" +
                   other.type_name() + "'");
}

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  // Shortest round-trip digits, then Python's layout: fixed notation when the decimal
  // exponent is in [-4, 16), else d.ddde+XX.
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string sci(buf, result.ptr);
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  size_t e_pos = sci.find('e');
  std::string digits = sci.substr(0, e_pos);
  int exponent = std::stoi(sci.substr(e_pos + 1));
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  // Built with append only: GCC 12 misreports "x" + std::string temporaries (-Wrestrict).
  std::string out = negative ? "-" : "";
  const int num_digits = static_cast<int>(digits.size());
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out.append("0.").append(static_cast<size_t>(-exponent - 1), '0').append(digits);
    } else if (exponent + 1 >= num_digits) {
      out.append(digits).append(static_cast<size_t>(exponent + 1 - num_digits), '0').append(".0");
    } else {
      const size_t point = static_cast<size_t>(exponent + 1);
      out.append(digits, 0, point).append(".").append(digits, point, std::string::npos);
    }
    return out;
  }
  out.append(digits, 0, 1);
  if (num_digits > 1) out.append(".").append(digits, 1, std::string::npos);
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out.append(exp_buf);
}

std::string python_string_repr(std::string_view text) {
  bool has_single = text.find('\'') != std::string_view::npos;
  bool has_double = text.find('"') != std::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t pos = 0, size = 0; pos < text.size(); pos += size) {
    char32_t cp = decode_utf8(text, pos, size);
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (!is_python_printable(cp)) {
      char buf[16];
      if (cp < 0x100) std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(cp));
      else if (cp < 0x10000) std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
      else std::snprintf(buf, sizeof(buf), "\\U%08x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(text.substr(pos, size));
    }
  }
  out += quote;
  return out;
}

std::string Value::str() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kString: return *string_;
    default: return repr();
  }
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "None";
    case Kind::kBool: return int_ ? "True" : "False";
    case Kind::kInt: return std::to_string(int_);
    case Kind::kFloat: return python_float_repr(float_);
    case Kind::kString: return python_string_repr(*string_);
    case Kind::kList: {
      std::string out = is_tuple_ ? "(" : "[";
      for (size_t i = 0; i < list_->size(); ++i) {
        if (i) out += ", ";
        out += (*list_)[i].repr();
      }
      if (is_tuple_ && list_->size() == 1) out += ",";
      return out + (is_tuple_ ? ")" : "]");
    }
    case Kind::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, value] : dict_->entries()) {
        if (!first) out += ", ";
        first = false;
        out += key.repr() + ": " + value.repr();
      }
      return out + "}";
    }
    case Kind::kCallable: return "<function " + callable_->name() + ">";
    case Kind::kNamespace: {
      if (type_name() == "LoopContext") {  // Jinja prints a loop as <LoopContext index/length>
        const Value* index = dict_->find("index");
        const Value* length = dict_->find("length");
        if (index && length) return "<LoopContext " + index->repr() + "/" + length->repr() + ">";
      }
      std::string out = "<";  // appended piecewise: GCC 12 misreports "<" + ... (-Wrestrict)
      out += type_name();
      out += ' ';
      out += Value::dict(*dict_).repr();
      out += '>';
      return out;
    }
  }
  return "";
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return is_tuple_ ? "tuple" : "list";
    case Kind::kDict: return "dict";
    case Kind::kCallable: return "function";
    case Kind::kNamespace: return string_->substr(string_->rfind('.') + 1);  // "jinja2.utils.Namespace"
  }
  return "object";
}

std::string Value::object_description() const {
  if (kind_ == Kind::kNone) return "None";
  if (kind_ == Kind::kNamespace) return *string_ + " object";
  return type_name() + " object";
}

List Value::iterate() const {
  switch (kind_) {
    case Kind::kUndefined: return {};
    case Kind::kList: return *list_;
    case Kind::kDict: {
      List keys;
      keys.reserve(dict_->size());
      for (const auto& entry : dict_->entries()) keys.push_back(entry.first);
      return keys;
    }
    case Kind::kString: {
      List chars;
      for (size_t pos = 0, size = 0; pos < string_->size(); pos += size) {
        decode_utf8(*string_, pos, size);
        chars.emplace_back(string_->substr(pos, size));
      }
      return chars;
    }
    default: throw ValueError("'" + type_name() + "' object is not iterable");
  }
}

int64_t Value::length() const {
  switch (kind_) {
    case Kind::kUndefined: return 0;
    case Kind::kString: return code_point_count(*string_);
    case Kind::kList: return static_cast<int64_t>(list_->size());
    case Kind::kDict: return static_cast<int64_t>(dict_->size());
    default: throw ValueError("object of type '" + type_name() + "' has no len()");
  }
}

const Value* Dict::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.as_string()));
  for (const auto& entry : entries_)
    if (entry.first.equals(key)) return &entry.second;
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& entry : entries_)
    if (entry.first.is_string() && entry.first.as_string() == key) return &entry.second;
  return nullptr;
}

void Dict::set(Value key, Value value) {
  for (auto& entry : entries_) {
    if (entry.first.equals(key)) {
      entry.second = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

}  // namespace dspark::jinja
