// Python's printf-style string formatting, `format % args` (also Jinja's format filter):
// conversions s r a d i u f F e E g G x X o c and %%, with flags (- + space 0 #), width,
// precision and %(name)s mapping keys. Floats go through C's printf, which formats the
// same digits as Python for these conversions.
#include <algorithm>
#include <cstdio>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_unicode.h"

namespace dspark::jinja {
namespace {

struct Spec {
  std::string flags;
  int width = -1;
  int precision = -1;
  char conversion = 's';
};

std::string pad(std::string text, const Spec& spec) {
  const int64_t length = code_point_count(text);
  if (spec.width <= length) return text;
  const size_t fill = static_cast<size_t>(spec.width - length);
  if (spec.flags.find('-') != std::string::npos) return text + std::string(fill, ' ');
  return std::string(fill, ' ') + text;
}

std::string format_number(const Value& value, const Spec& spec) {
  if (!value.is_number()) {
    const std::string conversion = std::string("%") + spec.conversion;
    if (std::string("diu").find(spec.conversion) != std::string::npos)
      throw ValueError(conversion + " format: a real number is required, not " + value.type_name());
    if (std::string("xXo").find(spec.conversion) != std::string::npos)
      throw ValueError(conversion + " format: an integer is required, not " + value.type_name());
    throw ValueError("must be real number, not " + value.type_name());
  }
  std::string format = "%" + spec.flags;
  if (spec.width >= 0) format += std::to_string(spec.width);
  if (spec.precision >= 0) format.append(".").append(std::to_string(spec.precision));
  char buf[512];
  switch (spec.conversion) {
    case 'd': case 'i': case 'u': {
      double d = value.as_double();
      long long integer = value.is_float() ? static_cast<long long>(d) : static_cast<long long>(value.as_int());
      std::snprintf(buf, sizeof(buf), (format + "lld").c_str(), integer);
      break;
    }
    case 'x': case 'X': case 'o': {
      if (value.is_float()) throw ValueError(std::string("%") + spec.conversion + " format: an integer is required, not float");
      long long integer = static_cast<long long>(value.as_int());
      bool negative = integer < 0;
      std::string digits;
      char tmp[128];
      std::snprintf(tmp, sizeof(tmp), (std::string("%") + (spec.flags.find('#') != std::string::npos ? "#" : "") + "ll" + spec.conversion).c_str(),
                    static_cast<unsigned long long>(negative ? -integer : integer));
      digits = tmp;
      if (spec.conversion == 'o' && spec.flags.find('#') != std::string::npos) digits = "0o" + digits.substr(1);
      if (negative) digits = "-" + digits;
      else if (spec.flags.find('+') != std::string::npos) digits = "+" + digits;
      if (spec.flags.find('0') != std::string::npos && spec.flags.find('-') == std::string::npos && spec.width > static_cast<int>(digits.size())) {
        size_t sign = (digits[0] == '-' || digits[0] == '+') ? 1 : 0;
        digits.insert(sign, static_cast<size_t>(spec.width) - digits.size(), '0');
      }
      return pad(digits, spec);
    }
    default:  // f F e E g G
      std::snprintf(buf, sizeof(buf), (format + spec.conversion).c_str(), value.as_double());
      break;
  }
  return buf;
}

std::string convert(const Value& value, const Spec& spec) {
  switch (spec.conversion) {
    case 's': case 'r': case 'a': {
      std::string text = spec.conversion == 's' ? value.str() : value.repr();
      if (spec.precision >= 0) {
        std::vector<size_t> offsets = code_point_offsets(text);
        if (static_cast<size_t>(spec.precision) + 1 < offsets.size()) text.resize(offsets[static_cast<size_t>(spec.precision)]);
      }
      return pad(text, spec);
    }
    case 'c': {
      std::string text;
      if (value.is_string() && code_point_count(value.as_string()) == 1) text = value.as_string();
      else if (value.is_int()) append_utf8(text, static_cast<char32_t>(value.as_int()));
      else throw ValueError("%c requires int or char");
      return pad(text, spec);
    }
    default: return format_number(value, spec);
  }
}

}  // namespace

std::string python_printf(const std::string& format, const Value& args) {
  // A tuple supplies the arguments in order; a dict serves %(name)s; anything else is the
  // single argument.
  std::vector<Value> positional = args.is_tuple() ? args.as_list() : std::vector<Value>{args};
  size_t next = 0;
  bool used_mapping = false;
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    if (++i >= format.size()) throw ValueError("incomplete format");
    const Value* mapped = nullptr;
    if (format[i] == '(') {
      size_t close = format.find(')', i);
      if (close == std::string::npos) throw ValueError("incomplete format key");
      if (!args.is_dict()) throw ValueError("format requires a mapping");
      mapped = args.as_dict().find(format.substr(i + 1, close - i - 1));
      if (!mapped) throw ValueError("'" + format.substr(i + 1, close - i - 1) + "'");
      used_mapping = true;
      i = close + 1;
    }
    Spec spec;
    while (i < format.size() && std::string("-+ 0#").find(format[i]) != std::string::npos) spec.flags += format[i++];
    auto number = [&](int& field) {
      if (i < format.size() && format[i] == '*') throw ValueError("* width is not supported");
      if (i >= format.size() || format[i] < '0' || format[i] > '9') return;
      field = 0;
      while (i < format.size() && format[i] >= '0' && format[i] <= '9') field = std::min(field * 10 + (format[i++] - '0'), 10000);
    };
    number(spec.width);
    if (i < format.size() && format[i] == '.') {
      ++i;
      spec.precision = 0;
      number(spec.precision);
    }
    while (i < format.size() && (format[i] == 'l' || format[i] == 'h' || format[i] == 'L')) ++i;
    if (i >= format.size()) throw ValueError("incomplete format");
    spec.conversion = format[i];
    if (spec.conversion == '%') {
      out += '%';
      continue;
    }
    if (std::string("sradiufFeEgGxXoc").find(spec.conversion) == std::string::npos)
      throw ValueError(std::string("unsupported format character '") + spec.conversion + "'");
    if (mapped) {
      out += convert(*mapped, spec);
      continue;
    }
    if (next >= positional.size()) throw ValueError("not enough arguments for format string");
    out += convert(positional[next++], spec);
  }
  // A single non-tuple argument that no conversion used is fine if it is a mapping (or a
  // sequence: Python then treats it as a mapping too).
  if (!used_mapping && next < positional.size() && !(positional.size() == 1 && !args.is_tuple() && (args.is_dict() || args.is_list())))
    throw ValueError("not all arguments converted during string formatting");
  return out;
}

}  // namespace dspark::jinja
