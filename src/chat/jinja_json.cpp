// to_json: byte-for-byte Python json.dumps(value, ensure_ascii, indent, separators,
// sort_keys), which is what Hugging Face's tojson filter calls. Differences from
// nlohmann's dump matter here: ", " and ": " separators, float repr (1.0, 1e+20),
// non-ASCII kept as is, and Python's indent layout.
#include <algorithm>
#include <cstdio>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_unicode.h"

namespace dspark::jinja {
namespace {

void append_escaped_string(std::string& out, std::string_view text, bool ensure_ascii) {
  out += '"';
  char buf[16];
  for (size_t pos = 0, size = 0; pos < text.size(); pos += size) {
    char32_t cp = decode_utf8(text, pos, size);
    switch (cp) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (cp < 0x20 || (ensure_ascii && cp >= 0x7F)) {
      if (cp >= 0x10000) {  // UTF-16 surrogate pair
        char32_t v = cp - 0x10000;
        std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 | (v >> 10)),
                      static_cast<unsigned>(0xDC00 | (v & 0x3FF)));
      } else {
        std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
      }
      out += buf;
    } else {
      out.append(text.substr(pos, size));
    }
  }
  out += '"';
}

std::string json_float(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return python_float_repr(value);
}

class JsonWriter {
 public:
  explicit JsonWriter(const JsonOptions& options) : options_(options) {
    if (options.indent.is_none() || options.indent.is_undefined()) return;
    indented_ = true;
    if (options.indent.is_string()) indent_unit_ = options.indent.as_string();
    else if (options.indent.is_int()) indent_unit_ = std::string(static_cast<size_t>(std::max<int64_t>(0, options.indent.as_int())), ' ');
    else throw ValueError("indent must be an int or a string");
  }

  void write(const Value& value, int depth) {
    if (depth > 512) throw ValueError("maximum recursion depth exceeded while encoding a JSON object");
    switch (value.kind()) {
      case Value::Kind::kNone: out_ += "null"; return;
      case Value::Kind::kBool: out_ += value.as_bool() ? "true" : "false"; return;
      case Value::Kind::kInt: out_ += std::to_string(value.as_int()); return;
      case Value::Kind::kFloat: out_ += json_float(value.as_double()); return;
      case Value::Kind::kString: append_escaped_string(out_, value.as_string(), options_.ensure_ascii); return;
      case Value::Kind::kList: write_list(value.as_list(), depth); return;
      case Value::Kind::kDict: write_dict(value.as_dict(), depth); return;
      default: throw ValueError("Object of type " + value.type_name() + " is not JSON serializable");
    }
  }

  std::string take() { return std::move(out_); }

 private:
  void newline(int depth) {
    if (!indented_) return;
    out_ += '\n';
    for (int i = 0; i < depth; ++i) out_ += indent_unit_;
  }

  void write_list(const List& items, int depth) {
    if (items.empty()) {
      out_ += "[]";
      return;
    }
    out_ += '[';
    newline(depth + 1);
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) {
        out_ += item_separator();
        newline(depth + 1);
      }
      write(items[i], depth + 1);
    }
    newline(depth);
    out_ += ']';
  }

  static std::string key_text(const Value& key) {
    switch (key.kind()) {
      case Value::Kind::kString: return key.as_string();
      case Value::Kind::kNone: return "null";
      case Value::Kind::kBool: return key.as_bool() ? "true" : "false";
      case Value::Kind::kInt: return std::to_string(key.as_int());
      case Value::Kind::kFloat: return json_float(key.as_double());
      default: throw ValueError("keys must be str, int, float, bool or None, not " + key.type_name());
    }
  }

  void write_dict(const Dict& dict, int depth) {
    if (dict.empty()) {
      out_ += "{}";
      return;
    }
    std::vector<std::pair<std::string, const Value*>> entries;
    for (const auto& [key, value] : dict.entries()) entries.emplace_back(key_text(key), &value);
    if (options_.sort_keys)
      std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    out_ += '{';
    newline(depth + 1);
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i) {
        out_ += item_separator();
        newline(depth + 1);
      }
      append_escaped_string(out_, entries[i].first, options_.ensure_ascii);
      out_ += options_.key_separator;
      write(*entries[i].second, depth + 1);
    }
    newline(depth);
    out_ += '}';
  }

  const std::string& item_separator() const { return options_.item_separator; }

  const JsonOptions& options_;
  bool indented_ = false;
  std::string indent_unit_;
  std::string out_;
};

}  // namespace

std::string to_json(const Value& value, const JsonOptions& options) {
  JsonWriter writer(options);
  writer.write(value, 0);
  return writer.take();
}

}  // namespace dspark::jinja
