// Methods of str, dict and list that templates call: s.strip(), d.items(), l.index(x);
// and those of a cycler (jinja_globals.cpp).
// Case mapping covers the scripts jinja_unicode.h lists.
#include <algorithm>
#include <array>

#include "chat/jinja_access.h"
#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_globals.h"
#include "chat/jinja_unicode.h"

namespace dspark::jinja {
namespace {

constexpr std::array kStringMethods = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith",
    "upper", "lower", "title", "capitalize", "swapcase", "replace", "find", "rfind", "index",
    "rindex", "count", "join", "isdigit", "isalpha", "isalnum", "isspace", "isupper",
    "islower", "format"};
constexpr std::array kDictMethods = {"items", "keys", "values", "get", "copy"};
constexpr std::array kListMethods = {"index", "count", "copy"};
constexpr std::array kUnsafeDictMethods = {"clear", "pop", "popitem", "setdefault", "update"};
constexpr std::array kUnsafeListMethods = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};

template <size_t N>
bool contains(const std::array<const char*, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

const std::string& string_arg(const Value& v, std::string_view method) {
  if (!v.is_string()) throw ValueError(std::string(method) + "() argument must be str, not " + v.type_name());
  return v.as_string();
}

// Python str.split / str.rsplit.
List split(const std::string& s, const Value* sep, int64_t maxsplit, bool from_right) {
  std::vector<std::string> parts;
  if (!sep || sep->is_none()) {  // runs of whitespace, no empty parts
    std::vector<std::pair<size_t, size_t>> words;  // [begin, end) byte ranges
    size_t pos = 0, size = 0, begin = std::string::npos;
    for (; pos < s.size(); pos += size) {
      bool space = is_python_space(decode_utf8(s, pos, size));
      if (!space && begin == std::string::npos) begin = pos;
      if (space && begin != std::string::npos) {
        words.emplace_back(begin, pos);
        begin = std::string::npos;
      }
    }
    if (begin != std::string::npos) words.emplace_back(begin, s.size());
    if (maxsplit < 0 || static_cast<size_t>(maxsplit) >= words.size()) {
      for (auto [b, e] : words) parts.push_back(s.substr(b, e - b));
    } else if (!from_right) {
      for (size_t i = 0; i < static_cast<size_t>(maxsplit); ++i) parts.push_back(s.substr(words[i].first, words[i].second - words[i].first));
      parts.push_back(s.substr(words[static_cast<size_t>(maxsplit)].first));  // keeps trailing space
    } else {
      size_t keep = words.size() - static_cast<size_t>(maxsplit);
      parts.push_back(s.substr(0, words[keep - 1].second));  // keeps leading space
      for (size_t i = keep; i < words.size(); ++i) parts.push_back(s.substr(words[i].first, words[i].second - words[i].first));
    }
  } else {
    const std::string& separator = string_arg(*sep, "split");
    if (separator.empty()) throw ValueError("empty separator");
    std::vector<size_t> hits;
    for (size_t p = s.find(separator); p != std::string::npos; p = s.find(separator, p + separator.size())) hits.push_back(p);
    if (maxsplit >= 0 && hits.size() > static_cast<size_t>(maxsplit)) {
      if (from_right) hits.erase(hits.begin(), hits.end() - maxsplit);
      else hits.resize(static_cast<size_t>(maxsplit));
    }
    size_t begin = 0;
    for (size_t hit : hits) {
      parts.push_back(s.substr(begin, hit - begin));
      begin = hit + separator.size();
    }
    parts.push_back(s.substr(begin));
  }
  List out;
  for (auto& part : parts) out.emplace_back(std::move(part));
  return out;
}

std::string replace(const std::string& s, const std::string& old, const std::string& replacement, int64_t count) {
  std::string out;
  int64_t done = 0;
  if (old.empty()) {  // Python inserts the replacement around every code point
    std::vector<size_t> offsets = code_point_offsets(s);
    for (size_t i = 0; i + 1 < offsets.size(); ++i) {
      if (count < 0 || done < count) { out += replacement; ++done; }
      out.append(s, offsets[i], offsets[i + 1] - offsets[i]);
    }
    if (count < 0 || done < count) out += replacement;
    return out;
  }
  size_t begin = 0;
  for (size_t p = s.find(old); p != std::string::npos && (count < 0 || done < count); p = s.find(old, begin)) {
    out.append(s, begin, p - begin);
    out += replacement;
    begin = p + old.size();
    ++done;
  }
  out.append(s, begin, std::string::npos);
  return out;
}

bool matches_affix(const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const Value& v) {
    const std::string& a = string_arg(v, prefix ? "startswith" : "endswith");
    if (a.size() > s.size()) return false;
    return prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
  };
  if (affix.is_list()) {
    for (const Value& v : affix.as_list()) if (one(v)) return true;
    return false;
  }
  return one(affix);
}

// Code point index of a byte offset (find() reports code point positions).
int64_t code_point_index(const std::string& s, size_t byte_offset) {
  return code_point_count(std::string_view(s).substr(0, byte_offset));
}

template <typename Pred>
bool all_chars(const std::string& s, Pred pred) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return pred(static_cast<unsigned char>(c)); });
}

// str.format with automatic ({}), positional ({0}) and named ({name}) fields; format
// specs are not supported.
std::string python_format(const std::string& s, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if ((c == '{' || c == '}') && i + 1 < s.size() && s[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    size_t close = s.find('}', i);
    if (close == std::string::npos) throw ValueError("Single '{' encountered in format string");
    std::string field = s.substr(i + 1, close - i - 1);
    if (field.find(':') != std::string::npos || field.find('!') != std::string::npos)
      throw ValueError("format specs are not supported in str.format");
    const Value* value = nullptr;
    if (field.empty() || std::isdigit(static_cast<unsigned char>(field[0]))) {
      size_t index = field.empty() ? auto_index++ : std::stoul(field);
      if (index >= args.positional.size()) throw ValueError("Replacement index " + std::to_string(index) + " out of range for positional args tuple");
      value = &args.positional[index];
    } else {
      for (const auto& [name, v] : args.keyword) if (name == field) value = &v;
      if (!value) throw ValueError("'" + field + "'");
    }
    out += value->str();
    i = close;
  }
  return out;
}

Value string_method(const std::string& s, const std::string& name, const CallArgs& args) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ArgBinder a(args, {"chars"}, name);
    const Value* chars = a.get(0);
    const std::string* set = chars && !chars->is_none() ? &string_arg(*chars, name) : nullptr;
    return Value(python_strip(s, set, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    ArgBinder a(args, {"sep", "maxsplit"}, name);
    return Value::list(split(s, a.get(0), a.get_or(1, Value(-1)).as_int(), name == "rsplit"));
  }
  if (name == "splitlines") {
    ArgBinder a(args, {"keepends"}, name);
    bool keep = a.get_or(0, Value(false)).truthy();
    List lines;
    size_t begin = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\n' && s[i] != '\r') continue;
      size_t end = (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ? i + 2 : i + 1;
      lines.emplace_back(s.substr(begin, (keep ? end : i) - begin));
      begin = end;
      i = end - 1;
    }
    if (begin < s.size()) lines.emplace_back(s.substr(begin));
    return Value::list(std::move(lines));
  }
  if (name == "startswith" || name == "endswith") {
    ArgBinder a(args, {"affix"}, name);
    return Value(matches_affix(s, a.required(0), name == "startswith"));
  }
  if (name == "upper") return Value(python_upper(s));
  if (name == "lower") return Value(python_lower(s));
  if (name == "title") return Value(python_title(s));
  if (name == "capitalize") return Value(python_capitalize(s));
  if (name == "swapcase") return Value(python_swapcase(s));
  if (name == "replace") {
    ArgBinder a(args, {"old", "new", "count"}, name);
    return Value(replace(s, string_arg(a.required(0), name), string_arg(a.required(1), name), a.get_or(2, Value(-1)).as_int()));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    ArgBinder a(args, {"sub"}, name);
    const std::string& sub = string_arg(a.required(0), name);
    size_t at = name[0] == 'r' ? s.rfind(sub) : s.find(sub);
    if (at == std::string::npos) {
      if (name.find("index") != std::string::npos) throw ValueError("substring not found");
      return Value(-1);
    }
    return Value(code_point_index(s, at));
  }
  if (name == "count") {
    ArgBinder a(args, {"sub"}, name);
    const std::string& sub = string_arg(a.required(0), name);
    if (sub.empty()) return Value(code_point_count(s) + 1);
    int64_t n = 0;
    for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
    return Value(n);
  }
  if (name == "join") {
    ArgBinder a(args, {"iterable"}, name);
    std::string out;
    List items = a.required(0).iterate();
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string())
        throw ValueError("sequence item " + std::to_string(i) + ": expected str instance, " + items[i].type_name() + " found");
      if (i) out += s;
      out += items[i].as_string();
    }
    return Value(out);
  }
  if (name == "isdigit") return Value(all_chars(s, [](unsigned char c) { return std::isdigit(c) != 0; }));
  if (name == "isalpha") return Value(all_chars(s, [](unsigned char c) { return std::isalpha(c) != 0; }));
  if (name == "isalnum") return Value(all_chars(s, [](unsigned char c) { return std::isalnum(c) != 0; }));
  if (name == "isspace") return Value(all_chars(s, [](unsigned char c) { return std::isspace(c) != 0; }));
  if (name == "isupper" || name == "islower") return Value(has_case(s, name == "isupper"));
  if (name == "format") return Value(python_format(s, args));
  throw ValueError("'str' object has no attribute '" + name + "'");
}

Value dict_method(const Value& d, const std::string& name, const CallArgs& args) {
  const Dict& dict = d.as_dict();
  if (name == "get") {
    ArgBinder a(args, {"key", "default"}, name);
    const Value* found = dict.find(a.required(0));
    return found ? *found : a.get_or(1, Value::none());
  }
  ArgBinder a(args, {}, name);
  if (name == "copy") return d;  // dicts are never mutated in place
  List out;
  for (const auto& [key, value] : dict.entries()) {
    if (name == "items") out.push_back(Value::list({key, value}, true));
    else if (name == "keys") out.push_back(key);
    else out.push_back(value);
  }
  return Value::list(std::move(out));
}

Value list_method(const Value& l, const std::string& name, const CallArgs& args) {
  if (name == "copy") return l;
  ArgBinder a(args, {"value"}, name);
  const Value& needle = a.required(0);
  const List& items = l.as_list();
  int64_t count = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].equals(needle)) continue;
    if (name == "index") return Value(static_cast<int64_t>(i));
    ++count;
  }
  if (name == "index") throw ValueError(needle.repr() + " is not in list");
  return Value(count);
}

}  // namespace

// str.isupper() / str.islower(): some cased character, and all of them in that case.
bool has_case(const std::string& s, bool upper) {
  bool any_cased = false;
  for (size_t pos = 0, size = 0; pos < s.size(); pos += size) {
    char32_t cp = decode_utf8(s, pos, size);
    if (!is_cased(cp)) continue;
    any_cased = true;
    if (upper ? simple_upper(cp) != cp : (simple_lower(cp) != cp || cp == 0x130)) return false;
  }
  return any_cased;
}

bool is_safe_method(const Value& receiver, std::string_view name) {
  if (receiver.is_string()) return contains(kStringMethods, name);
  if (receiver.is_dict()) return contains(kDictMethods, name);
  if (receiver.is_list()) return contains(kListMethods, name);
  if (is_cycler(receiver)) return name == "next" || name == "reset";
  return false;
}

bool is_unsafe_method(const Value& receiver, std::string_view name) {
  if (receiver.is_dict()) return contains(kUnsafeDictMethods, name);
  if (receiver.is_list() && !receiver.is_tuple()) return contains(kUnsafeListMethods, name);
  return false;
}

Value call_method(const Value& receiver, const std::string& name, const CallArgs& args) {
  if (receiver.is_string()) return string_method(receiver.as_string(), name, args);
  if (receiver.is_dict()) return dict_method(receiver, name, args);
  if (receiver.is_list()) return list_method(receiver, name, args);
  if (is_cycler(receiver)) return cycler_method(receiver, name, args);
  throw ValueError("'" + receiver.type_name() + "' object has no attribute '" + name + "'");
}

}  // namespace dspark::jinja
