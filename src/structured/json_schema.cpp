#include "structured/json_schema.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace dspark {

namespace {

using ojson = nlohmann::ordered_json;

// Keywords that do not constrain the value (or are read elsewhere: $defs).
const std::set<std::string, std::less<>> kIgnored = {
    "description", "title",    "default",   "examples",   "$schema",    "$id",  "$comment",
    "$defs",       "definitions", "readOnly", "writeOnly", "deprecated", "discriminator"};
const std::set<std::string, std::less<>> kSupported = {
    "type",  "properties", "required", "additionalProperties", "enum",  "const",    "items",
    "minItems", "maxItems", "anyOf",   "oneOf",    "allOf", "$ref", "nullable", "minLength",
    "maxLength"};

std::string escape_pointer_token(const std::string& key) {
  std::string out;
  for (const char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string_view shown(const std::string& path) { return path.empty() ? std::string_view("/") : path; }

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(ErrorKind::kInvalidRequest, "", fmt::format("json_schema: {} at {}", what, shown(path)));
}

const char* type_name(const ojson& v) {
  switch (v.type()) {
    case ojson::value_t::null: return "null";
    case ojson::value_t::boolean: return "boolean";
    case ojson::value_t::number_integer:
    case ojson::value_t::number_unsigned: return "integer";
    case ojson::value_t::number_float: return "number";
    case ojson::value_t::string: return "string";
    case ojson::value_t::array: return "array";
    case ojson::value_t::object: return "object";
    default: return "value";
  }
}

// Code points of a UTF-8 string (nlohmann has validated it).
uint64_t code_points(const std::string& s) {
  uint64_t n = 0;
  for (const char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

bool is_number_literal(const std::string& text) {
  return !text.empty() && (text[0] == '-' || (text[0] >= '0' && text[0] <= '9'));
}
bool is_integral_literal(const std::string& text) {
  return text.find_first_of(".eE") == std::string::npos;
}

// The type names a schema admits, as bits.
enum TypeBit : uint8_t {
  kTObject = 1, kTArray = 2, kTString = 4, kTInteger = 8, kTNumber = 16, kTBoolean = 32, kTNull = 64,
  kTAll = 127,
};

uint8_t type_bit(const std::string& name) {
  if (name == "object") return kTObject;
  if (name == "array") return kTArray;
  if (name == "string") return kTString;
  if (name == "integer") return kTInteger;
  if (name == "number") return kTNumber;
  if (name == "boolean") return kTBoolean;
  if (name == "null") return kTNull;
  return 0;
}

// Whether a scalar JSON value has one of the type bits (an integral number is an integer).
bool value_has_type(const ojson& v, uint8_t types) {
  if (v.is_string()) return types & kTString;
  if (v.is_boolean()) return types & kTBoolean;
  if (v.is_null()) return types & kTNull;
  if (v.is_number_integer()) return types & (kTInteger | kTNumber);
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return (types & kTNumber) || ((types & kTInteger) && d == static_cast<double>(static_cast<int64_t>(d)));
  }
  return false;
}

class Compiler {
 public:
  explicit Compiler(const ojson& root) : root_(root), out_(std::make_shared<CompiledJsonSchema>()) {
    // Node 0: any JSON value. Objects are maps of any values, arrays of any items.
    SchemaNode any;
    any.kinds = SchemaNode::kObject | SchemaNode::kArray | SchemaNode::kString | SchemaNode::kNumber;
    any.map = true;
    any.additional = CompiledJsonSchema::kAnyNode;
    any.items = CompiledJsonSchema::kAnyNode;
    out_->nodes.push_back(any);
    set_literals(0, {"false", "null", "true"}, "");
  }

  std::shared_ptr<const CompiledJsonSchema> run() {
    out_->root = compile(root_, "", 0);
    compute_depths();
    const SchemaNode& root = out_->nodes[out_->root];
    if (root.min_depth > CompiledJsonSchema::kMaxDepth) {
      fail("", fmt::format("the schema has no value nested at most {} containers deep (a required "
                           "property or item that recurses forever?)", CompiledJsonSchema::kMaxDepth));
    }
    bool number_literal = false;
    for (uint32_t i = root.literals_begin; i < root.literals_end; ++i) {
      number_literal |= is_number_literal(out_->literals[i]);
    }
    if ((root.kinds & (SchemaNode::kInteger | SchemaNode::kNumber)) || number_literal) {
      fail("", "a top-level number is not supported (it has no end before EOS; wrap it in an object)");
    }
    if (out_->nodes.size() > CompiledJsonSchema::kMaxNodes) {
      fail("", fmt::format("the schema compiles to {} nodes, more than {}", out_->nodes.size(),
                           CompiledJsonSchema::kMaxNodes));
    }
    return out_;
  }

 private:
  static constexpr int kMaxLevels = 64;  // schema nesting (not counting $ref) the compiler follows

  int32_t new_node() {
    out_->nodes.emplace_back();
    return static_cast<int32_t>(out_->nodes.size() - 1);
  }

  void set_literals(int32_t node, std::vector<std::string> texts, const std::string& path) {
    std::sort(texts.begin(), texts.end());
    texts.erase(std::unique(texts.begin(), texts.end()), texts.end());
    for (const std::string& t : texts) {
      if (t.size() > 0xFFFF) fail(path, fmt::format("an enum value of {} bytes (at most 65535)", t.size()));
    }
    SchemaNode& n = out_->nodes[node];
    n.literals_begin = static_cast<uint32_t>(out_->literals.size());
    out_->literals.insert(out_->literals.end(), texts.begin(), texts.end());
    n.literals_end = static_cast<uint32_t>(out_->literals.size());
  }

  static void check_siblings(const ojson& s, const char* keyword, const std::string& path) {
    for (const auto& [key, value] : s.items()) {
      if (key != keyword && !kIgnored.contains(key)) {
        fail(path, fmt::format("'{}' beside '{}' is not supported", key, keyword));
      }
    }
  }

  int32_t compile(const ojson& s, const std::string& path, int level) {
    if (level > kMaxLevels) fail(path, fmt::format("a schema nested deeper than {} levels", kMaxLevels));
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail(path, "the schema 'false' (matches nothing) is not supported");
      return CompiledJsonSchema::kAnyNode;
    }
    if (!s.is_object()) fail(path, fmt::format("a schema must be an object or a boolean, got {}", type_name(s)));
    for (const auto& [key, value] : s.items()) {
      if (!kIgnored.contains(key) && !kSupported.contains(key)) {
        fail(path + "/" + escape_pointer_token(key), fmt::format("'{}' is not supported", key));
      }
    }
    if (s.contains("$ref")) {
      check_siblings(s, "$ref", path);
      return resolve_ref(s["$ref"], path + "/$ref", level);
    }
    for (const char* keyword : {"anyOf", "oneOf"}) {
      if (!s.contains(keyword)) continue;
      check_siblings(s, keyword, path);
      const ojson& list = s[keyword];
      const std::string list_path = path + "/" + keyword;
      if (!list.is_array() || list.empty()) fail(list_path, fmt::format("'{}' must be a non-empty array", keyword));
      std::vector<int32_t> alternatives;
      for (size_t i = 0; i < list.size(); ++i) {
        alternatives.push_back(compile(list[i], list_path + "/" + std::to_string(i), level + 1));
      }
      if (alternatives.size() == 1) return alternatives[0];
      return merge(alternatives, list_path);
    }
    if (s.contains("allOf")) {
      check_siblings(s, "allOf", path);
      const ojson& list = s["allOf"];
      if (!list.is_array() || list.size() != 1) {
        fail(path + "/allOf", "'allOf' is supported only with exactly one schema");
      }
      return compile(list[0], path + "/allOf/0", level + 1);
    }
    const int32_t node = new_node();
    compile_into(node, s, path, level);
    return node;
  }

  int32_t resolve_ref(const ojson& ref, const std::string& path, int level) {
    if (!ref.is_string()) fail(path, fmt::format("'$ref' must be a string, got {}", type_name(ref)));
    const std::string text = ref.get<std::string>();
    if (text.empty() || text[0] != '#') fail(path, fmt::format("'$ref' \"{}\": only local refs (\"#...\") are supported", text));
    const std::string pointer = text.substr(1);
    if (const auto it = ref_nodes_.find(pointer); it != ref_nodes_.end()) return it->second;
    const ojson* target = nullptr;
    try {
      target = &root_.at(ojson::json_pointer(pointer));
    } catch (const ojson::exception&) {
      fail(path, fmt::format("'$ref' \"{}\" does not resolve", text));
    }
    // The slot is known before the target is compiled, so that a recursive ref inside a
    // property or item refers to it; its content is the compiled target's, copied after.
    const int32_t slot = new_node();
    ref_nodes_[pointer] = slot;
    in_progress_.insert(slot);
    const int32_t compiled = compile(*target, pointer, level + 1);
    if (in_progress_.contains(compiled)) {
      fail(path, fmt::format("'$ref' \"{}\" refers to itself without an object or array in between", text));
    }
    out_->nodes[slot] = out_->nodes[compiled];
    in_progress_.erase(slot);
    return slot;
  }

  static std::optional<uint32_t> count(const ojson& s, const char* key, const std::string& path) {
    if (!s.contains(key)) return std::nullopt;
    const ojson& v = s[key];
    if (!v.is_number_integer() || (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0)) {
      fail(path + "/" + key, fmt::format("'{}' must be a non-negative integer", key));
    }
    return static_cast<uint32_t>(std::min<uint64_t>(v.get<uint64_t>(), SchemaNode::kUnbounded));
  }

  void compile_into(int32_t node, const ojson& s, const std::string& path, int level) {
    uint8_t types = 0;
    const bool typed = s.contains("type");
    if (typed) {
      const ojson& t = s["type"];
      std::vector<ojson> names;
      if (t.is_string()) names.push_back(t);
      else if (t.is_array() && !t.empty()) names.assign(t.begin(), t.end());
      else fail(path + "/type", "'type' must be a type name or a non-empty array of them");
      for (const ojson& n : names) {
        const uint8_t bit = n.is_string() ? type_bit(n.get<std::string>()) : 0;
        if (bit == 0) fail(path + "/type", fmt::format("unknown type {}", n.dump()));
        types |= bit;
      }
    } else {
      for (const char* k : {"properties", "required", "additionalProperties"}) if (s.contains(k)) types |= kTObject;
      for (const char* k : {"items", "minItems", "maxItems"}) if (s.contains(k)) types |= kTArray;
      for (const char* k : {"minLength", "maxLength"}) if (s.contains(k)) types |= kTString;
      if (types == 0) types = kTAll;
    }
    if (s.contains("nullable")) {
      if (!s["nullable"].is_boolean()) fail(path + "/nullable", "'nullable' must be a boolean");
      if (s["nullable"].get<bool>()) types |= kTNull;
    }

    if (s.contains("enum") || s.contains("const")) {
      if (s.contains("enum") && s.contains("const")) fail(path, "'enum' beside 'const' is not supported");
      const bool is_enum = s.contains("enum");
      const std::string key_path = path + (is_enum ? "/enum" : "/const");
      std::vector<ojson> values;
      if (is_enum) {
        const ojson& e = s["enum"];
        if (!e.is_array() || e.empty()) fail(key_path, "'enum' must be a non-empty array");
        values.assign(e.begin(), e.end());
      } else {
        values.push_back(s["const"]);
      }
      std::vector<std::string> texts;
      for (size_t i = 0; i < values.size(); ++i) {
        const ojson& v = values[i];
        if (v.is_object() || v.is_array()) {
          fail(is_enum ? key_path + "/" + std::to_string(i) : key_path,
               "enum/const values that are objects or arrays are not supported");
        }
        // A value of another type than `type` fails the schema: it is never generated.
        if (typed || s.contains("nullable")) {
          if (!value_has_type(v, types)) continue;
        }
        texts.push_back(v.dump());
      }
      if (texts.empty()) fail(key_path, "no enum/const value has the schema's 'type'");
      set_literals(node, std::move(texts), key_path);
      return;
    }

    SchemaNode n;
    std::vector<std::string> literals;
    if (types & kTBoolean) literals.insert(literals.end(), {"false", "true"});
    if (types & kTNull) literals.push_back("null");
    if (types & kTNumber) n.kinds |= SchemaNode::kNumber;
    else if (types & kTInteger) n.kinds |= SchemaNode::kInteger;
    if (types & kTString) {
      n.kinds |= SchemaNode::kString;
      n.min_length = count(s, "minLength", path).value_or(0);
      n.max_length = count(s, "maxLength", path).value_or(SchemaNode::kUnbounded);
      if (n.min_length > n.max_length) fail(path, "'minLength' is greater than 'maxLength'");
    }
    if (types & kTArray) {
      n.kinds |= SchemaNode::kArray;
      n.items = CompiledJsonSchema::kAnyNode;
      n.min_items = count(s, "minItems", path).value_or(0);
      n.max_items = count(s, "maxItems", path).value_or(SchemaNode::kUnbounded);
      if (n.min_items > n.max_items) fail(path, "'minItems' is greater than 'maxItems'");
      // The matcher counts items in 16 bits (saturating): more would never be reached.
      if (n.min_items > 0xFFFF) fail(path + "/minItems", "'minItems' above 65535 is not supported");
      if (s.contains("items")) {
        const ojson& items = s["items"];
        if (items.is_array()) fail(path + "/items", "'items' as an array (tuple validation) is not supported");
        if (items.is_boolean() && !items.get<bool>()) {
          if (n.min_items > 0) fail(path, "'items' false with 'minItems' above 0 matches nothing");
          n.max_items = 0;
        } else {
          n.items = compile(items, path + "/items", level + 1);
        }
      }
    }
    if (types & kTObject) {
      n.kinds |= SchemaNode::kObject;
      compile_object(n, s, path, level);
    }
    out_->nodes[node] = n;  // after the children: compiling them may grow `nodes`
    set_literals(node, std::move(literals), path);
  }

  void compile_object(SchemaNode& n, const ojson& s, const std::string& path, int level) {
    std::vector<SchemaProperty> props;
    if (s.contains("properties")) {
      const ojson& p = s["properties"];
      if (!p.is_object()) fail(path + "/properties", "'properties' must be an object");
      for (const auto& [key, value] : p.items()) {
        const std::string quoted = ojson(key).dump();
        SchemaProperty prop;
        prop.name = quoted.substr(1, quoted.size() - 2);
        if (prop.name.size() > 0xFFFF) fail(path + "/properties", "a property name of more than 65535 bytes");
        prop.node = compile(value, path + "/properties/" + escape_pointer_token(key), level + 1);
        props.push_back(std::move(prop));
      }
    }
    if (s.contains("required")) {
      const ojson& r = s["required"];
      if (!r.is_array()) fail(path + "/required", "'required' must be an array of strings");
      for (size_t i = 0; i < r.size(); ++i) {
        if (!r[i].is_string()) fail(path + "/required/" + std::to_string(i), "'required' must be an array of strings");
        const std::string quoted = r[i].dump();
        const std::string name = quoted.substr(1, quoted.size() - 2);
        auto it = std::find_if(props.begin(), props.end(), [&](const SchemaProperty& p) { return p.name == name; });
        if (it == props.end()) {
          fail(path + "/required/" + std::to_string(i),
               fmt::format("required property {} is not in 'properties'", quoted));
        }
        it->required = true;
      }
    }
    int32_t additional = CompiledJsonSchema::kAnyNode;
    bool closed = false;
    if (s.contains("additionalProperties")) {
      const ojson& a = s["additionalProperties"];
      if (a.is_boolean()) {
        closed = !a.get<bool>();
      } else if (a.is_object()) {
        additional = compile(a, path + "/additionalProperties", level + 1);
      } else {
        fail(path + "/additionalProperties", "'additionalProperties' must be a boolean or a schema");
      }
    }
    if (props.size() > 0xFFFF) fail(path + "/properties", "more than 65535 properties");
    if (props.empty() && !closed) {
      n.map = true;
      n.additional = additional;
      return;
    }
    n.props_begin = static_cast<uint32_t>(out_->properties.size());
    n.props_end = n.props_begin + static_cast<uint32_t>(props.size());
    uint32_t next = n.props_end;
    for (size_t i = props.size(); i-- > 0;) {
      if (props[i].required) next = n.props_begin + static_cast<uint32_t>(i);
      props[i].next_required = next;
    }
    out_->properties.insert(out_->properties.end(), props.begin(), props.end());
  }

  // anyOf: one node whose alternative is decided by the value's first byte (objects: by
  // their tag, tagged_union).
  int32_t merge(const std::vector<int32_t>& alternatives, const std::string& path) {
    SchemaNode m;
    std::vector<std::string> literals;
    bool has_string = false;
    std::vector<int32_t> objects;
    for (const int32_t index : alternatives) {
      if (in_progress_.contains(index)) {
        fail(path, "an alternative refers back to this 'anyOf' without an object or array in between");
      }
      if (out_->nodes[index].kinds & SchemaNode::kObject) objects.push_back(index);
    }
    if (objects.size() > 1) tagged_union(objects, path, m);
    for (const int32_t index : alternatives) {
      const SchemaNode a = out_->nodes[index];
      if ((a.kinds & SchemaNode::kObject) && objects.size() == 1) {
        m.kinds |= SchemaNode::kObject;
        m.map = a.map;
        m.props_begin = a.props_begin;
        m.props_end = a.props_end;
        m.additional = a.additional;
        m.variants_begin = a.variants_begin;
        m.variants_end = a.variants_end;
      }
      if (a.kinds & SchemaNode::kArray) {
        if (m.kinds & SchemaNode::kArray) {
          fail(path, "more than one array alternative is not supported (alternatives must differ in JSON type)");
        }
        m.kinds |= SchemaNode::kArray;
        m.items = a.items;
        m.min_items = a.min_items;
        m.max_items = a.max_items;
      }
      if (a.kinds & SchemaNode::kString) {
        if (has_string && (a.min_length != m.min_length || a.max_length != m.max_length)) {
          fail(path, "string alternatives with different minLength/maxLength are not supported");
        }
        has_string = true;
        m.kinds |= SchemaNode::kString;
        m.min_length = a.min_length;
        m.max_length = a.max_length;
      }
      m.kinds |= a.kinds & (SchemaNode::kInteger | SchemaNode::kNumber);
      literals.insert(literals.end(), out_->literals.begin() + a.literals_begin,
                      out_->literals.begin() + a.literals_end);
    }
    if (m.kinds & SchemaNode::kNumber) m.kinds &= ~SchemaNode::kInteger;
    // Enum values a typed alternative also produces are left to it (the first byte must
    // choose one path); values it would refuse cannot be told apart from it by that byte.
    std::vector<std::string> kept;
    for (const std::string& text : literals) {
      if (text[0] == '"' && (m.kinds & SchemaNode::kString)) {
        const uint64_t length = code_points(ojson::parse(text).get<std::string>());
        if (length < m.min_length || length > m.max_length) {
          fail(path, fmt::format("enum value {} beside a string alternative whose minLength/maxLength "
                                 "it breaks is not supported", text));
        }
        continue;
      }
      if (is_number_literal(text) && (m.kinds & SchemaNode::kNumber)) continue;
      if (is_number_literal(text) && (m.kinds & SchemaNode::kInteger)) {
        if (!is_integral_literal(text)) {
          fail(path, fmt::format("enum value {} beside an integer alternative is not supported", text));
        }
        continue;
      }
      kept.push_back(text);
    }
    const int32_t node = new_node();
    out_->nodes[node] = m;
    set_literals(node, std::move(kept), path);
    return node;
  }

  // Object alternatives told apart by their first property (the tag), as the object kind
  // of m: its one property is the tag, with every alternative's tag values, and each value
  // selects its alternative (SchemaNode::variants_begin). Anything else is refused: the
  // matcher must know the alternative once the tag's value is read.
  void tagged_union(const std::vector<int32_t>& objects, const std::string& path, SchemaNode& m) {
    auto refuse = [&](const std::string& why) {
      fail(path, fmt::format("several object alternatives are supported only as a tagged union (each declares "
                             "first a required property of the same name whose values are string consts or "
                             "enums, different in each alternative): {}", why));
    };
    const SchemaNode& head = out_->nodes[objects[0]];
    const std::string tag = head.props_begin < head.props_end ? out_->properties[head.props_begin].name : "";
    std::vector<std::pair<std::string, int32_t>> tags;  // (tag value, alternative)
    for (const int32_t index : objects) {
      const SchemaNode& a = out_->nodes[index];
      if (a.map || a.props_begin == a.props_end) refuse("an alternative declares no properties");
      if (a.variants_end > a.variants_begin) refuse("an alternative is itself a tagged union");
      const SchemaProperty& first = out_->properties[a.props_begin];
      if (first.name != tag) refuse(fmt::format("first properties \"{}\" and \"{}\" differ", tag, first.name));
      if (!first.required) refuse(fmt::format("\"{}\" is not required in every alternative", tag));
      const SchemaNode& values = out_->nodes[first.node];
      if (values.kinds != 0) refuse(fmt::format("\"{}\" is not a const or enum in every alternative", tag));
      for (uint32_t i = values.literals_begin; i < values.literals_end; ++i) {
        if (out_->literals[i][0] != '"') refuse(fmt::format("a value of \"{}\" is not a string", tag));
        tags.emplace_back(out_->literals[i], index);
      }
    }
    std::sort(tags.begin(), tags.end());
    for (size_t i = 1; i < tags.size(); ++i) {
      if (tags[i].first == tags[i - 1].first) refuse(fmt::format("the tag value {} is in two alternatives", tags[i].first));
    }
    const int32_t tag_node = new_node();
    std::vector<std::string> texts;
    for (const auto& t : tags) texts.push_back(t.first);
    set_literals(tag_node, std::move(texts), path);  // already sorted: the order of `tags`
    m.kinds |= SchemaNode::kObject;
    m.props_begin = static_cast<uint32_t>(out_->properties.size());
    m.props_end = m.props_begin + 1;
    out_->properties.push_back({tag, tag_node, /*required=*/true, m.props_begin});
    m.variants_begin = static_cast<uint32_t>(out_->variant_nodes.size());
    for (const auto& t : tags) out_->variant_nodes.push_back(t.second);
    m.variants_end = static_cast<uint32_t>(out_->variant_nodes.size());
  }

  // Fixed point from "no value": depths only decrease, each at most to 1 + a child's.
  void compute_depths() {
    auto& nodes = out_->nodes;
    const int32_t inf = SchemaNode::kNoValue;
    for (SchemaNode& n : nodes) n.min_depth = n.object_depth = n.array_depth = inf;
    for (bool changed = true; changed;) {
      changed = false;
      for (SchemaNode& n : nodes) {
        int32_t od = inf, ad = inf;
        if ((n.kinds & SchemaNode::kObject) && n.variants_end > n.variants_begin) {
          // A union may become any of its alternatives: it fits where all of them do.
          od = 0;
          for (uint32_t v = n.variants_begin; v < n.variants_end; ++v) {
            od = std::max(od, nodes[out_->variant_nodes[v]].object_depth);
          }
        } else if (n.kinds & SchemaNode::kObject) {
          int32_t inner = 0;
          if (!n.map) {
            for (uint32_t p = n.props_begin; p < n.props_end; ++p) {
              if (out_->properties[p].required) inner = std::max(inner, nodes[out_->properties[p].node].min_depth);
            }
          }
          od = std::min(inf, 1 + inner);
        }
        if (n.kinds & SchemaNode::kArray) {
          ad = std::min(inf, 1 + (n.min_items > 0 ? nodes[n.items].min_depth : 0));
        }
        const bool scalar = n.literals_end > n.literals_begin ||
                            (n.kinds & (SchemaNode::kString | SchemaNode::kInteger | SchemaNode::kNumber));
        const int32_t md = std::min({scalar ? 0 : inf, od, ad});
        if (od != n.object_depth || ad != n.array_depth || md != n.min_depth) {
          n.object_depth = od;
          n.array_depth = ad;
          n.min_depth = md;
          changed = true;
        }
      }
    }
  }

  const ojson& root_;
  std::shared_ptr<CompiledJsonSchema> out_;
  std::map<std::string, int32_t> ref_nodes_;  // JSON pointer -> node
  std::set<int32_t> in_progress_;             // ref slots whose target is being compiled
};

}  // namespace

std::shared_ptr<const CompiledJsonSchema> compile_json_schema(const nlohmann::ordered_json& schema) {
  return Compiler(schema).run();
}

std::shared_ptr<const CompiledJsonSchema> compile_json_schema_text(std::string_view schema_text) {
  ojson schema;
  try {
    schema = ojson::parse(schema_text);
  } catch (const ojson::exception& e) {
    throw Error(ErrorKind::kInvalidRequest, "", fmt::format("json_schema: not JSON: {}", e.what()));
  }
  return compile_json_schema(schema);
}

}  // namespace dspark
