// Global functions every template sees (unless the context defines the same name):
// Jinja's range (capped like the sandbox's MAX_RANGE), namespace, dict, cycler(*items)
// (.next(), .reset(), .current, .items, .pos) and joiner(sep=", ") (a callable object:
// "" on its first call, then sep), and Hugging Face's raise_exception(message) (throws
// TemplateRaisedError with exactly that message) and strftime_now(format) (the local time,
// formatted by strftime).
#pragma once

#include <string>
#include <string_view>

#include "chat/jinja_value.h"

namespace dspark::jinja {

// Undefined when there is no global of that name.
Value find_global(std::string_view name);

// The methods of a cycler object, next() and reset(), called as receiver.name(args)
// (jinja_methods.cpp dispatches here).
bool is_cycler(const Value& value);
Value cycler_method(const Value& cycler, const std::string& name, const CallArgs& args);

}  // namespace dspark::jinja
