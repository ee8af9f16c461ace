#include "chat/jinja_parser.h"

#include <algorithm>
#include <cstdlib>
#include <initializer_list>

#include "chat/jinja_error.h"

namespace dspark::jinja {
namespace {

// Nesting deeper than this (parentheses, lists, blocks) is refused rather than risking
// the parser's stack on hostile input.
constexpr int kMaxNesting = 200;

class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::string& name) : tokens_(std::move(tokens)), name_(name) {}

  Body run() {
    Body body = parse_body({});
    if (!unknown_names_.empty()) fail_at(unknown_names_.front().second, unknown_names_.front().first);
    return body;
  }

 private:
  // ---- token stream ----

  const Token& current() const { return tokens_[pos_]; }
  const Token& peek(size_t ahead = 1) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
  const Token& advance() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }

  bool is_op(const char* op) const { return current().type == TokenType::kOperator && current().text == op; }
  bool is_name(const char* name) const { return current().type == TokenType::kName && current().text == name; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    advance();
    return true;
  }

  [[noreturn]] void fail_at(int line, const std::string& what) const {
    throw TemplateSyntaxError(name_ + ":" + std::to_string(line) + ": " + what);
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at(current().line, what); }

  static std::string describe(const Token& token) {
    switch (token.type) {
      case TokenType::kEof: return "end of template";
      case TokenType::kBlockEnd: return "end of statement block";
      case TokenType::kVariableEnd: return "end of print statement";
      case TokenType::kString: return "string";
      case TokenType::kInteger: return "integer";
      case TokenType::kFloat: return "float";
      default: return token.text;
    }
  }

  void expect_op(const char* op) {
    if (!skip_op(op)) fail("expected token '" + std::string(op) + "', got '" + describe(current()) + "'");
  }
  std::string expect_name() {
    if (current().type != TokenType::kName) fail("expected name, got '" + describe(current()) + "'");
    return advance().text;
  }
  void expect_block_end() {
    if (current().type != TokenType::kBlockEnd) fail("expected token 'end of statement block', got '" + describe(current()) + "'");
    advance();
  }

  struct DepthGuard {
    DepthGuard(Parser& p) : parser(p) {
      if (++parser.depth_ > kMaxNesting) parser.fail("template nesting is too deep");
    }
    ~DepthGuard() { --parser.depth_; }
    Parser& parser;
  };

  // ---- statements ----

  // Parses until a block tag whose name is in `end_tags` (left unconsumed, positioned on
  // the name), or the end of the template when end_tags is empty.
  Body parse_body(std::initializer_list<const char*> end_tags, const char* innermost = nullptr) {
    DepthGuard guard(*this);
    Body body;
    while (true) {
      const Token& token = current();
      switch (token.type) {
        case TokenType::kEof:
          if (end_tags.size() == 0) return body;
          fail("Unexpected end of template. Jinja was looking for the following tags: " + tag_list(end_tags) +
               ". The innermost block that needs to be closed is '" + innermost + "'.");
        case TokenType::kText:
          body.push_back(std::make_unique<TextStmt>(token.line, token.text));
          advance();
          break;
        case TokenType::kVariableBegin: {
          advance();
          ExprPtr expr = parse_tuple(true, false);
          if (current().type != TokenType::kVariableEnd) fail("unexpected '" + describe(current()) + "'");
          advance();
          body.push_back(std::make_unique<OutputStmt>(token.line, std::move(expr)));
          break;
        }
        case TokenType::kBlockBegin: {
          advance();
          const Token& tag = current();
          if (tag.type == TokenType::kName &&
              std::any_of(end_tags.begin(), end_tags.end(), [&](const char* t) { return tag.text == t; }))
            return body;
          body.push_back(parse_statement(end_tags, innermost));
          break;
        }
        default: fail("unexpected '" + describe(token) + "'");
      }
    }
  }

  static std::string tag_list(std::initializer_list<const char*> tags) {
    std::string out;
    for (const char* t : tags) out += (out.empty() ? "'" : " or '") + std::string(t) + "'";
    return out;
  }

  StmtPtr parse_statement(std::initializer_list<const char*> end_tags, const char* innermost) {
    const Token& tag = current();
    if (tag.type != TokenType::kName) fail("tag name expected");
    const std::string name = tag.text;
    const int line = tag.line;
    advance();
    if (name == "if") return parse_if(line);
    if (name == "for") return parse_for(line);
    if (name == "set") return parse_set(line);
    if (name == "macro") return parse_macro(line);
    if (name == "call") return parse_call_block(line);
    if (name == "filter") return parse_filter_block(line);
    if (name == "with") return parse_with(line);
    if (name == "generation") {
      expect_block_end();
      auto stmt = std::make_unique<ScopeStmt>(line);
      stmt->body = parse_body({"endgeneration"}, "generation");
      end_block();
      return stmt;
    }
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) fail_at(line, "'" + name + "' outside loop");
      expect_block_end();
      return std::make_unique<LoopControlStmt>(line, name == "break" ? StmtKind::kBreak : StmtKind::kContinue);
    }
    if (name == "include" || name == "import" || name == "from" || name == "extends" || name == "block")
      fail_at(line, "Encountered unsupported tag '" + name +
                        "': chat templates are rendered without a template loader, so a template cannot include, "
                        "import or extend another");
    std::string message = "Encountered unknown tag '" + name + "'.";
    if (end_tags.size() != 0)
      message += " Jinja was looking for the following tags: " + tag_list(end_tags) +
                 ". The innermost block that needs to be closed is '" + innermost + "'.";
    fail_at(line, message);
  }

  // Consumes the end tag name (current token) and the block end.
  void end_block() {
    advance();
    expect_block_end();
  }

  StmtPtr parse_if(int line) {
    auto stmt = std::make_unique<IfStmt>(line);
    ++conditional_depth_;
    ExprPtr condition = parse_tuple(false, false);
    expect_block_end();
    while (true) {
      Body body = parse_body({"elif", "else", "endif"}, "if");
      stmt->branches.emplace_back(std::move(condition), std::move(body));
      if (skip_name("elif")) {
        condition = parse_tuple(false, false);
        expect_block_end();
        continue;
      }
      if (skip_name("else")) {
        expect_block_end();
        stmt->else_body = parse_body({"endif"}, "if");
      }
      break;
    }
    --conditional_depth_;
    end_block();
    return stmt;
  }

  StmtPtr parse_for(int line) {
    auto stmt = std::make_unique<ForStmt>(line);
    stmt->target = parse_assign_target(false);
    if (!skip_name("in")) fail("expected 'in', got '" + describe(current()) + "'");
    stmt->iterable = parse_tuple(false, false, /*with_condexpr=*/false);
    if (skip_name("if")) stmt->filter = parse_expression();
    stmt->recursive = skip_name("recursive");
    expect_block_end();
    ++loop_depth_;
    stmt->body = parse_body({"endfor", "else"}, "for");
    --loop_depth_;
    if (skip_name("else")) {
      expect_block_end();
      stmt->else_body = parse_body({"endfor"}, "for");
    }
    end_block();
    return stmt;
  }

  StmtPtr parse_set(int line) {
    AssignTarget target = parse_assign_target(true);
    if (skip_op("=")) {
      auto stmt = std::make_unique<SetStmt>(line);
      stmt->target = std::move(target);
      stmt->value = parse_tuple(false, false);
      expect_block_end();
      return stmt;
    }
    auto stmt = std::make_unique<SetBlockStmt>(line);
    stmt->target = std::move(target);
    if (!stmt->target.elements.empty() || !stmt->target.attribute.empty()) fail_at(line, "block set needs a plain name");
    stmt->filter = parse_filter_chain(nullptr);
    expect_block_end();
    stmt->body = parse_body({"endset"}, "set");
    end_block();
    return stmt;
  }

  StmtPtr parse_macro(int line) {
    auto stmt = std::make_unique<MacroStmt>(line);
    stmt->name = expect_name();
    parse_signature(*stmt);
    parse_macro_body(*stmt, "endmacro", "macro");
    return stmt;
  }

  // {% call[(params)] callee(args) %}body{% endcall %}
  StmtPtr parse_call_block(int line) {
    auto stmt = std::make_unique<CallBlockStmt>(line);
    if (is_op("(")) parse_signature(stmt->caller);
    stmt->call = parse_expression();
    if (stmt->call->kind != ExprKind::kCall) fail_at(line, "expected call");
    for (const auto& [key, value] : static_cast<const CallExpr&>(*stmt->call).args.keyword)
      if (key == "caller") fail_at(line, "keyword argument repeated: caller");  // the block is the caller
    parse_macro_body(stmt->caller, "endcall", "call");
    return stmt;
  }

  // (a, b=default, ...) of a macro or call block.
  void parse_signature(MacroStmt& macro) {
    expect_op("(");
    while (!skip_op(")")) {
      if (!macro.params.empty()) expect_op(",");
      std::string param = expect_name();
      if (std::find(macro.params.begin(), macro.params.end(), param) != macro.params.end())
        fail("duplicate argument '" + param + "' in function definition");
      macro.params.push_back(std::move(param));
      note_name(macro.params.back(), /*load=*/false);
      macro.defaults.push_back(skip_op("=") ? parse_expression() : nullptr);
      if (!macro.defaults.back() && macro.defaults.size() > 1 && macro.defaults[macro.defaults.size() - 2])
        fail("non-default argument follows default argument");
    }
  }

  // From the end of the opening tag through the end tag; also settles takes_caller.
  void parse_macro_body(MacroStmt& macro, const char* end_tag, const char* block) {
    expect_block_end();
    int saved_loop_depth = std::exchange(loop_depth_, 0);  // break/continue cannot leave a macro
    caller_uses_.push_back(NameUse::kUnseen);
    macro.body = parse_body({end_tag}, block);
    const bool uses_caller = caller_uses_.back() == NameUse::kLoaded;
    caller_uses_.pop_back();
    loop_depth_ = saved_loop_depth;
    end_block();
    if (!uses_caller) return;
    auto param = std::find(macro.params.begin(), macro.params.end(), "caller");
    if (param == macro.params.end()) macro.takes_caller = true;
    else if (!macro.defaults[static_cast<size_t>(param - macro.params.begin())])
      fail_at(macro.line,
              "When defining macros or call blocks the special \"caller\" argument must be omitted or be given a "
              "default.");
  }

  // Jinja2 decides whether a macro takes `caller` by the first mention of the name in its
  // body: a use (load) or an assignment. A mention counts for every enclosing macro body
  // still undecided, since Jinja2's scan descends into nested macros and call blocks.
  void note_name(const std::string& name, bool load) {
    if (name != "caller") return;
    for (NameUse& use : caller_uses_)
      if (use == NameUse::kUnseen) use = load ? NameUse::kLoaded : NameUse::kAssigned;
  }

  StmtPtr parse_filter_block(int line) {
    auto stmt = std::make_unique<FilterBlockStmt>(line);
    stmt->filter = parse_filter_chain(nullptr, /*start_inline=*/true);
    expect_block_end();
    stmt->body = parse_body({"endfilter"}, "filter");
    end_block();
    return stmt;
  }

  StmtPtr parse_with(int line) {
    auto stmt = std::make_unique<WithStmt>(line);
    while (current().type != TokenType::kBlockEnd) {
      if (!stmt->assignments.empty()) expect_op(",");
      AssignTarget target = parse_assign_target(false);
      expect_op("=");
      stmt->assignments.emplace_back(std::move(target), parse_expression());
    }
    expect_block_end();
    stmt->body = parse_body({"endwith"}, "with");
    end_block();
    return stmt;
  }

  // name | name.attr (set only) | a, b | (a, b)
  AssignTarget parse_assign_target(bool with_namespace) {
    AssignTarget target;
    bool parenthesized = skip_op("(");
    std::vector<AssignTarget> elements;
    while (true) {
      AssignTarget element;
      if (is_op("(")) {
        element = parse_assign_target(false);
      } else {
        element.name = expect_name();
        if (with_namespace && skip_op(".")) element.attribute = expect_name();
        else note_name(element.name, /*load=*/false);
      }
      elements.push_back(std::move(element));
      if (!skip_op(",")) break;
      if (parenthesized ? is_op(")") : (is_name("in") || is_op("=") || current().type == TokenType::kBlockEnd)) break;
    }
    if (parenthesized) expect_op(")");
    const Token& last = tokens_[pos_ - 1 - (parenthesized ? 1 : 0)];
    bool trailing_comma = last.type == TokenType::kOperator && last.text == ",";
    if (elements.size() == 1 && !trailing_comma) return std::move(elements[0]);
    target.elements = std::move(elements);
    return target;
  }

  // ---- expressions ----

  // a, b, c (a tuple) or a single expression. `explicit_parens` when inside ( ).
  ExprPtr parse_tuple(bool allow_empty, bool explicit_parens, bool with_condexpr = true) {
    const int line = current().line;
    std::vector<ExprPtr> items;
    bool saw_comma = false;
    while (true) {
      if (!items.empty()) {
        if (!skip_op(",")) break;
        saw_comma = true;
      }
      if (tuple_ends()) break;
      items.push_back(with_condexpr ? parse_expression() : parse_or());
    }
    if (!saw_comma) {
      if (!items.empty()) return std::move(items[0]);
      if (!allow_empty && !explicit_parens) fail("Expected an expression, got '" + describe(current()) + "'");
    }
    auto tuple = std::make_unique<ListExpr>(line, true);
    tuple->items = std::move(items);
    return tuple;
  }

  bool tuple_ends() const {
    const Token& t = current();
    if (t.type == TokenType::kVariableEnd || t.type == TokenType::kBlockEnd || t.type == TokenType::kEof) return true;
    if (t.type == TokenType::kOperator && t.text == ")") return true;
    return t.type == TokenType::kName && (t.text == "if" || t.text == "recursive" || t.text == "in");
  }

  ExprPtr parse_expression() { return parse_condexpr(); }

  ExprPtr parse_condexpr() {
    DepthGuard guard(*this);
    const int line = current().line;
    size_t unknown_before = unknown_names_.size();
    ExprPtr expr = parse_or();
    while (is_name("if")) {
      advance();
      unknown_names_.resize(std::min(unknown_names_.size(), unknown_before));  // conditional: runtime error
      ++conditional_depth_;
      auto cond = std::make_unique<ConditionExpr>(line);
      cond->then = std::move(expr);
      cond->condition = parse_or();
      if (skip_name("else")) cond->otherwise = parse_condexpr();
      --conditional_depth_;
      expr = std::move(cond);
    }
    return expr;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      int line = advance().line;
      left = std::make_unique<BinaryExpr>(line, BinaryOp::kOr, std::move(left), parse_and());
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      int line = advance().line;
      left = std::make_unique<BinaryExpr>(line, BinaryOp::kAnd, std::move(left), parse_not());
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name("not")) {
      DepthGuard guard(*this);
      int line = advance().line;
      return std::make_unique<UnaryExpr>(line, UnaryOp::kNot, parse_not());
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = current().line;
    ExprPtr first = parse_math1();
    std::unique_ptr<CompareExpr> compare;
    while (true) {
      CompareOp op;
      const Token& t = current();
      if (t.type == TokenType::kOperator && t.text == "==") op = CompareOp::kEq;
      else if (t.type == TokenType::kOperator && t.text == "!=") op = CompareOp::kNe;
      else if (t.type == TokenType::kOperator && t.text == "<") op = CompareOp::kLt;
      else if (t.type == TokenType::kOperator && t.text == "<=") op = CompareOp::kLe;
      else if (t.type == TokenType::kOperator && t.text == ">") op = CompareOp::kGt;
      else if (t.type == TokenType::kOperator && t.text == ">=") op = CompareOp::kGe;
      else if (is_name("in")) op = CompareOp::kIn;
      else if (is_name("not") && peek().type == TokenType::kName && peek().text == "in") {
        advance();
        op = CompareOp::kNotIn;
      } else break;
      advance();
      if (!compare) compare = std::make_unique<CompareExpr>(line, std::move(first));
      compare->rest.emplace_back(op, parse_math1());
    }
    if (compare) return compare;
    return first;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& t = advance();
      BinaryOp op = t.text == "+" ? BinaryOp::kAdd : BinaryOp::kSub;
      left = std::make_unique<BinaryExpr>(t.line, op, std::move(left), parse_concat());
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (is_op("~")) {
      int line = advance().line;
      left = std::make_unique<BinaryExpr>(line, BinaryOp::kConcat, std::move(left), parse_math2());
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& t = advance();
      BinaryOp op = t.text == "*" ? BinaryOp::kMul : t.text == "/" ? BinaryOp::kDiv : t.text == "//" ? BinaryOp::kFloorDiv : BinaryOp::kMod;
      left = std::make_unique<BinaryExpr>(t.line, op, std::move(left), parse_pow());
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {  // left-associative in Jinja: 2**3**2 == 64
      int line = advance().line;
      left = std::make_unique<BinaryExpr>(line, BinaryOp::kPow, std::move(left), parse_unary(true));
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    const int line = current().line;
    ExprPtr node;
    if (skip_op("-")) node = std::make_unique<UnaryExpr>(line, UnaryOp::kNeg, parse_unary(false));
    else if (skip_op("+")) node = std::make_unique<UnaryExpr>(line, UnaryOp::kPos, parse_unary(false));
    else node = parse_primary();
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    DepthGuard guard(*this);
    const Token& t = current();
    const int line = t.line;
    switch (t.type) {
      case TokenType::kName: {
        advance();
        if (t.text == "true" || t.text == "True") return std::make_unique<LiteralExpr>(line, Value(true));
        if (t.text == "false" || t.text == "False") return std::make_unique<LiteralExpr>(line, Value(false));
        if (t.text == "none" || t.text == "None") return std::make_unique<LiteralExpr>(line, Value::none());
        note_name(t.text, /*load=*/true);
        return std::make_unique<NameExpr>(line, t.text);
      }
      case TokenType::kString: {
        std::string text;
        while (current().type == TokenType::kString) text += advance().text;  // "a" "b" == "ab"
        return std::make_unique<LiteralExpr>(line, Value(std::move(text)));
      }
      case TokenType::kInteger: {
        advance();
        try {
          return std::make_unique<LiteralExpr>(line, Value(static_cast<int64_t>(std::stoll(t.text))));
        } catch (const std::out_of_range&) {
          fail_at(line, "integer literal is too large");
        }
      }
      case TokenType::kFloat:
        advance();
        return std::make_unique<LiteralExpr>(line, Value(std::strtod(t.text.c_str(), nullptr)));  // 1e999: inf
      case TokenType::kOperator:
        if (t.text == "(") {
          advance();
          ExprPtr inner = parse_tuple(true, true);
          expect_op(")");
          return inner;
        }
        if (t.text == "[") return parse_list();
        if (t.text == "{") return parse_dict();
        break;
      default: break;
    }
    fail("unexpected '" + describe(t) + "'");
  }

  ExprPtr parse_list() {
    auto list = std::make_unique<ListExpr>(advance().line, false);
    while (!is_op("]")) {
      if (!list->items.empty()) expect_op(",");
      if (is_op("]")) break;
      list->items.push_back(parse_expression());
    }
    advance();
    return list;
  }

  ExprPtr parse_dict() {
    auto dict = std::make_unique<DictExpr>(advance().line);
    while (!is_op("}")) {
      if (!dict->items.empty()) expect_op(",");
      if (is_op("}")) break;
      ExprPtr key = parse_expression();
      expect_op(":");
      dict->items.emplace_back(std::move(key), parse_expression());
    }
    advance();
    return dict;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".") || is_op("[")) node = parse_subscript(std::move(node));
      else if (is_op("(")) node = parse_call(std::move(node));
      else return node;
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) node = parse_filter_chain(std::move(node));
      else if (is_name("is")) node = parse_test(std::move(node));
      else if (is_op("(")) node = parse_call(std::move(node));
      else return node;
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const Token& t = advance();
    const int line = t.line;
    if (t.text == ".") {
      const Token& attr = current();
      if (attr.type == TokenType::kName) {
        advance();
        return std::make_unique<GetAttrExpr>(line, std::move(node), attr.text);
      }
      if (attr.type == TokenType::kInteger) {
        advance();
        int64_t index = static_cast<int64_t>(std::strtoll(attr.text.c_str(), nullptr, 10));
        return std::make_unique<GetItemExpr>(line, std::move(node), std::make_unique<LiteralExpr>(line, Value(index)));
      }
      fail("expected name or number");
    }
    std::vector<ExprPtr> indexes;
    while (!is_op("]")) {
      if (!indexes.empty()) {
        expect_op(",");
        if (is_op("]")) break;
      }
      indexes.push_back(parse_subscribed());
    }
    advance();
    if (indexes.empty()) fail_at(line, "expected an index");
    ExprPtr index;
    if (indexes.size() == 1) {
      index = std::move(indexes[0]);
    } else {
      auto tuple = std::make_unique<ListExpr>(line, true);
      tuple->items = std::move(indexes);
      index = std::move(tuple);
    }
    return std::make_unique<GetItemExpr>(line, std::move(node), std::move(index));
  }

  ExprPtr parse_subscribed() {
    const int line = current().line;
    ExprPtr start;
    if (!is_op(":")) {
      start = parse_expression();
      if (!is_op(":")) return start;
    }
    advance();  // ':'
    auto slice = std::make_unique<SliceExpr>(line);
    slice->start = std::move(start);
    if (!is_op(":") && !is_op("]") && !is_op(",")) slice->stop = parse_expression();
    if (skip_op(":") && !is_op("]") && !is_op(",")) slice->step = parse_expression();
    return slice;
  }

  ExprPtr parse_call(ExprPtr callee) {
    auto call = std::make_unique<CallExpr>(current().line, std::move(callee));
    call->args = parse_call_args();
    return call;
  }

  CallArgExprs parse_call_args() {
    expect_op("(");
    CallArgExprs args;
    bool first = true;
    while (!is_op(")")) {
      if (!first) {
        expect_op(",");
        if (is_op(")")) break;
      }
      first = false;
      if (is_op("*") || is_op("**")) fail("*args and **kwargs are not supported");
      if (current().type == TokenType::kName && peek().type == TokenType::kOperator && peek().text == "=") {
        std::string key = advance().text;
        advance();
        args.keyword.emplace_back(std::move(key), parse_expression());
      } else {
        if (!args.keyword.empty()) fail("positional argument follows keyword argument");
        args.positional.push_back(parse_expression());
      }
    }
    advance();
    return args;
  }

  std::string parse_dotted_name() {
    std::string name = expect_name();
    while (is_op(".")) {
      advance();
      name += '.';
      name += expect_name();
    }
    return name;
  }

  void note_unknown(const std::string& what, int line) {
    if (conditional_depth_ == 0) unknown_names_.emplace_back(what, line);
  }

  // | f(args) | g ...; `node` is null in filter blocks and block sets. With start_inline
  // the first filter name comes without a leading '|'.
  ExprPtr parse_filter_chain(ExprPtr node, bool start_inline = false) {
    while (start_inline || is_op("|")) {
      if (!start_inline) advance();
      start_inline = false;
      const int line = current().line;
      auto filter = std::make_unique<FilterExpr>(line, std::move(node), parse_dotted_name());
      filter->fn = find_filter(filter->name);
      if (!filter->fn) note_unknown("No filter named '" + filter->name + "'.", line);
      if (is_op("(")) filter->args = parse_call_args();
      node = std::move(filter);
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    const int line = advance().line;  // 'is'
    bool negated = skip_name("not");
    auto test = std::make_unique<TestExpr>(line, std::move(node), parse_dotted_name());
    test->negated = negated;
    test->fn = find_test(test->name);
    if (!test->fn) note_unknown("No test named '" + test->name + "'.", line);
    const Token& t = current();
    if (is_op("(")) {
      test->args = parse_call_args();
    } else if ((t.type == TokenType::kName || t.type == TokenType::kString || t.type == TokenType::kInteger ||
                t.type == TokenType::kFloat || is_op("[") || is_op("{")) &&
               !(t.type == TokenType::kName && (t.text == "else" || t.text == "or" || t.text == "and"))) {
      if (is_name("is")) fail("You cannot chain multiple tests with is");
      test->args.positional.push_back(parse_postfix(parse_primary()));
    }
    return test;
  }

  std::vector<Token> tokens_;
  const std::string& name_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  int conditional_depth_ = 0;
  std::vector<std::pair<std::string, int>> unknown_names_;  // unconditional unknown filters/tests
  enum class NameUse { kUnseen, kLoaded, kAssigned };
  std::vector<NameUse> caller_uses_;  // one per macro / call block body being parsed, innermost last
};

}  // namespace

Body parse_template(std::vector<Token> tokens, const std::string& template_name) {
  return Parser(std::move(tokens), template_name).run();
}

}  // namespace dspark::jinja
