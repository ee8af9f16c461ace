// vLLM's structured outputs, on both endpoints: the output constrained to a regular
// expression, to one of a list of strings, to a context-free grammar, to a JSON Schema or to
// any JSON object.
//
//   "structured_outputs": {"regex": R} | {"choice": [S, ...]} | {"grammar": G} | {"json": schema}
//                         | {"json_object": true}
//   "guided_regex": R, "guided_choice": [...], "guided_grammar": G, "guided_json": schema
//                                                                   (vLLM's older fields)
//   "grammar": G                                                    (llama.cpp's server)
//
// A schema may be given as an object or as its JSON text. Regexes follow Python's syntax and
// must match the whole output (structured/regex_parser.h says what is supported); a choice
// is the alternation of its strings taken literally; a grammar is GBNF
// (structured/gbnf_parser.h; Lark's notation is refused by the parser, naming where it
// fails). Decoding is constrained (the output is always a prefix of a full match), so
// whatever the model, the output has the shape asked for, and speculation stays lossless
// (structured/grammar_constraint.h).
//
// One constraint per request: two of these, or one beside response_format's JSON types or a
// forced tool_choice, is a 400 naming both. Constraints the engine does not implement are a
// 400 rather than ignored, which would return output of the wrong shape: "structural_tag",
// "whitespace_pattern" / "guided_whitespace_pattern", "disable_any_whitespace": true.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/openai_protocol.h"
#include "structured/json_schema.h"

namespace dspark {

// body: the request; text: its bytes (schemas are read again from them with their key order,
// the order properties are generated in). Sets r.options.response_format and its grammar.
void parse_structured_outputs(const nlohmann::json& body, std::string_view text, ParsedRequest& r);

// The compiled schema; one the compiler refuses is a 400 "'<field>': <why>" with `param`.
std::shared_ptr<const CompiledJsonSchema> compile_request_schema(const nlohmann::ordered_json& schema,
                                                                 const std::string& field, const std::string& param);

}  // namespace dspark
