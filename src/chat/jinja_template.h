// Template: a Jinja2 chat template, parsed once and rendered per request, matching what
// Hugging Face's apply_chat_template produces byte for byte: an immutable sandboxed
// environment with trim_blocks and lstrip_blocks, the loopcontrols extension (break,
// continue), globals raise_exception and strftime_now, and a tojson filter that keeps
// non-ASCII text.
//
//   auto tmpl = jinja::Template::parse(source, "Qwen2.5-7B-Instruct");
//   std::string prompt = tmpl.render(nlohmann::ordered_json{
//       {"messages", messages}, {"add_generation_prompt", true}, {"bos_token", "<s>"}});
//
// Errors (all jinja::TemplateError, a dspark::Error):
//   TemplateSyntaxError   from parse: "{name}:{line}: {what}"
//   TemplateRaisedError   from render: the template called raise_exception(message);
//                         what() is exactly that message (the request is invalid)
//   TemplateRuntimeError  from render: "{name}:{line}: {what}" (the template is broken,
//                         or hit a resource limit)
// A Template is immutable after parse; render may run concurrently from many threads.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "chat/jinja_ast.h"
#include "chat/jinja_error.h"
#include "chat/jinja_interpreter.h"
#include "chat/jinja_value.h"

namespace dspark::jinja {

class Template {
 public:
  static Template parse(std::string_view source, std::string name = "template", RenderLimits limits = {});

  // `context`: a dict of the template's variables.
  std::string render(const Value& context) const;
  std::string render(const nlohmann::ordered_json& context) const;

  const std::string& name() const { return name_; }

 private:
  Template(std::string name, std::shared_ptr<const Body> body, RenderLimits limits)
      : name_(std::move(name)), body_(std::move(body)), limits_(limits) {}

  std::string name_;
  std::shared_ptr<const Body> body_;  // shared: copies of a Template share one AST
  RenderLimits limits_;
};

}  // namespace dspark::jinja
