// ToolCallStream: the tool calls of a STREAMED chat reply, parsed as the reply's text
// arrives and sent as OpenAI's streaming deltas (vLLM's streaming tool parsers do the
// same). The formats are tool_calls.h's; this is the incremental form of parse_tool_calls.
//
// Fed the reply's text pieces, it returns deltas (each one chunk's "delta" object):
//   {"content": "..."}                  text that is not (and can no longer become) a call;
//   {"tool_calls": [{"index": i, "id": "call_...", "type": "function",
//                    "function": {"name": "...", "arguments": ""}}]}
//                                       a call begins, as soon as its name is known;
//   {"tool_calls": [{"index": i, "function": {"arguments": "..."}}]}
//                                       the next piece of its arguments' JSON text, sent
//                                       as it arrives (an object or list incrementally;
//                                       a string, number or literal once whole; "{}" at
//                                       the call's end when it has none).
// Text that might still be the start of a call is held back: a trailing prefix of
// <tool_call> and the whitespace before it (Hermes), the whole reply while it can be the
// beginning of the call JSON (Llama 3, Mistral). If it proves not to be a call it comes
// out as content, exactly as written.
//
// Agreement with parse_tool_calls on the same full text, however it is split: when that
// parse finds calls, the stream sends the same content and the same calls (names in
// order, concatenated arguments equal as JSON); when the stream sends no call, that parse
// finds none and the stream's content is the whole text. They differ only where a call
// goes wrong after the stream has sent its beginning (a reply cut inside a call, text
// after a Llama 3 call, a later Hermes call that does not parse): the whole parse then
// calls the reply plain content, but a stream cannot take back what it sent, so the calls
// begun stay, and the rest of the reply from where parsing stopped comes as content.
// (Nor do they agree on a duplicated key inside a call: the stream keeps the first.)
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/tool_calls.h"
#include "structured/json_matcher.h"

namespace dspark {

class ToolCallStream {
 public:
  // format != kNone. make_id gives each call its id. kForcedFunction: the reply is the
  // arguments of one call to forced_function, sent piece by piece after the call's header.
  ToolCallStream(ToolCallFormat format, std::function<std::string()> make_id, std::string forced_function = {});

  // The next piece of the reply: the deltas it completes, in order (often none).
  std::vector<nlohmann::json> feed(std::string_view text);
  // The reply is over: what was held back and turned out not to be a call.
  std::vector<nlohmann::json> finish();
  // At least one call was begun: the choice finishes with "tool_calls".
  bool has_calls() const { return num_calls_ > 0; }

 private:
  enum class Phase {
    kText,        // Hermes: content, looking for <tool_call>
    kLead,        // Llama 3 / Mistral: whitespace before the call, or the marker's start
    kBracket,     // Mistral: after a leading '[': the marker's 'T', or the list
    kMarker,      // inside <|python_tag|> / [TOOL_CALLS] (match_ bytes read)
    kAfterMarker, // whitespace, then '{' (Llama 3) or '[' (Mistral)
    kCallOpen,    // Hermes after <tool_call>, Mistral after '[' or ',': whitespace, then '{'
    kCall,        // inside a call's JSON object
    kCloseTag,    // Hermes: whitespace, then </tool_call> (match_ bytes read)
    kBetween,     // Hermes: after </tool_call>: text dropped (as parse_tool_calls does)
    kListNext,    // Mistral: after an element: ',' or ']'
    kTrail,       // after the last call: whitespace only
    kPlain,       // everything from here on is content
  };
  // What the value being read at the call object's top level is, by its key.
  enum class Role { kName, kArguments, kHeldArguments, kOther };
  enum class Slot { kKey, kInKey, kColon, kValue, kInValue, kAfterValue };
  enum class Kind { kContainer, kString, kScalar };

  struct Call {
    JsonMatcher json;                           // validates the object byte by byte
    bool in_string = false, escaped = false;    // string bounds (json checks the rest)
    Slot slot = Slot::kKey;
    std::string key;                            // the decoded key whose value is read
    std::string token;                          // raw text of the key or value being read
    Role role = Role::kOther;
    Kind kind = Kind::kScalar;
    std::optional<std::string> name;
    bool headed = false;                        // its first delta was sent
    bool has_arguments = false;                 // the streamed arguments key was read
    std::string pending_arguments;              // read before the name: sent after the header
    std::optional<std::string> held_arguments;  // Llama 3 "arguments" ("parameters" wins)
  };

  void feed_forced(std::string_view text);
  bool step(char c);  // one byte in a call-related phase; false: the text is no call
  bool start_call();  // at '{'
  bool call_byte(char c);
  bool end_value();
  bool end_object();
  void fail(std::string_view rest);
  void release_text();  // Hermes: send the content that can no longer start a call
  void emit_content(std::string_view text);
  void emit_arguments(std::string_view text);
  void emit_header();

  ToolCallFormat format_;
  std::function<std::string()> make_id_;
  std::string forced_function_;
  Phase phase_;
  std::string_view marker_;  // the marker being matched in kMarker / kCloseTag
  size_t match_ = 0;
  std::string pending_;      // kText: content not yet sent
  std::string raw_;          // text read since the last call header that was not sent
  Call call_;
  int64_t num_calls_ = 0;
  std::vector<nlohmann::json> out_;
};

}  // namespace dspark
