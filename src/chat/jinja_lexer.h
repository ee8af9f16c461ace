// Lexer: template source -> tokens, with the whitespace rules of Hugging Face's Jinja
// environment (trim_blocks and lstrip_blocks on):
//   - "{%-", "{{-", "{#-" strip all whitespace before the tag; "-%}", "-}}", "-#}" all
//     whitespace after it.
//   - trim_blocks: the first newline after a block tag "%}" or comment "#}" is removed
//     ("+%}" keeps it).
//   - lstrip_blocks: spaces and tabs from the start of a line up to a block tag or comment
//     are removed ("{%+" keeps them); expression tags "{{" are never lstripped.
//   - line endings are normalised to "\n" and one trailing newline of the template is
//     dropped (keep_trailing_newline=False), as Jinja2 does before lexing.
//   - comments vanish; {% raw %}...{% endraw %} becomes one text token.
// Every token carries the 1-based line it starts on.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dspark::jinja {

enum class TokenType {
  kText,           // literal output text
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,           // identifier or keyword (if, for, and, not, true, ...)
  kString,         // string literal, escapes decoded
  kInteger,
  kFloat,
  kOperator,       // + - * / // % ** ~ ( ) [ ] { } , . : | = == != < <= > >=
  kEof,
};

struct Token {
  TokenType type;
  std::string text;  // text / name / decoded string / number spelling / operator
  int line = 1;
};

// Throws TemplateSyntaxError("{name}:{line}: ...") for unterminated tags or strings and
// characters that cannot start a token.
std::vector<Token> tokenize(std::string_view source, const std::string& template_name);

}  // namespace dspark::jinja
