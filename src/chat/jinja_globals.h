// Global functions every template sees (unless the context defines the same name):
// Jinja's range (capped like the sandbox's MAX_RANGE), namespace and dict, and Hugging
// Face's raise_exception(message) (throws TemplateRaisedError with exactly that message)
// and strftime_now(format) (the local time, formatted by strftime).
#pragma once

#include <string_view>

#include "chat/jinja_value.h"

namespace dspark::jinja {

// Undefined when there is no global of that name.
Value find_global(std::string_view name);

}  // namespace dspark::jinja
