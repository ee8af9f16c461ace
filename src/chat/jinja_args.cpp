// ArgBinder: Python-style binding of call arguments for builtins (filters, tests, methods,
// globals).
#include <algorithm>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"

namespace dspark::jinja {

ArgBinder::ArgBinder(const CallArgs& args, std::initializer_list<const char*> names, std::string_view function)
    : bound_(names.size(), nullptr), names_(names.begin(), names.end()), function_(function) {
  if (args.positional.size() > names_.size())
    throw ValueError(function_ + "() takes at most " + std::to_string(names_.size()) + " arguments (" +
                     std::to_string(args.positional.size()) + " given)");
  for (size_t i = 0; i < args.positional.size(); ++i) bound_[i] = &args.positional[i];
  for (const auto& [name, value] : args.keyword) {
    auto it = std::find(names_.begin(), names_.end(), name);
    if (it == names_.end()) throw ValueError(function_ + "() got an unexpected keyword argument '" + name + "'");
    size_t index = static_cast<size_t>(it - names_.begin());
    if (bound_[index]) throw ValueError(function_ + "() got multiple values for argument '" + name + "'");
    bound_[index] = &value;
  }
}

const Value& ArgBinder::required(size_t index) const {
  if (!bound_[index]) throw ValueError(function_ + "() missing required argument '" + names_[index] + "'");
  return *bound_[index];
}

}  // namespace dspark::jinja
