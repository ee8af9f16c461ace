// Filters: `value | name(args)`, as Jinja2 3.1 defines them (tojson as Hugging Face does).
// Filters that return generators in Jinja (map, select, items, reverse of a list, ...)
// return lists here: templates only iterate them or pipe them into list/join.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "chat/jinja_access.h"
#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_unicode.h"

namespace dspark::jinja {
namespace {

CallArgs no_args() { return {}; }

// Jinja's make_attrgetter: "a.b.0" looks up item-first, digits as integer indexes.
Value lookup_path(const Value& item, const Value& attribute) {
  if (attribute.is_int()) return get_item(item, attribute);
  Value current = item;
  const std::string path = attribute.str();
  size_t begin = 0;
  while (true) {
    size_t dot = path.find('.', begin);
    std::string part = path.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    current = get_item(current, numeric ? Value(static_cast<int64_t>(std::stoll(part))) : Value(part));
    if (dot == std::string::npos) return current;
    begin = dot + 1;
  }
}

// Sort key: strings lowercased unless case-sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.is_string() ? Value(python_lower(v.as_string())) : v;
}

List sorted(List items, bool reverse, bool case_sensitive, const Value* attribute) {
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& v : items) {
    Value key = attribute && !attribute->is_none() ? lookup_path(v, *attribute) : v;
    keyed.emplace_back(sort_key(key, case_sensitive), std::move(v));
  }
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    return reverse ? b.first.compare(a.first) < 0 : a.first.compare(b.first) < 0;
  });
  List out;
  for (auto& [key, v] : keyed) out.push_back(std::move(v));
  return out;
}

// Python's int(str): optional sign, digits (underscores between), surrounding whitespace.
bool parse_python_int(const std::string& text, int64_t base, int64_t& out) {
  std::string s = python_strip(text, nullptr, true, true);
  std::string digits;
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  for (; i < s.size(); ++i) {
    if (s[i] == '_' && !digits.empty() && i + 1 < s.size() && s[i + 1] != '_') continue;
    digits += s[i];
  }
  if (digits.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long value = std::strtoll(digits.c_str(), &end, static_cast<int>(base));
  if (*end != '\0' || errno != 0 || digits[0] == '+' || digits[0] == '-' || digits[0] == ' ') return false;
  out = negative ? -value : value;
  return true;
}

bool parse_python_float(const std::string& text, double& out) {
  std::string s = python_strip(text, nullptr, true, true);
  if (s.empty()) return false;
  std::string lower = python_lower(s);
  if (lower == "inf" || lower == "+inf" || lower == "infinity" || lower == "+infinity") { out = INFINITY; return true; }
  if (lower == "-inf" || lower == "-infinity") { out = -INFINITY; return true; }
  if (lower == "nan" || lower == "+nan" || lower == "-nan") { out = NAN; return true; }
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return *end == '\0' && lower.find('x') == std::string::npos;
}

Value do_int(const Value& v, const CallArgs& args) {
  ArgBinder a(args, {"default", "base"}, "int");
  Value fallback = a.get_or(0, Value(0));
  int64_t base = a.get_or(1, Value(10)).as_int();
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) return std::isfinite(v.as_double()) ? Value(static_cast<int64_t>(v.as_double())) : fallback;
  if (v.is_string()) {
    int64_t parsed = 0;
    if (parse_python_int(v.as_string(), base, parsed)) return Value(parsed);
    double f = 0;
    if (parse_python_float(v.as_string(), f) && std::isfinite(f)) return Value(static_cast<int64_t>(f));
  }
  return fallback;
}

Value do_float(const Value& v, const CallArgs& args) {
  ArgBinder a(args, {"default"}, "float");
  if (v.is_number()) return Value(v.as_double());
  double f = 0;
  if (v.is_string() && parse_python_float(v.as_string(), f)) return Value(f);
  return a.get_or(0, Value(0.0));
}

Value do_round(const Value& v, const CallArgs& args) {
  ArgBinder a(args, {"precision", "method"}, "round");
  int64_t precision = a.get_or(0, Value(0)).as_int();
  std::string method = a.get_or(1, Value("common")).str();
  if (!v.is_number()) throw ValueError("type " + v.type_name() + " doesn't define __round__ method");
  if (method == "common") {
    if (!v.is_float()) return Value(v.as_int());  // round(int, n) stays an int
    if (precision == 0) return Value(std::nearbyint(v.as_double()));  // half to even
    // Python rounds the exact binary value correctly; so does glibc's printf.
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(std::clamp<int64_t>(precision, 0, 300)), v.as_double());
    return Value(std::strtod(buf, nullptr));
  }
  if (method != "ceil" && method != "floor") throw ValueError("method must be common, ceil or floor");
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.as_double() * scale;
  return Value((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value do_tojson(const Value& v, const CallArgs& args) {
  ArgBinder a(args, {"ensure_ascii", "indent", "separators", "sort_keys"}, "tojson");
  JsonOptions options;
  options.ensure_ascii = a.get_or(0, Value(false)).truthy();
  options.indent = a.get_or(1, Value::none());
  if (!options.indent.is_none()) options.item_separator = ",";
  if (const Value* separators = a.get(2); separators && !separators->is_none()) {
    if (!separators->is_list() || separators->as_list().size() != 2) throw ValueError("separators must be a pair");
    options.item_separator = separators->as_list()[0].str();
    options.key_separator = separators->as_list()[1].str();
  }
  options.sort_keys = a.get_or(3, Value(false)).truthy();
  return Value(to_json(v, options));
}

// select / reject / selectattr / rejectattr.
Value select_items(const Value& v, const CallArgs& args, bool with_attribute, bool keep_matching) {
  CallArgs test_args;
  size_t first_test_arg = with_attribute ? 2 : 1;
  const Value* attribute = nullptr;
  if (with_attribute) {
    if (args.positional.empty()) throw ValueError("selectattr/rejectattr need an attribute name");
    attribute = &args.positional[0];
  }
  const Value* test_name = args.positional.size() >= first_test_arg ? &args.positional[first_test_arg - 1] : nullptr;
  for (size_t i = first_test_arg; i < args.positional.size(); ++i) test_args.positional.push_back(args.positional[i]);
  test_args.keyword = args.keyword;
  List out;
  for (const Value& item : v.iterate()) {
    Value subject = attribute ? lookup_path(item, *attribute) : item;
    bool passed = test_name ? apply_test(test_name->str(), subject, test_args) : subject.truthy();
    if (passed == keep_matching) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value do_map(const Value& v, const CallArgs& args) {
  List out;
  const Value* attribute = nullptr;
  const Value* fallback = nullptr;
  for (const auto& [name, value] : args.keyword) {
    if (name == "attribute") attribute = &value;
    else if (name == "default") fallback = &value;
  }
  if (attribute) {
    for (const Value& item : v.iterate()) {
      Value mapped = lookup_path(item, *attribute);
      out.push_back(mapped.is_undefined() && fallback ? *fallback : mapped);
    }
    return Value::list(std::move(out));
  }
  if (args.positional.empty()) throw ValueError("map() needs a filter name or attribute=");
  const std::string filter_name = args.positional[0].str();
  const FilterFn* fn = find_filter(filter_name);
  if (!fn) throw ValueError("No filter named '" + filter_name + "'.");
  CallArgs filter_args;
  filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
  filter_args.keyword = args.keyword;
  for (const Value& item : v.iterate()) out.push_back((*fn)(item, filter_args));
  return Value::list(std::move(out));
}

Value do_items(const Value& v, const CallArgs&) {
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) throw ValueError("Can only get item pairs from a mapping.");
  List out;
  for (const auto& [key, value] : v.as_dict().entries()) out.push_back(Value::list({key, value}, true));
  return Value::list(std::move(out));
}

Value do_dictsort(const Value& v, const CallArgs& args) {
  ArgBinder a(args, {"case_sensitive", "by", "reverse"}, "dictsort");
  if (!v.is_dict()) throw ValueError("dictsort needs a mapping");
  bool case_sensitive = a.get_or(0, Value(false)).truthy();
  std::string by = a.get_or(1, Value("key")).str();
  if (by != "key" && by != "value") throw ValueError("You can only sort by either \"key\" or \"value\"");
  size_t position = by == "key" ? 0 : 1;
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& [key, value] : v.as_dict().entries())
    keyed.emplace_back(sort_key(position == 0 ? key : value, case_sensitive), Value::list({key, value}, true));
  bool reverse = a.get_or(2, Value(false)).truthy();
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? y.first.compare(x.first) < 0 : x.first.compare(y.first) < 0;
  });
  List out;
  for (auto& entry : keyed) out.push_back(std::move(entry.second));
  return Value::list(std::move(out));
}

Value do_unique(const Value& v, const CallArgs& args) {
  ArgBinder a(args, {"case_sensitive", "attribute"}, "unique");
  bool case_sensitive = a.get_or(0, Value(false)).truthy();
  List out, seen;
  for (const Value& item : v.iterate()) {
    Value key = sort_key(a.get(1) && !a.get(1)->is_none() ? lookup_path(item, *a.get(1)) : item, case_sensitive);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return s.equals(key); })) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value do_min_max(const Value& v, const CallArgs& args, bool want_max) {
  ArgBinder a(args, {"case_sensitive", "attribute"}, want_max ? "max" : "min");
  bool case_sensitive = a.get_or(0, Value(false)).truthy();
  const Value* attribute = a.get(1);
  const Value* best = nullptr;
  Value best_key;
  List items = v.iterate();
  for (const Value& item : items) {
    Value key = sort_key(attribute && !attribute->is_none() ? lookup_path(item, *attribute) : item, case_sensitive);
    if (!best || (want_max ? key.compare(best_key) > 0 : key.compare(best_key) < 0)) {
      best = &item;
      best_key = key;
    }
  }
  return best ? *best : Value::undefined("No aggregated item, sequence was empty.");
}

Value do_sum(const Value& v, const CallArgs& args) {
  ArgBinder a(args, {"attribute", "start"}, "sum");
  Value total = a.get_or(1, Value(0));
  for (const Value& item : v.iterate()) {
    Value x = a.get(0) && !a.get(0)->is_none() ? lookup_path(item, *a.get(0)) : item;
    if (!total.is_number() || !x.is_number())
      throw ValueError("unsupported operand type(s) for +: '" + total.type_name() + "' and '" + x.type_name() + "'");
    if (total.is_float() || x.is_float()) total = Value(total.as_double() + x.as_double());
    else total = Value(total.as_int() + x.as_int());
  }
  return total;
}

Value do_join(const Value& v, const CallArgs& args) {
  ArgBinder a(args, {"d", "attribute"}, "join");
  std::string separator = a.get_or(0, Value("")).str();
  std::string out;
  bool first = true;
  for (const Value& item : v.iterate()) {
    if (!first) out += separator;
    first = false;
    out += (a.get(1) && !a.get(1)->is_none() ? lookup_path(item, *a.get(1)) : item).str();
  }
  return Value(out);
}

Value do_reverse(const Value& v, const CallArgs&) {
  if (v.is_string()) {
    std::vector<size_t> offsets = code_point_offsets(v.as_string());
    std::string out;
    for (size_t i = offsets.size() - 1; i > 0; --i) out.append(v.as_string(), offsets[i - 1], offsets[i] - offsets[i - 1]);
    return Value(out);
  }
  List items = v.iterate();
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value do_batch(const Value& v, const CallArgs& args) {
  ArgBinder a(args, {"linecount", "fill_with"}, "batch");
  int64_t size = a.required(0).as_int();
  if (size <= 0) throw ValueError("batch size must be positive");
  List out, current;
  for (const Value& item : v.iterate()) {
    current.push_back(item);
    if (static_cast<int64_t>(current.size()) == size) out.push_back(Value::list(std::exchange(current, {})));
  }
  if (!current.empty()) {
    if (const Value* fill = a.get(1); fill && !fill->is_none())
      while (static_cast<int64_t>(current.size()) < size) current.push_back(*fill);
    out.push_back(Value::list(std::move(current)));
  }
  return Value::list(std::move(out));
}

Value do_indent(const Value& v, const CallArgs& args) {
  ArgBinder a(args, {"width", "first", "blank"}, "indent");
  Value width = a.get_or(0, Value(4));
  std::string pad = width.is_string() ? width.as_string() : std::string(static_cast<size_t>(std::max<int64_t>(0, width.as_int())), ' ');
  bool first = a.get_or(1, Value(false)).truthy(), blank = a.get_or(2, Value(false)).truthy();
  std::string s = v.str(), out;
  size_t begin = 0;
  bool first_line = true;
  while (true) {
    size_t nl = s.find('\n', begin);
    std::string line = s.substr(begin, nl == std::string::npos ? std::string::npos : nl - begin);
    bool indent = first_line ? first : (blank || !line.empty());
    out += (indent ? pad : "") + line;
    if (nl == std::string::npos) break;
    out += '\n';
    begin = nl + 1;
    first_line = false;
  }
  return Value(out);
}

Value first_or_last(const Value& v, bool last) {
  if (v.is_undefined()) return Value::undefined(last ? "No last item, sequence was empty." : "No first item, sequence was empty.");
  List items = v.iterate();
  if (items.empty()) return Value::undefined(last ? "No last item, sequence was empty." : "No first item, sequence was empty.");
  return last ? items.back() : items.front();
}

const std::unordered_map<std::string_view, FilterFn>& filters() {
  static const auto* table = new std::unordered_map<std::string_view, FilterFn>{
      {"trim", [](const Value& v, const CallArgs& args) {
         ArgBinder a(args, {"chars"}, "trim");
         const Value* chars = a.get(0);
         std::string set = chars && !chars->is_none() ? chars->str() : "";
         return Value(python_strip(v.str(), chars && !chars->is_none() ? &set : nullptr, true, true));
       }},
      {"tojson", do_tojson},
      {"length", [](const Value& v, const CallArgs&) { return Value(v.length()); }},
      {"items", do_items},
      {"list", [](const Value& v, const CallArgs&) { return Value::list(v.iterate()); }},
      {"join", do_join},
      {"select", [](const Value& v, const CallArgs& a) { return select_items(v, a, false, true); }},
      {"reject", [](const Value& v, const CallArgs& a) { return select_items(v, a, false, false); }},
      {"selectattr", [](const Value& v, const CallArgs& a) { return select_items(v, a, true, true); }},
      {"rejectattr", [](const Value& v, const CallArgs& a) { return select_items(v, a, true, false); }},
      {"map", do_map},
      {"string", [](const Value& v, const CallArgs&) { return Value(v.str()); }},
      {"upper", [](const Value& v, const CallArgs&) { return Value(python_upper(v.str())); }},
      {"lower", [](const Value& v, const CallArgs&) { return Value(python_lower(v.str())); }},
      {"capitalize", [](const Value& v, const CallArgs&) { return Value(python_capitalize(v.str())); }},
      {"title", [](const Value& v, const CallArgs&) { return Value(jinja_title(v.str())); }},
      {"replace", [](const Value& v, const CallArgs& args) {
         ArgBinder a(args, {"old", "new", "count"}, "replace");
         CallArgs method_args;
         method_args.positional = {Value(a.required(0).str()), Value(a.required(1).str())};
         if (a.get(2) && !a.get(2)->is_none()) method_args.positional.push_back(*a.get(2));
         return call_method(Value(v.str()), "replace", method_args);
       }},
      {"first", [](const Value& v, const CallArgs&) { return first_or_last(v, false); }},
      {"last", [](const Value& v, const CallArgs&) { return first_or_last(v, true); }},
      {"default", [](const Value& v, const CallArgs& args) {
         ArgBinder a(args, {"default_value", "boolean"}, "default");
         bool use_default = v.is_undefined() || (a.get_or(1, Value(false)).truthy() && !v.truthy());
         return use_default ? a.get_or(0, Value("")) : v;
       }},
      {"int", do_int},
      {"float", do_float},
      {"abs", [](const Value& v, const CallArgs&) {
         if (v.is_float()) return Value(std::fabs(v.as_double()));
         if (v.is_int() || v.is_bool()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
         throw ValueError("bad operand type for abs(): '" + v.type_name() + "'");
       }},
      {"round", do_round},
      {"safe", [](const Value& v, const CallArgs&) { return v; }},
      {"escape", [](const Value& v, const CallArgs&) { return Value(html_escape(v.str())); }},
      {"dictsort", do_dictsort},
      {"unique", do_unique},
      {"sum", do_sum},
      {"min", [](const Value& v, const CallArgs& a) { return do_min_max(v, a, false); }},
      {"max", [](const Value& v, const CallArgs& a) { return do_min_max(v, a, true); }},
      {"reverse", do_reverse},
      {"sort", [](const Value& v, const CallArgs& args) {
         ArgBinder a(args, {"reverse", "case_sensitive", "attribute"}, "sort");
         return Value::list(sorted(v.iterate(), a.get_or(0, Value(false)).truthy(), a.get_or(1, Value(false)).truthy(), a.get(2)));
       }},
      {"batch", do_batch},
      {"indent", do_indent},
      {"attr", [](const Value& v, const CallArgs& args) {
         // Python getattr only: a dict's keys are items, not attributes.
         ArgBinder a(args, {"name"}, "attr");
         const std::string name = a.required(0).str();
         if (v.is_dict() && !is_safe_method(v, name) && !is_unsafe_method(v, name))
           return Value::undefined("'dict object' has no attribute '" + name + "'");
         return get_attribute(v, name);
       }},
      {"format", [](const Value& v, const CallArgs& args) {  // "%s, %s"|format(a, b)
         if (!args.positional.empty() && !args.keyword.empty())
           throw ValueError("can't handle positional and keyword arguments at the same time");
         if (!args.keyword.empty()) {
           Dict named;
           for (const auto& [name, value] : args.keyword) named.set(Value(name), value);
           return Value(python_printf(v.str(), Value::dict(std::move(named))));
         }
         return Value(python_printf(v.str(), Value::list(args.positional, true)));
       }},
      {"wordcount", [](const Value& v, const CallArgs&) {
         return Value(static_cast<int64_t>(call_method(Value(v.str()), "split", no_args()).as_list().size()));
       }},
  };
  return *table;
}

std::string_view canonical_filter(std::string_view name) {
  if (name == "count") return "length";
  if (name == "d") return "default";
  if (name == "e" || name == "forceescape") return "escape";
  return name;
}

}  // namespace

const FilterFn* find_filter(std::string_view name) {
  const auto& table = filters();
  auto it = table.find(canonical_filter(name));
  return it == table.end() ? nullptr : &it->second;
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace dspark::jinja
