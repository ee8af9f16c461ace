// Attribute and item access with Jinja2's sandboxed semantics:
//   - obj.name tries a Python attribute first (an object's attributes, the methods of str,
//     dict, list and cycler, bound to obj), then obj["name"]; obj[key] tries the item
//     first, then the attribute.
//   - a missing key, attribute or index gives Undefined (printing it gives ""), so
//     message.tool_calls on a dict without that key is simply undefined; using a value of
//     Undefined any further (undefined.x, undefined[0], undefined()) raises.
//   - methods that mutate a list or dict are unsafe in the immutable sandbox: accessing
//     them gives an Undefined that raises "access to attribute ... is unsafe." when called.
// Errors are thrown as ValueError.
#pragma once

#include <string>
#include <string_view>

#include "chat/jinja_value.h"

namespace dspark::jinja {

Value get_attribute(const Value& object, const std::string& name);
Value get_item(const Value& object, const Value& key);
// object[start:stop:step]; each bound may be None/Undefined (absent).
Value get_slice(const Value& object, const Value& start, const Value& stop, const Value& step);
// Calls a value: callables and callable objects (loop, joiner) run, Undefined raises its
// message, anything else is an error.
Value call_value(const Value& callee, CallArgs args);

// Methods of builtin types, called as receiver.name(args) (jinja_methods.cpp).
bool is_safe_method(const Value& receiver, std::string_view name);
bool is_unsafe_method(const Value& receiver, std::string_view name);
Value call_method(const Value& receiver, const std::string& name, const CallArgs& args);

}  // namespace dspark::jinja
