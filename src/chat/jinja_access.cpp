#include "chat/jinja_access.h"

#include <algorithm>
#include <optional>

#include "chat/jinja_error.h"
#include "chat/jinja_unicode.h"

namespace dspark::jinja {
namespace {

// receiver.name as a value: calling it calls the method.
class BoundMethod final : public Callable {
 public:
  BoundMethod(Value receiver, std::string name) : receiver_(std::move(receiver)), name_(std::move(name)) {}
  Value call(CallArgs args) const override { return call_method(receiver_, name_, args); }
  std::string name() const override { return receiver_.type_name() + "." + name_; }

 private:
  Value receiver_;
  std::string name_;
};

Value missing_attribute(const Value& object, const std::string& name) {
  std::string message = "'";  // appended piecewise: GCC 12 misreports "x" + string (-Wrestrict)
  message.append(object.object_description()).append("' has no attribute '").append(name).append("'");
  return Value::undefined(std::move(message));
}

Value missing_element(const Value& object, const Value& key) {
  return Value::undefined(object.object_description() + " has no element " + key.repr());
}

// Python attribute lookup only (object attributes, methods); false when there is none.
bool python_attribute(const Value& object, const std::string& name, Value& out) {
  if (object.is_object()) {
    if (const Value* found = object.as_dict().find(name)) {
      out = *found;
      return true;
    }
  }
  if (is_safe_method(object, name)) {
    out = Value::callable(std::make_shared<BoundMethod>(object, name));
    return true;
  }
  if (is_unsafe_method(object, name)) {
    out = Value::undefined("access to attribute '" + name + "' of '" + object.type_name() + "' object is unsafe.");
    return true;
  }
  return false;
}

// Python index normalisation: negative counts from the end; false when out of range.
bool normalize_index(int64_t& index, int64_t size) {
  if (index < 0) index += size;
  return index >= 0 && index < size;
}

}  // namespace

Value get_attribute(const Value& object, const std::string& name) {
  if (object.is_undefined()) throw ValueError(object.undefined_message());
  Value out;
  if (python_attribute(object, name, out)) return out;
  if (object.is_dict()) {
    const Value* found = object.as_dict().find(name);
    if (found) return *found;
  }
  return missing_attribute(object, name);
}

Value get_item(const Value& object, const Value& key) {
  if (object.is_undefined()) throw ValueError(object.undefined_message());
  if (object.is_dict()) {
    const Value* found = object.as_dict().find(key);
    if (found) return *found;
  } else if ((object.is_list() || object.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t index = key.as_int();
    if (object.is_list()) {
      const List& items = object.as_list();
      if (normalize_index(index, static_cast<int64_t>(items.size()))) return items[static_cast<size_t>(index)];
    } else {
      std::vector<size_t> offsets = code_point_offsets(object.as_string());
      if (normalize_index(index, static_cast<int64_t>(offsets.size()) - 1)) {
        size_t i = static_cast<size_t>(index);
        return Value(object.as_string().substr(offsets[i], offsets[i + 1] - offsets[i]));
      }
    }
    return missing_element(object, key);
  }
  if (key.is_string()) {  // fall back to the attribute: d['items'] is the method
    Value out;
    if (python_attribute(object, key.as_string(), out)) return out;
    return missing_attribute(object, key.as_string());
  }
  return missing_element(object, key);
}

Value get_slice(const Value& object, const Value& start_v, const Value& stop_v, const Value& step_v) {
  if (object.is_undefined()) throw ValueError(object.undefined_message());
  auto bound = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_none() || v.is_undefined()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) throw ValueError(std::string("slice ") + what + " must be an integer or None");
    return v.as_int();
  };
  std::optional<int64_t> start = bound(start_v, "indices"), stop = bound(stop_v, "indices"), step_o = bound(step_v, "indices");
  int64_t step = step_o.value_or(1);
  if (step == 0) throw ValueError("slice step cannot be zero");

  std::vector<size_t> offsets;
  int64_t size = 0;
  if (object.is_list()) {
    size = static_cast<int64_t>(object.as_list().size());
  } else if (object.is_string()) {
    offsets = code_point_offsets(object.as_string());
    size = static_cast<int64_t>(offsets.size()) - 1;
  } else {
    throw ValueError("'" + object.type_name() + "' object is not subscriptable");
  }
  // Python's PySlice_AdjustIndices.
  auto adjust = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t i = *v;
    if (i < 0) {
      i += size;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= size) {
      i = step < 0 ? size - 1 : size;
    }
    return i;
  };
  int64_t first = adjust(start, step < 0 ? size - 1 : 0);
  int64_t last = adjust(stop, step < 0 ? -1 : size);
  std::vector<int64_t> picked;
  for (int64_t i = first; step > 0 ? i < last : i > last; i += step) picked.push_back(i);

  if (object.is_list()) {
    List items;
    items.reserve(picked.size());
    for (int64_t i : picked) items.push_back(object.as_list()[static_cast<size_t>(i)]);
    return Value::list(std::move(items), object.is_tuple());
  }
  std::string text;
  const std::string& source = object.as_string();
  for (int64_t i : picked) {
    size_t k = static_cast<size_t>(i);
    text.append(source, offsets[k], offsets[k + 1] - offsets[k]);
  }
  return Value(std::move(text));
}

Value call_value(const Value& callee, CallArgs args) {
  if (callee.is_undefined()) throw ValueError(callee.undefined_message());
  if (!callee.is_callable()) throw ValueError("'" + callee.type_name() + "' object is not callable");
  return callee.as_callable().call(std::move(args));
}

}  // namespace dspark::jinja
