#include "chat/jinja_interpreter.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>

#include "chat/jinja_access.h"
#include "chat/jinja_error.h"
#include "chat/jinja_globals.h"
#include "chat/jinja_operators.h"

namespace dspark::jinja {
namespace {

// Variables of one scope; a handful each, so a vector beats a hash map.
class Scope {
 public:
  const Value* find(const std::string& name) const {
    for (const auto& [key, value] : vars_)
      if (key == name) return &value;
    return nullptr;
  }
  void set(const std::string& name, Value value) {
    for (auto& [key, existing] : vars_) {
      if (key == name) {
        existing = std::move(value);
        return;
      }
    }
    vars_.emplace_back(name, std::move(value));
  }

 private:
  std::vector<std::pair<std::string, Value>> vars_;
};

// Result of running statements: whether a break/continue is unwinding to its loop.
enum class Flow { kNormal, kBreak, kContinue };

// The frames visible at one point of the render, kept by a callable that renders there
// later: a {% call %} block's body (run when its macro calls caller()) and a recursive
// loop's loop(...). The scopes live on the C++ stack of the statement that took the
// snapshot, so it is valid only while that statement runs; `alive` turns false when the
// statement ends (see SnapshotExpiry), and a later call, from a callable stored away in a
// namespace, is refused rather than touching dead scopes.
struct FrameSnapshot {
  std::vector<Scope*> frames;
  std::shared_ptr<bool> alive;
};

// Ends a snapshot's validity when the statement that took it ends, however it ends.
struct SnapshotExpiry {
  ~SnapshotExpiry() { *alive = false; }
  std::shared_ptr<bool> alive;
};

class Interpreter;

// A macro as a value: calling it renders its body with the arguments bound.
class MacroCallable final : public Callable {
 public:
  MacroCallable(const MacroStmt& macro, Interpreter& interpreter) : macro_(macro), interpreter_(interpreter) {}
  Value call(CallArgs args) const override;
  std::string name() const override { return macro_.name; }

 private:
  const MacroStmt& macro_;
  Interpreter& interpreter_;
};

// The `caller` a {% call %} block passes to its macro: renders the block's body, with the
// block's own parameters bound, among the variables of the call site.
class CallerCallable final : public Callable {
 public:
  CallerCallable(const CallBlockStmt& block, Interpreter& interpreter, FrameSnapshot site)
      : block_(block), interpreter_(interpreter), site_(std::move(site)) {}
  Value call(CallArgs args) const override;
  std::string name() const override { return "caller"; }

 private:
  const CallBlockStmt& block_;
  Interpreter& interpreter_;
  FrameSnapshot site_;  // the frames around the call block
};

// loop(items) in a recursive for loop: the loop over `items`, one level deeper than the
// level whose `loop` this is, rendered to a string.
class RecursiveLoopCallable final : public Callable {
 public:
  RecursiveLoopCallable(const ForStmt& loop, Interpreter& interpreter, FrameSnapshot site, int depth0)
      : loop_(loop), interpreter_(interpreter), site_(std::move(site)), depth0_(depth0) {}
  Value call(CallArgs args) const override;
  std::string name() const override { return "loop"; }

 private:
  const ForStmt& loop_;
  Interpreter& interpreter_;
  FrameSnapshot site_;  // the frames around the for statement (every level renders among them)
  int depth0_;
};

// What the iterations of one level of a for loop share: loop.cycle and loop.changed keep
// state across iterations, and loop(...) is the same callable in each.
struct LoopLevel {
  int depth0 = 0;
  std::shared_ptr<int64_t> index0 = std::make_shared<int64_t>(0);
  Value cycle;
  Value changed;
  std::shared_ptr<const Callable> recurse;  // loop(...): recursion, or an error if not recursive
};

class Interpreter {
 public:
  Interpreter(const std::string& name, const RenderLimits& limits) : name_(name), limits_(limits) {}

  std::string run(const Body& body, const Value& context) {
    if (context.is_dict()) {
      for (const auto& [key, value] : context.as_dict().entries()) root_.set(key.str(), value);
    } else if (!context.is_undefined() && !context.is_none()) {
      throw TemplateRuntimeError(name_ + ":1: the render context must be a mapping");
    }
    frames_ = {&root_};
    std::string out;
    out_ = &out;
    exec_body(body);
    return out;
  }

  // A macro's body sees the root scope and its own parameters, not its caller's locals.
  Value call_macro(const MacroStmt& macro, const CallArgs& args) { return render_macro(macro, args, {&root_}); }

  // Renders a macro's body with `args` bound, among the frames `outer` (a call block's body
  // renders among the frames of its call site).
  Value render_macro(const MacroStmt& macro, const CallArgs& args, std::vector<Scope*> outer) {
    Scope local;
    outer.push_back(&local);
    CallFrame frame(*this, std::move(outer), "macro calls");
    MacroArguments given = match_arguments(macro, args);
    for (size_t i = 0; i < macro.params.size(); ++i) {
      if (given.params[i]) local.set(macro.params[i], *given.params[i]);
      else if (macro.defaults[i]) local.set(macro.params[i], eval(*macro.defaults[i]));
      else local.set(macro.params[i], Value::undefined("parameter '" + macro.params[i] + "' was not provided"));
    }
    if (macro.takes_caller)
      local.set("caller", given.caller && !given.caller->is_none() ? *given.caller : Value::undefined("No caller defined"));
    exec_body(macro.body);
    return Value(std::move(frame.output));
  }

  // loop(items): the level at depth0 of a recursive loop, over `items`, among the frames
  // the for statement started with.
  Value render_loop_level(const ForStmt& stmt, List items, int depth0, const FrameSnapshot& site) {
    CallFrame frame(*this, site.frames, "recursive loop calls");
    run_loop(stmt, std::move(items), depth0, &site);
    return Value(std::move(frame.output));
  }

 private:
  // A macro call or a recursive loop level: counts the call depth, and swaps in the frames
  // the body sees and an output of its own; the destructor restores the caller's.
  struct CallFrame {
    CallFrame(Interpreter& self, std::vector<Scope*> frames, const char* what) : self(self) {
      if (self.call_depth_ >= self.limits_.max_call_depth)
        throw ValueError("maximum recursion depth exceeded: more than " + std::to_string(self.limits_.max_call_depth) +
                         " nested " + what);
      saved_frames = std::exchange(self.frames_, std::move(frames));
      saved_out = std::exchange(self.out_, &output);
      ++self.call_depth_;
    }
    ~CallFrame() {
      self.frames_ = std::move(saved_frames);
      self.out_ = saved_out;
      --self.call_depth_;
    }
    Interpreter& self;
    std::vector<Scope*> saved_frames;
    std::string* saved_out = nullptr;
    std::string output;
  };

  // A macro call's arguments matched to its parameters as Jinja2's Macro.__call__ does:
  // positional ones first, keywords by name for the parameters left, then caller=... for
  // the implicit `caller`. Null where nothing was passed. Throws what Jinja2 raises for
  // the arguments left over.
  struct MacroArguments {
    std::vector<const Value*> params;
    const Value* caller = nullptr;
  };

  static MacroArguments match_arguments(const MacroStmt& macro, const CallArgs& args) {
    const size_t count = macro.params.size();
    std::vector<bool> taken(args.keyword.size(), false);
    auto take_keyword = [&](const std::string& name) -> const Value* {
      for (size_t k = 0; k < args.keyword.size(); ++k) {
        if (taken[k] || args.keyword[k].first != name) continue;
        taken[k] = true;
        return &args.keyword[k].second;
      }
      return nullptr;
    };
    MacroArguments given;
    given.params.assign(count, nullptr);
    const size_t positional = std::min(count, args.positional.size());
    for (size_t i = 0; i < positional; ++i) given.params[i] = &args.positional[i];
    for (size_t i = positional; i < count; ++i) given.params[i] = take_keyword(macro.params[i]);
    if (macro.takes_caller) given.caller = take_keyword("caller");

    const std::string label = macro.name.empty() ? "macro None" : "macro '" + macro.name + "'";
    if (take_keyword("caller"))
      throw ValueError(label + " was invoked with two values for the special caller argument. This is most likely a bug.");
    for (size_t k = 0; k < args.keyword.size(); ++k)
      if (!taken[k]) throw ValueError(label + " takes no keyword argument '" + args.keyword[k].first + "'");
    if (args.positional.size() > count)
      throw ValueError(label + " takes not more than " + std::to_string(count) + " argument(s)");
    return given;
  }

  [[noreturn]] void fail(int line, const std::string& what) const {
    throw TemplateRuntimeError(name_ + ":" + std::to_string(line) + ": " + what);
  }

  void write(const std::string& text, int line) {
    if (static_cast<int64_t>(out_->size() + text.size()) > limits_.max_output_bytes)
      fail(line, "output exceeds the limit of " + std::to_string(limits_.max_output_bytes) + " bytes");
    out_->append(text);
  }

  // ---- statements ----

  Flow exec_body(const Body& body) {
    for (const StmtPtr& stmt : body) {
      Flow flow = exec(*stmt);
      if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

  // Counts the interpreter's recursion (statements and expressions, through macro calls)
  // so that deep nesting ends in an error, not a stack overflow.
  struct DepthGuard {
    DepthGuard(Interpreter& self, int line) : self(self) {
      if (++self.eval_depth_ > self.limits_.max_eval_depth) {
        --self.eval_depth_;
        self.fail(line, "template nesting exceeds " + std::to_string(self.limits_.max_eval_depth) + " levels during rendering");
      }
    }
    ~DepthGuard() { --self.eval_depth_; }
    Interpreter& self;
  };

  Flow exec(const Stmt& stmt) {
    DepthGuard guard(*this, stmt.line);
    switch (stmt.kind) {
      case StmtKind::kText: write(static_cast<const TextStmt&>(stmt).text, stmt.line); return Flow::kNormal;
      case StmtKind::kOutput: write(eval(*static_cast<const OutputStmt&>(stmt).expr).str(), stmt.line); return Flow::kNormal;
      case StmtKind::kIf: return exec_if(static_cast<const IfStmt&>(stmt));
      case StmtKind::kFor: return exec_for(static_cast<const ForStmt&>(stmt));
      case StmtKind::kSet: {
        const auto& set = static_cast<const SetStmt&>(stmt);
        assign(set.target, eval(*set.value), stmt.line);
        return Flow::kNormal;
      }
      case StmtKind::kSetBlock: {
        const auto& set = static_cast<const SetBlockStmt&>(stmt);
        Value text(capture(set.body));
        assign(set.target, set.filter ? apply_filter_chain(*set.filter, text) : text, stmt.line);
        return Flow::kNormal;
      }
      case StmtKind::kMacro: {
        const auto& macro = static_cast<const MacroStmt&>(stmt);
        frames_.back()->set(macro.name, Value::callable(std::make_shared<MacroCallable>(macro, *this)));
        return Flow::kNormal;
      }
      case StmtKind::kCallBlock: return exec_call_block(static_cast<const CallBlockStmt&>(stmt));
      case StmtKind::kFilterBlock: {
        const auto& block = static_cast<const FilterBlockStmt&>(stmt);
        write(apply_filter_chain(*block.filter, Value(capture(block.body))).str(), stmt.line);
        return Flow::kNormal;
      }
      case StmtKind::kWith: {
        const auto& with = static_cast<const WithStmt&>(stmt);
        Scope scope;
        std::vector<Value> values;
        for (const auto& [target, expr] : with.assignments) values.push_back(eval(*expr));
        frames_.push_back(&scope);
        for (size_t i = 0; i < values.size(); ++i) assign(with.assignments[i].first, values[i], stmt.line);
        Flow flow = exec_body(with.body);
        frames_.pop_back();
        return flow;
      }
      case StmtKind::kScope: return exec_body(static_cast<const ScopeStmt&>(stmt).body);
      case StmtKind::kBreak: return Flow::kBreak;
      case StmtKind::kContinue: return Flow::kContinue;
    }
    return Flow::kNormal;
  }

  // Calls the block's macro with caller=<the body>. The body sees the frames around the
  // block, which stay alive until it ends.
  Flow exec_call_block(const CallBlockStmt& block) {
    // One more level: a call block nests a whole macro call in one statement, about twice
    // the stack of the statement + expression levels that {{ m() }} counts.
    DepthGuard call_level(*this, block.line);
    const auto& call = static_cast<const CallExpr&>(*block.call);
    Value callee = eval(*call.callee);
    CallArgs args = eval_args(call.args);
    FrameSnapshot site{frames_, std::make_shared<bool>(true)};
    SnapshotExpiry expiry{site.alive};
    args.keyword.emplace_back("caller", Value::callable(std::make_shared<CallerCallable>(block, *this, site)));
    Value result;
    try {
      result = call_value(callee, std::move(args));
    } catch (const ValueError& e) {
      fail(block.line, e.what());
    }
    write(result.str(), block.line);
    return Flow::kNormal;
  }

  // Renders `body` into a string of its own (block set, filter block).
  std::string capture(const Body& body) {
    std::string captured;
    std::string* saved = std::exchange(out_, &captured);
    try {
      exec_body(body);
    } catch (...) {
      out_ = saved;
      throw;
    }
    out_ = saved;
    return captured;
  }

  Flow exec_if(const IfStmt& stmt) {
    for (const auto& [condition, body] : stmt.branches)
      if (eval(*condition).truthy()) return exec_body(body);
    return exec_body(stmt.else_body);
  }

  Flow exec_for(const ForStmt& stmt) {
    Value iterable = eval(*stmt.iterable);
    List items;
    try {
      items = iterable.iterate();
    } catch (const ValueError& e) {
      fail(stmt.iterable->line, e.what());
    }
    if (!stmt.recursive) return run_loop(stmt, std::move(items), 0, nullptr);
    // Every level of a recursive loop renders among the frames the statement started with.
    FrameSnapshot site{frames_, std::make_shared<bool>(true)};
    SnapshotExpiry expiry{site.alive};
    return run_loop(stmt, std::move(items), 0, &site);
  }

  // One level of a for loop (the only one unless it is recursive): the filter, then the
  // body once per item, or the else body if no item is left. `site` is null unless the
  // loop is recursive.
  Flow run_loop(const ForStmt& stmt, List items, int depth0, const FrameSnapshot* site) {
    if (stmt.filter) items = filter_items(stmt, std::move(items));
    if (items.empty()) return exec_body(stmt.else_body);

    LoopLevel level = new_loop_level(stmt, depth0, site);
    const int64_t length = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < length; ++i) {
      if (++iterations_ > limits_.max_loop_iterations)
        fail(stmt.line, "more than " + std::to_string(limits_.max_loop_iterations) + " loop iterations");
      *level.index0 = i;
      Scope scope;  // fresh per iteration: a set inside the body does not survive it
      frames_.push_back(&scope);
      assign(stmt.target, items[static_cast<size_t>(i)], stmt.line);
      scope.set("loop", loop_object(items, i, level));
      Flow flow = exec_body(stmt.body);  // an exception ends the whole render: no unwinding needed
      frames_.pop_back();
      if (flow == Flow::kBreak) break;
    }
    return Flow::kNormal;
  }

  // "for x in xs if cond": the filter sees the loop variables, not `loop`.
  List filter_items(const ForStmt& stmt, List items) {
    List kept;
    for (Value& item : items) {
      Scope scope;
      frames_.push_back(&scope);
      assign(stmt.target, item, stmt.line);
      bool keep = eval(*stmt.filter).truthy();
      frames_.pop_back();
      if (keep) kept.push_back(std::move(item));
    }
    return kept;
  }

  LoopLevel new_loop_level(const ForStmt& stmt, int depth0, const FrameSnapshot* site) {
    LoopLevel level;
    level.depth0 = depth0;
    auto index0 = level.index0;
    level.cycle = Value::callable(std::make_shared<FunctionCallable>("loop.cycle", [index0](CallArgs args) {
      if (args.positional.empty()) throw ValueError("no items for cycling given");
      return args.positional[static_cast<size_t>(*index0) % args.positional.size()];
    }));
    // loop.changed(*values): true on the first call, then whenever the values differ from
    // those of the previous call (of this level).
    auto previous = std::make_shared<std::optional<Value>>();
    level.changed = Value::callable(std::make_shared<FunctionCallable>("loop.changed", [previous](CallArgs args) {
      if (!args.keyword.empty())
        throw ValueError("LoopContext.changed() got an unexpected keyword argument '" + args.keyword[0].first + "'");
      Value values = Value::list(std::move(args.positional), /*is_tuple=*/true);
      if (*previous && (*previous)->equals(values)) return Value(false);
      *previous = std::move(values);
      return Value(true);
    }));
    if (site) level.recurse = std::make_shared<RecursiveLoopCallable>(stmt, *this, *site, depth0);
    else level.recurse = not_recursive();
    return level;
  }

  // loop(...) in a loop not marked recursive: Jinja2's loop is callable, but refuses.
  static std::shared_ptr<const Callable> not_recursive() {
    static const auto* fn = new std::shared_ptr<const Callable>(
        std::make_shared<FunctionCallable>("loop", [](CallArgs) -> Value {
          throw ValueError("The loop must have the 'recursive' marker to be called recursively.");
        }));
    return *fn;
  }

  static Value loop_object(const List& items, int64_t i, const LoopLevel& level) {
    const int64_t length = static_cast<int64_t>(items.size());
    Dict loop;
    loop.set(Value("index"), Value(i + 1));
    loop.set(Value("index0"), Value(i));
    loop.set(Value("revindex"), Value(length - i));
    loop.set(Value("revindex0"), Value(length - i - 1));
    loop.set(Value("first"), Value(i == 0));
    loop.set(Value("last"), Value(i == length - 1));
    loop.set(Value("length"), Value(length));
    loop.set(Value("depth"), Value(level.depth0 + 1));
    loop.set(Value("depth0"), Value(level.depth0));
    loop.set(Value("previtem"), i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("there is no previous item"));
    loop.set(Value("nextitem"), i + 1 < length ? items[static_cast<size_t>(i + 1)] : Value::undefined("there is no next item"));
    loop.set(Value("cycle"), level.cycle);
    loop.set(Value("changed"), level.changed);
    return Value::object(std::move(loop), "jinja2.runtime.LoopContext", level.recurse);
  }

  void assign(const AssignTarget& target, const Value& value, int line) {
    if (!target.elements.empty()) {
      List items;
      try {
        items = value.iterate();
      } catch (const ValueError& e) {
        fail(line, std::string("cannot unpack non-iterable ") + value.type_name() + " object");
      }
      const size_t expected = target.elements.size();
      if (items.size() > expected) fail(line, "too many values to unpack (expected " + std::to_string(expected) + ")");
      if (items.size() < expected)
        fail(line, "not enough values to unpack (expected " + std::to_string(expected) + ", got " + std::to_string(items.size()) + ")");
      for (size_t i = 0; i < expected; ++i) assign(target.elements[i], items[i], line);
      return;
    }
    if (!target.attribute.empty()) {  // ns.attr = value
      Value object = lookup(target.name);
      if (!object.is_namespace()) fail(line, "cannot assign attribute on non-namespace object");
      object.object_attributes().set(Value(target.attribute), value);
      return;
    }
    frames_.back()->set(target.name, value);
  }

  Value lookup(const std::string& name) const {
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it)
      if (const Value* found = (*it)->find(name)) return *found;
    Value global = find_global(name);
    if (!global.is_undefined()) return global;
    return Value::undefined("'" + name + "' is undefined");
  }

  // ---- expressions ----

  Value eval(const Expr& expr) {
    DepthGuard guard(*this, expr.line);
    try {
      return eval_unchecked(expr);
    } catch (const ValueError& e) {
      fail(expr.line, e.what());
    }
  }

  CallArgs eval_args(const CallArgExprs& exprs) {
    CallArgs args;
    args.positional.reserve(exprs.positional.size());
    for (const ExprPtr& e : exprs.positional) args.positional.push_back(eval(*e));
    for (const auto& [key, e] : exprs.keyword) args.keyword.emplace_back(key, eval(*e));
    return args;
  }

  // A chain of FilterExprs whose innermost operand is null, applied to `input`.
  Value apply_filter_chain(const Expr& expr, const Value& input) {
    const auto& filter = static_cast<const FilterExpr&>(expr);
    Value operand = filter.operand ? apply_filter_chain(*filter.operand, input) : input;
    return apply_filter(filter, operand);
  }

  Value apply_filter(const FilterExpr& filter, const Value& operand) {
    if (!filter.fn) fail(filter.line, "No filter named '" + filter.name + "' found.");
    CallArgs args = eval_args(filter.args);
    try {
      return (*filter.fn)(operand, args);
    } catch (const ValueError& e) {
      fail(filter.line, e.what());
    }
  }

  // One small function per node kind, kept out of line: the dispatcher's frame is on the
  // stack once per level of the expression tree, so it must stay small.
  Value eval_unchecked(const Expr& expr) {
    switch (expr.kind) {
      case ExprKind::kLiteral: return static_cast<const LiteralExpr&>(expr).value;
      case ExprKind::kName: return lookup(static_cast<const NameExpr&>(expr).name);
      case ExprKind::kList: return eval_list(static_cast<const ListExpr&>(expr));
      case ExprKind::kDict: return eval_dict(static_cast<const DictExpr&>(expr));
      case ExprKind::kGetAttr: return eval_get_attr(static_cast<const GetAttrExpr&>(expr));
      case ExprKind::kGetItem: return eval_get_item(static_cast<const GetItemExpr&>(expr));
      case ExprKind::kSlice: throw ValueError("slice outside of a subscript");
      case ExprKind::kCall: return eval_call(static_cast<const CallExpr&>(expr));
      case ExprKind::kFilter: return eval_filter(static_cast<const FilterExpr&>(expr));
      case ExprKind::kTest: return eval_test(static_cast<const TestExpr&>(expr));
      case ExprKind::kUnary: return eval_unary(static_cast<const UnaryExpr&>(expr));
      case ExprKind::kBinary: return eval_binary(static_cast<const BinaryExpr&>(expr));
      case ExprKind::kCompare: return eval_compare(static_cast<const CompareExpr&>(expr));
      case ExprKind::kCondition: return eval_condition(static_cast<const ConditionExpr&>(expr));
    }
    return Value();
  }

  [[gnu::noinline]] Value eval_list(const ListExpr& list) {
    List items;
    items.reserve(list.items.size());
    for (const ExprPtr& item : list.items) items.push_back(eval(*item));
    return Value::list(std::move(items), list.is_tuple);
  }

  [[gnu::noinline]] Value eval_dict(const DictExpr& expr) {
    Dict dict;
    for (const auto& [key, value] : expr.items) dict.set(eval(*key), eval(*value));
    return Value::dict(std::move(dict));
  }

  [[gnu::noinline]] Value eval_get_attr(const GetAttrExpr& get) { return get_attribute(eval(*get.object), get.name); }

  [[gnu::noinline]] Value eval_get_item(const GetItemExpr& get) {
    Value object = eval(*get.object);
    if (get.index->kind == ExprKind::kSlice) {
      const auto& slice = static_cast<const SliceExpr&>(*get.index);
      auto bound = [&](const ExprPtr& e) { return e ? eval(*e) : Value::none(); };
      return get_slice(object, bound(slice.start), bound(slice.stop), bound(slice.step));
    }
    return get_item(object, eval(*get.index));
  }

  [[gnu::noinline]] Value eval_call(const CallExpr& call) {
    Value callee = eval(*call.callee);
    return call_value(callee, eval_args(call.args));
  }

  [[gnu::noinline]] Value eval_filter(const FilterExpr& filter) { return apply_filter(filter, eval(*filter.operand)); }

  [[gnu::noinline]] Value eval_test(const TestExpr& test) {
    if (!test.fn) fail(test.line, "No test named '" + test.name + "' found.");
    Value operand = eval(*test.operand);
    bool result = (*test.fn)(operand, eval_args(test.args));
    return Value(result != test.negated);
  }

  [[gnu::noinline]] Value eval_unary(const UnaryExpr& unary) {
    Value operand = eval(*unary.operand);
    switch (unary.op) {
      case UnaryOp::kNot: return Value(!operand.truthy());
      case UnaryOp::kNeg: return negate(operand);
      case UnaryOp::kPos: return unary_plus(operand);
    }
    return Value();
  }

  [[gnu::noinline]] Value eval_condition(const ConditionExpr& cond) {
    if (eval(*cond.condition).truthy()) return eval(*cond.then);
    if (cond.otherwise) return eval(*cond.otherwise);
    return Value::undefined("the inline if-expression evaluated to false and no else section was defined.");
  }

  [[gnu::noinline]] Value eval_binary(const BinaryExpr& expr) {
    Value left = eval(*expr.left);
    switch (expr.op) {  // and / or return an operand, like Python
      case BinaryOp::kAnd: return left.truthy() ? eval(*expr.right) : left;
      case BinaryOp::kOr: return left.truthy() ? left : eval(*expr.right);
      default: break;
    }
    Value right = eval(*expr.right);
    const int64_t max_size = limits_.max_output_bytes;
    switch (expr.op) {
      case BinaryOp::kConcat: {
        std::string text = left.str() + right.str();
        if (static_cast<int64_t>(text.size()) > max_size) throw ValueError("string concatenation result is too large");
        return Value(std::move(text));
      }
      case BinaryOp::kAdd: return arithmetic(ArithOp::kAdd, left, right, max_size);
      case BinaryOp::kSub: return arithmetic(ArithOp::kSub, left, right, max_size);
      case BinaryOp::kMul: return arithmetic(ArithOp::kMul, left, right, max_size);
      case BinaryOp::kDiv: return arithmetic(ArithOp::kDiv, left, right, max_size);
      case BinaryOp::kFloorDiv: return arithmetic(ArithOp::kFloorDiv, left, right, max_size);
      case BinaryOp::kMod: return arithmetic(ArithOp::kMod, left, right, max_size);
      case BinaryOp::kPow: return arithmetic(ArithOp::kPow, left, right, max_size);
      default: break;
    }
    return Value();
  }

  static bool compare_values(CompareOp op, const Value& a, const Value& b) {
    switch (op) {
      case CompareOp::kEq: return a.equals(b);
      case CompareOp::kNe: return !a.equals(b);
      case CompareOp::kIn: return value_contains(b, a);
      case CompareOp::kNotIn: return !value_contains(b, a);
      default: break;
    }
    if (a.is_undefined()) throw ValueError(a.undefined_message());
    if (b.is_undefined()) throw ValueError(b.undefined_message());
    int c;
    try {
      c = a.compare(b);
    } catch (const ValueError&) {
      const char* symbol = op == CompareOp::kLt ? "<" : op == CompareOp::kLe ? "<=" : op == CompareOp::kGt ? ">" : ">=";
      throw ValueError(std::string("'") + symbol + "' not supported between instances of '" + a.type_name() + "' and '" +
                       b.type_name() + "'");
    }
    switch (op) {
      case CompareOp::kLt: return c < 0;
      case CompareOp::kLe: return c <= 0;
      case CompareOp::kGt: return c > 0;
      case CompareOp::kGe: return c >= 0;
      default: return false;
    }
  }

  [[gnu::noinline]] Value eval_compare(const CompareExpr& expr) {  // a < b < c means a < b and b < c
    Value left = eval(*expr.first);
    for (const auto& [op, operand] : expr.rest) {
      Value right = eval(*operand);
      if (!compare_values(op, left, right)) return Value(false);
      left = std::move(right);
    }
    return Value(true);
  }

  const std::string& name_;
  const RenderLimits& limits_;
  Scope root_;
  std::vector<Scope*> frames_;
  std::string* out_ = nullptr;
  int call_depth_ = 0;
  int eval_depth_ = 0;
  int64_t iterations_ = 0;
};

Value MacroCallable::call(CallArgs args) const { return interpreter_.call_macro(macro_, args); }

Value CallerCallable::call(CallArgs args) const {
  if (!*site_.alive)
    throw ValueError("caller() of the call block on line " + std::to_string(block_.line) +
                     " was called after that block ended: a caller cannot be kept for later");
  return interpreter_.render_macro(block_.caller, args, site_.frames);
}

// Python's binding of LoopContext.__call__(self, iterable), with its messages.
const Value& loop_call_iterable(const CallArgs& args) {
  const std::string function = "LoopContext.__call__()";
  for (const auto& [key, value] : args.keyword)
    if (key != "iterable") throw ValueError(function + " got an unexpected keyword argument '" + key + "'");
  if (args.positional.size() > 1)
    throw ValueError(function + " takes 2 positional arguments but " + std::to_string(args.positional.size() + 1) +
                     " were given");
  if (!args.positional.empty() && !args.keyword.empty())
    throw ValueError(function + " got multiple values for argument 'iterable'");
  if (!args.positional.empty()) return args.positional[0];
  if (!args.keyword.empty()) return args.keyword[0].second;
  throw ValueError(function + " missing 1 required positional argument: 'iterable'");
}

Value RecursiveLoopCallable::call(CallArgs args) const {
  if (!*site_.alive)
    throw ValueError("loop() of the recursive for loop on line " + std::to_string(loop_.line) +
                     " was called after that loop ended: a loop cannot be kept for later");
  List items = loop_call_iterable(args).iterate();
  return interpreter_.render_loop_level(loop_, std::move(items), depth0_ + 1, site_);
}

}  // namespace

std::string render_body(const Body& body, const Value& context, const std::string& template_name,
                        const RenderLimits& limits) {
  return Interpreter(template_name, limits).run(body, context);
}

}  // namespace dspark::jinja
