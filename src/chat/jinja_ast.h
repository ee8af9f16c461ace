// AST of a parsed template: expressions (Expr) and statements (Stmt). Nodes own their
// children through unique_ptr; a parsed Template owns the root body and is immutable, so
// one Template can render concurrently from several threads. Every node keeps the line it
// starts on for error messages.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_builtins.h"
#include "chat/jinja_value.h"

namespace dspark::jinja {

// ---- expressions ----

enum class ExprKind {
  kLiteral, kName, kList, kDict, kGetAttr, kGetItem, kSlice, kCall, kFilter, kTest,
  kUnary, kBinary, kCompare, kCondition,
};

struct Expr {
  Expr(ExprKind k, int l) : kind(k), line(l) {}
  virtual ~Expr() = default;
  ExprKind kind;
  int line;
};
using ExprPtr = std::unique_ptr<Expr>;

struct CallArgExprs {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
};

struct LiteralExpr : Expr {
  LiteralExpr(int l, Value v) : Expr(ExprKind::kLiteral, l), value(std::move(v)) {}
  Value value;
};

struct NameExpr : Expr {
  NameExpr(int l, std::string n) : Expr(ExprKind::kName, l), name(std::move(n)) {}
  std::string name;
};

struct ListExpr : Expr {  // [a, b] or (a, b)
  ListExpr(int l, bool tuple) : Expr(ExprKind::kList, l), is_tuple(tuple) {}
  std::vector<ExprPtr> items;
  bool is_tuple;
};

struct DictExpr : Expr {
  explicit DictExpr(int l) : Expr(ExprKind::kDict, l) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};

struct GetAttrExpr : Expr {  // object.name
  GetAttrExpr(int l, ExprPtr o, std::string n) : Expr(ExprKind::kGetAttr, l), object(std::move(o)), name(std::move(n)) {}
  ExprPtr object;
  std::string name;
};

struct GetItemExpr : Expr {  // object[index]; index may be a SliceExpr
  GetItemExpr(int l, ExprPtr o, ExprPtr i) : Expr(ExprKind::kGetItem, l), object(std::move(o)), index(std::move(i)) {}
  ExprPtr object;
  ExprPtr index;
};

struct SliceExpr : Expr {  // start:stop:step, each optional (null)
  explicit SliceExpr(int l) : Expr(ExprKind::kSlice, l) {}
  ExprPtr start, stop, step;
};

struct CallExpr : Expr {
  CallExpr(int l, ExprPtr c) : Expr(ExprKind::kCall, l), callee(std::move(c)) {}
  ExprPtr callee;
  CallArgExprs args;
};

struct FilterExpr : Expr {  // operand | name(args); operand is null in a filter block
  FilterExpr(int l, ExprPtr o, std::string n) : Expr(ExprKind::kFilter, l), operand(std::move(o)), name(std::move(n)) {}
  ExprPtr operand;
  std::string name;
  const FilterFn* fn = nullptr;  // null: unknown (an error if evaluated)
  CallArgExprs args;
};

struct TestExpr : Expr {  // operand is [not] name(args)
  TestExpr(int l, ExprPtr o, std::string n) : Expr(ExprKind::kTest, l), operand(std::move(o)), name(std::move(n)) {}
  ExprPtr operand;
  std::string name;
  const TestFn* fn = nullptr;
  bool negated = false;
  CallArgExprs args;
};

enum class UnaryOp { kNot, kNeg, kPos };
struct UnaryExpr : Expr {
  UnaryExpr(int l, UnaryOp o, ExprPtr e) : Expr(ExprKind::kUnary, l), op(o), operand(std::move(e)) {}
  UnaryOp op;
  ExprPtr operand;
};

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kConcat, kAnd, kOr };
struct BinaryExpr : Expr {
  BinaryExpr(int l, BinaryOp o, ExprPtr a, ExprPtr b)
      : Expr(ExprKind::kBinary, l), op(o), left(std::move(a)), right(std::move(b)) {}
  BinaryOp op;
  ExprPtr left, right;
};

enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };
struct CompareExpr : Expr {  // first op1 e1 op2 e2 ... (chained like Python)
  CompareExpr(int l, ExprPtr f) : Expr(ExprKind::kCompare, l), first(std::move(f)) {}
  ExprPtr first;
  std::vector<std::pair<CompareOp, ExprPtr>> rest;
};

struct ConditionExpr : Expr {  // then if condition else otherwise (otherwise optional)
  explicit ConditionExpr(int l) : Expr(ExprKind::kCondition, l) {}
  ExprPtr then, condition, otherwise;
};

// ---- statements ----

enum class StmtKind {
  kText, kOutput, kIf, kFor, kSet, kSetBlock, kMacro, kCallBlock, kFilterBlock, kWith, kBreak, kContinue,
  kScope,
};

struct Stmt {
  Stmt(StmtKind k, int l) : kind(k), line(l) {}
  virtual ~Stmt() = default;
  StmtKind kind;
  int line;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Left side of set / for: a name, ns.attr (set only), or a tuple to unpack.
struct AssignTarget {
  std::string name;
  std::string attribute;               // non-empty: name.attribute (namespace assignment)
  std::vector<AssignTarget> elements;  // non-empty: tuple unpacking
};

struct TextStmt : Stmt {
  TextStmt(int l, std::string t) : Stmt(StmtKind::kText, l), text(std::move(t)) {}
  std::string text;
};

struct OutputStmt : Stmt {  // {{ expr }}
  OutputStmt(int l, ExprPtr e) : Stmt(StmtKind::kOutput, l), expr(std::move(e)) {}
  ExprPtr expr;
};

struct IfStmt : Stmt {
  explicit IfStmt(int l) : Stmt(StmtKind::kIf, l) {}
  std::vector<std::pair<ExprPtr, Body>> branches;  // if + elifs
  Body else_body;
};

struct ForStmt : Stmt {
  explicit ForStmt(int l) : Stmt(StmtKind::kFor, l) {}
  AssignTarget target;
  ExprPtr iterable;
  ExprPtr filter;  // for x in xs if filter
  bool recursive = false;  // `for ... recursive`: loop(items) renders the loop over items, one level deeper
  Body body;
  Body else_body;  // runs when no item was iterated (at each level of a recursive loop)
};

struct SetStmt : Stmt {
  explicit SetStmt(int l) : Stmt(StmtKind::kSet, l) {}
  AssignTarget target;
  ExprPtr value;
};

struct SetBlockStmt : Stmt {  // {% set name | filters %}body{% endset %}
  explicit SetBlockStmt(int l) : Stmt(StmtKind::kSetBlock, l) {}
  AssignTarget target;
  ExprPtr filter;  // FilterExpr chain whose innermost operand is null, or null
  Body body;
};

// {% macro name(params) %}, and the body of a {% call %} block, which Jinja2 compiles as
// an anonymous macro (its parameters are the call block's, its name None).
struct MacroStmt : Stmt {
  explicit MacroStmt(int l) : Stmt(StmtKind::kMacro, l) {}
  std::string name;  // empty for a call block's body
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // aligned with params; null where none
  Body body;
  // Jinja2 gives a macro the implicit parameter `caller` only when its body (nested macros
  // and call blocks included) uses that name before assigning it, and no parameter is
  // named caller; a caller=... argument to any other macro is an error.
  bool takes_caller = false;
};

// {% call(params) macro(args) %}body{% endcall %}: calls the macro with one more keyword
// argument, caller=<the body as a macro>. The body sees the variables of the call site.
struct CallBlockStmt : Stmt {
  explicit CallBlockStmt(int l) : Stmt(StmtKind::kCallBlock, l), caller(l) {}
  ExprPtr call;      // a CallExpr
  MacroStmt caller;  // the body and its parameters; never executed as a statement
};

struct FilterBlockStmt : Stmt {  // {% filter upper %}body{% endfilter %}
  explicit FilterBlockStmt(int l) : Stmt(StmtKind::kFilterBlock, l) {}
  ExprPtr filter;  // FilterExpr chain whose innermost operand is null
  Body body;
};

struct WithStmt : Stmt {  // {% with a = 1 %}body{% endwith %}
  explicit WithStmt(int l) : Stmt(StmtKind::kWith, l) {}
  std::vector<std::pair<AssignTarget, ExprPtr>> assignments;
  Body body;
};

// A body rendered in place, without a scope: {% generation %} of Hugging Face templates.
struct ScopeStmt : Stmt {
  explicit ScopeStmt(int l) : Stmt(StmtKind::kScope, l) {}
  Body body;
};

struct LoopControlStmt : Stmt {  // break / continue
  LoopControlStmt(int l, StmtKind k) : Stmt(k, l) {}
};

}  // namespace dspark::jinja
