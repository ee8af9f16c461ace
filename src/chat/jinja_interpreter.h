// Interpreter: renders a parsed body against a context, with Jinja2's scoping:
//   - the context's variables and top-level {% set %} share the template's root scope;
//   - each for-loop iteration gets a fresh scope (loop variables, `loop`, and any set
//     inside the body), so assignments in a loop do not leak out — templates use
//     namespace() to carry state across iterations;
//   - a macro call sees the root scope plus its own parameters, not its caller's locals;
//   - a {% call %} block's body, which its macro runs as caller(...), sees the variables of
//     the call site (an enclosing loop's included) plus its own parameters;
//   - each level of a recursive loop, run by loop(items), sees the variables around the
//     for statement, not those of the iteration that called it;
//   - if blocks open no scope.
// A caller or a recursive `loop` kept (in a namespace) past the block it belongs to cannot
// be called any more: the scopes it renders among are gone, so that is an error.
// Resource limits turn hostile templates into errors rather than crashes.
#pragma once

#include <cstdint>
#include <string>

#include "chat/jinja_ast.h"

namespace dspark::jinja {

struct RenderLimits {
  int max_call_depth = 256;                    // nested macro, caller() and recursive loop() calls
  int max_eval_depth = 2000;                   // nested statements + expressions, macros included (~1 MB of stack, release build)
  int64_t max_output_bytes = 64 << 20;         // rendered text (also any captured block)
  int64_t max_loop_iterations = 10'000'000;    // for-loop iterations in one render, all loops
};

// `context` must be a dict (or Undefined/None for no variables). Throws
// TemplateRuntimeError("{name}:{line}: ...") or TemplateRaisedError.
std::string render_body(const Body& body, const Value& context, const std::string& template_name,
                        const RenderLimits& limits);

}  // namespace dspark::jinja
