#include "server/tool_call_stream.h"

#include <utility>

namespace dspark {
namespace {

using nlohmann::json;

constexpr std::string_view kOpenTag = "<tool_call>", kCloseTag = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>", kToolCallsMarker = "[TOOL_CALLS]";

// JSON's whitespace, which is also what parse_tool_calls trims.
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::optional<std::string> decode_string(const std::string& token) {
  const json v = json::parse(token, nullptr, /*allow_exceptions=*/false);
  if (!v.is_string()) return std::nullopt;
  return v.get<std::string>();
}

}  // namespace

ToolCallStream::ToolCallStream(ToolCallFormat format, std::function<std::string()> make_id,
                               std::string forced_function)
    : format_(format), make_id_(std::move(make_id)), forced_function_(std::move(forced_function)),
      phase_(format == ToolCallFormat::kHermes ? Phase::kText
             : format == ToolCallFormat::kNone ? Phase::kPlain
                                               : Phase::kLead) {}

// The forced call's header goes out with the first piece, its arguments as they come.
void ToolCallStream::feed_forced(std::string_view text) {
  if (num_calls_ == 0) {
    call_.name = forced_function_;
    emit_header();
  }
  emit_arguments(text);
}

std::vector<json> ToolCallStream::feed(std::string_view text) {
  out_.clear();
  if (format_ == ToolCallFormat::kForcedFunction) {
    feed_forced(text);
    return std::exchange(out_, {});
  }
  for (size_t i = 0; i < text.size(); ++i) {
    if (phase_ == Phase::kPlain) {
      emit_content(text.substr(i));
      break;
    }
    const char c = text[i];
    if (phase_ == Phase::kText) {
      pending_ += c;
      if (pending_.ends_with(kOpenTag)) {
        // parse_tool_calls' content is the text before the first call without its
        // trailing whitespace; the rest is kept in case this call does not parse.
        size_t cut = pending_.size() - kOpenTag.size();
        while (cut > 0 && is_space(pending_[cut - 1])) --cut;
        emit_content(std::string_view(pending_).substr(0, cut));
        raw_ = pending_.substr(cut);
        pending_.clear();
        phase_ = Phase::kCallOpen;
      }
      continue;
    }
    // A begun call's own bytes are not kept: its arguments went out, and the rest is syntax.
    const bool kept = !(phase_ == Phase::kCall && call_.headed);
    if (kept) raw_ += c;
    if (!step(c)) {
      fail(text.substr(kept ? i + 1 : i));
      break;
    }
  }
  if (phase_ == Phase::kText) release_text();
  return std::exchange(out_, {});
}

std::vector<json> ToolCallStream::finish() {
  out_.clear();
  if (format_ == ToolCallFormat::kForcedFunction) {
    feed_forced({});
    return std::exchange(out_, {});
  }
  switch (phase_) {
    case Phase::kText:
      emit_content(pending_);
      pending_.clear();
      break;
    case Phase::kPlain:
    case Phase::kBetween:
    case Phase::kTrail: break;
    case Phase::kCloseTag:
      if (match_ == 0) break;  // a reply may end without the closing tag, not inside it
      fail({});
      break;
    default: fail({});  // the reply ended inside a call, or before one began
  }
  phase_ = Phase::kPlain;
  return std::exchange(out_, {});
}

bool ToolCallStream::step(char c) {
  switch (phase_) {
    case Phase::kLead:
      if (is_space(c)) return true;
      if (format_ == ToolCallFormat::kLlama3) {
        if (c == '{') return start_call();
        if (c != kPythonTag[0]) return false;
        marker_ = kPythonTag;
        match_ = 1;
        phase_ = Phase::kMarker;
        return true;
      }
      if (c != '[') return false;
      phase_ = Phase::kBracket;  // the marker's or the list's
      return true;
    case Phase::kBracket:
      if (c == kToolCallsMarker[1]) {
        marker_ = kToolCallsMarker;
        match_ = 2;
        phase_ = Phase::kMarker;
        return true;
      }
      phase_ = Phase::kCallOpen;  // it was the list's
      return step(c);
    case Phase::kMarker:
      if (c != marker_[match_]) return false;
      if (++match_ == marker_.size()) phase_ = Phase::kAfterMarker;
      return true;
    case Phase::kAfterMarker:
      if (is_space(c)) return true;
      if (format_ == ToolCallFormat::kLlama3) return c == '{' && start_call();
      if (c != '[') return false;
      phase_ = Phase::kCallOpen;
      return true;
    case Phase::kCallOpen:
      if (is_space(c)) return true;
      return c == '{' && start_call();
    case Phase::kCall: return call_byte(c);
    case Phase::kCloseTag:
      if (match_ == 0 && is_space(c)) return true;
      if (c != kCloseTag[match_]) return false;
      if (++match_ == kCloseTag.size()) phase_ = Phase::kBetween;
      return true;
    case Phase::kBetween:
      if (raw_.ends_with(kOpenTag)) phase_ = Phase::kCallOpen;  // raw_ holds c already
      return true;
    case Phase::kListNext:
      if (is_space(c)) return true;
      if (c == ',') phase_ = Phase::kCallOpen;
      else if (c == ']') phase_ = Phase::kTrail;
      else return false;
      return true;
    case Phase::kTrail: return is_space(c);
    case Phase::kText:
    case Phase::kPlain: break;
  }
  return false;
}

bool ToolCallStream::start_call() {
  call_ = Call{};
  // JSON as nlohmann parses it, within limits no call comes near.
  call_.json = JsonMatcher(JsonMatcherOptions{.max_depth = JsonMatcher::kMaxDepthLimit, .max_whitespace_run = 255});
  phase_ = Phase::kCall;
  return call_byte('{');
}

bool ToolCallStream::call_byte(char c) {
  Call& k = call_;
  if (!k.json.advance(static_cast<uint8_t>(c))) return false;
  // The matcher has checked the byte; what is left is to know where keys and values end.
  if (k.in_string) {
    if (k.escaped) k.escaped = false;
    else if (c == '\\') k.escaped = true;
    else if (c == '"') k.in_string = false;
  } else if (c == '"') {
    k.in_string = true;
  }
  auto after_value = [&]() {
    if (c == ',') k.slot = Slot::kKey;
    else if (c == '}') return end_object();
    return true;
  };
  switch (k.slot) {
    case Slot::kKey:  // after '{' or ','
      if (c == '}') return end_object();
      if (c == '"') {
        k.token.assign(1, c);
        k.slot = Slot::kInKey;
      }
      return true;
    case Slot::kInKey: {
      k.token += c;
      if (k.in_string) return true;
      std::optional<std::string> key = decode_string(k.token);
      if (!key) return false;
      k.key = std::move(*key);
      k.token.clear();
      k.slot = Slot::kColon;
      return true;
    }
    case Slot::kColon:
      if (c == ':') k.slot = Slot::kValue;
      return true;
    case Slot::kValue:
      if (is_space(c)) return true;
      k.kind = c == '{' || c == '[' ? Kind::kContainer : c == '"' ? Kind::kString : Kind::kScalar;
      if (k.key == "name" && !k.name) {
        k.role = Role::kName;
        if (k.kind != Kind::kString) return false;  // parse_tool_calls wants a string name
      } else if (!k.has_arguments &&
                 k.key == (format_ == ToolCallFormat::kLlama3 ? "parameters" : "arguments")) {
        k.role = Role::kArguments;
        k.has_arguments = true;
      } else if (format_ == ToolCallFormat::kLlama3 && !k.has_arguments && k.key == "arguments") {
        k.role = Role::kHeldArguments;  // used only if no "parameters" follows
      } else {
        k.role = Role::kOther;
      }
      k.token.clear();
      k.slot = Slot::kInValue;
      [[fallthrough]];
    case Slot::kInValue:
      if (k.kind == Kind::kScalar && (is_space(c) || c == ',' || c == '}')) {
        return end_value() && after_value();  // a number or literal ends at what follows it
      }
      if (k.role == Role::kArguments && k.kind == Kind::kContainer) {
        if (k.headed) emit_arguments(std::string_view(&c, 1));
        else k.pending_arguments += c;
      } else if (k.role != Role::kOther) {
        k.token += c;
      }
      if ((k.kind == Kind::kContainer && k.json.depth() == 1) || (k.kind == Kind::kString && !k.in_string)) {
        return end_value();
      }
      return true;
    case Slot::kAfterValue: return after_value();
  }
  return false;
}

bool ToolCallStream::end_value() {
  Call& k = call_;
  k.slot = Slot::kAfterValue;
  std::optional<std::string> text;
  if (k.role != Role::kOther && k.kind != Kind::kContainer) {
    // A string's text is what parse_tool_calls takes as the arguments; a scalar's is itself.
    text = k.kind == Kind::kString ? decode_string(k.token) : k.token;
    if (!text) return false;
  }
  switch (k.role) {
    case Role::kName:
      k.name = std::move(*text);
      emit_header();
      break;
    case Role::kArguments:
      if (!text) break;  // an object or list: sent as it came
      if (k.headed) emit_arguments(*text);
      else k.pending_arguments += *text;
      break;
    case Role::kHeldArguments: k.held_arguments = text ? std::move(*text) : std::move(k.token); break;
    case Role::kOther: break;
  }
  k.token.clear();
  return true;
}

bool ToolCallStream::end_object() {
  Call& k = call_;
  if (!k.name) return false;  // the name came out with the header, which is sent by now
  if (!k.has_arguments) emit_arguments(k.held_arguments.value_or("{}"));
  switch (format_) {
    case ToolCallFormat::kHermes:
      marker_ = kCloseTag;
      match_ = 0;
      phase_ = Phase::kCloseTag;
      break;
    case ToolCallFormat::kMistral: phase_ = Phase::kListNext; break;
    default: phase_ = Phase::kTrail; break;
  }
  return true;
}

void ToolCallStream::fail(std::string_view rest) {
  emit_content(raw_);
  raw_.clear();
  emit_content(rest);
  phase_ = Phase::kPlain;
}

void ToolCallStream::release_text() {
  // Hold back the longest ending that begins <tool_call>, and the whitespace before it.
  size_t hold = std::min(pending_.size(), kOpenTag.size() - 1);
  while (hold > 0 && !pending_.ends_with(kOpenTag.substr(0, hold))) --hold;
  size_t cut = pending_.size() - hold;
  while (cut > 0 && is_space(pending_[cut - 1])) --cut;
  emit_content(std::string_view(pending_).substr(0, cut));
  pending_.erase(0, cut);
}

void ToolCallStream::emit_content(std::string_view text) {
  if (text.empty()) return;
  if (!out_.empty() && out_.back().contains("content")) {
    out_.back()["content"].get_ref<std::string&>().append(text);
    return;
  }
  out_.push_back({{"content", std::string(text)}});
}

void ToolCallStream::emit_arguments(std::string_view text) {
  if (text.empty()) return;
  const int64_t index = num_calls_ - 1;
  if (!out_.empty() && out_.back().contains("tool_calls")) {
    json& last = out_.back()["tool_calls"][0];
    if (!last.contains("id") && last["index"] == index) {
      last["function"]["arguments"].get_ref<std::string&>().append(text);
      return;
    }
  }
  out_.push_back({{"tool_calls", json::array({{{"index", index}, {"function", {{"arguments", std::string(text)}}}}})}});
}

void ToolCallStream::emit_header() {
  Call& k = call_;
  k.headed = true;
  raw_.clear();  // from here on the call is sent, not held
  out_.push_back({{"tool_calls", json::array({{{"index", num_calls_},
                                               {"id", make_id_()},
                                               {"type", "function"},
                                               {"function", {{"name", *k.name}, {"arguments", ""}}}}})}});
  ++num_calls_;
  emit_arguments(k.pending_arguments);
  k.pending_arguments.clear();
}

}  // namespace dspark
