#include "chat/jinja_template.h"

#include "chat/jinja_lexer.h"
#include "chat/jinja_parser.h"

namespace dspark::jinja {

Template Template::parse(std::string_view source, std::string name, RenderLimits limits) {
  auto body = std::make_shared<const Body>(parse_template(tokenize(source, name), name));
  return Template(std::move(name), std::move(body), limits);
}

std::string Template::render(const Value& context) const { return render_body(*body_, context, name_, limits_); }

std::string Template::render(const nlohmann::ordered_json& context) const { return render(Value::from_json(context)); }

}  // namespace dspark::jinja
