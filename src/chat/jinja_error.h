// Errors of the Jinja interpreter. All derive from dspark::Error so that callers that only
// care about "the template failed" catch one type; the server distinguishes
// TemplateRaisedError (the template itself rejected the request: HTTP 400 with its message)
// from the others (a broken template: a server-side configuration error).
#pragma once

#include <string>

#include "core/check.h"

namespace dspark::jinja {

class TemplateError : public dspark::Error {
 public:
  using dspark::Error::Error;
};

// The source does not parse (or names an unknown filter/test). Message:
// "{template name}:{line}: {what}".
class TemplateSyntaxError : public TemplateError {
 public:
  using TemplateError::TemplateError;
};

// Rendering failed: a type mismatch, an undefined value used beyond printing/testing, a
// sandbox violation, or a resource limit. Message: "{template name}:{line}: {what}".
class TemplateRuntimeError : public TemplateError {
 public:
  using TemplateError::TemplateError;
};

// The template called raise_exception(message); what() is exactly that message.
class TemplateRaisedError : public TemplateError {
 public:
  using TemplateError::TemplateError;
};

// Thrown by the value model and builtins, which know nothing of template names or lines;
// the interpreter catches it and rethrows a TemplateRuntimeError with the position added.
class ValueError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dspark::jinja
