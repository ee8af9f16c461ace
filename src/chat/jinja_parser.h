// Parser: tokens -> AST, with Jinja2's grammar and operator precedence (lowest first):
//   a if c else b  <  or  <  and  <  not  <  comparisons (== != < <= > >= in, not in;
//   chained)  <  + -  <  ~  <  * / // %  <  **  <  unary - +  <  postfix (.x [i] (args))
//   and filters/tests (|f(args), is [not] t(args)).
// Statements: if/elif/else, for (tuple targets, inline if filter, recursive, else, loop
// controls), set (name, ns.attr, tuples, block set with filters), macro, call blocks,
// filter blocks, with, and Hugging Face's {% generation %}. Unknown filters and tests are
// errors at parse time, except inside an if statement or a conditional expression, where
// (as in Jinja2) they only fail if evaluated.
// include, import, from, extends and block are refused at parse time with a message of
// their own: Hugging Face renders chat templates without a template loader, so in Jinja2
// the first four fail as soon as they run (a standalone block is the one that would render
// in place; it is refused too, as it only makes sense with extends).
#pragma once

#include <string>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"

namespace dspark::jinja {

// Throws TemplateSyntaxError("{name}:{line}: {what}").
Body parse_template(std::vector<Token> tokens, const std::string& template_name);

}  // namespace dspark::jinja
