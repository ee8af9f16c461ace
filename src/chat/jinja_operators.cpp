#include "chat/jinja_operators.h"

#include <cmath>
#include <limits>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"

namespace dspark::jinja {
namespace {

const char* symbol(ArithOp op) {
  switch (op) {
    case ArithOp::kAdd: return "+";
    case ArithOp::kSub: return "-";
    case ArithOp::kMul: return "*";
    case ArithOp::kDiv: return "/";
    case ArithOp::kFloorDiv: return "//";
    case ArithOp::kMod: return "%";
    case ArithOp::kPow: return "** or pow()";
  }
  return "?";
}

[[noreturn]] void unsupported(ArithOp op, const Value& a, const Value& b) {
  throw ValueError(std::string("unsupported operand type(s) for ") + symbol(op) + ": '" + a.type_name() + "' and '" +
                   b.type_name() + "'");
}

bool is_intlike(const Value& v) { return v.is_int() || v.is_bool(); }

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Value int_arithmetic(ArithOp op, int64_t a, int64_t b) {
  int64_t r = 0;
  switch (op) {
    case ArithOp::kAdd:
      if (__builtin_add_overflow(a, b, &r)) throw ValueError("integer overflow");
      return Value(r);
    case ArithOp::kSub:
      if (__builtin_sub_overflow(a, b, &r)) throw ValueError("integer overflow");
      return Value(r);
    case ArithOp::kMul:
      if (__builtin_mul_overflow(a, b, &r)) throw ValueError("integer overflow");
      return Value(r);
    case ArithOp::kDiv:
      if (b == 0) throw ValueError("division by zero");
      return Value(static_cast<double>(a) / static_cast<double>(b));
    case ArithOp::kFloorDiv:
      if (b == 0) throw ValueError("integer division or modulo by zero");
      return Value(floor_div(a, b));
    case ArithOp::kMod:
      if (b == 0) throw ValueError("integer division or modulo by zero");
      return Value(a - floor_div(a, b) * b);
    case ArithOp::kPow: {
      if (b < 0) return Value(std::pow(static_cast<double>(a), static_cast<double>(b)));
      if (a == 0 || a == 1) return Value(b == 0 ? int64_t{1} : a);
      if (a == -1) return Value(b % 2 ? int64_t{-1} : int64_t{1});
      int64_t result = 1;
      for (int64_t i = 0; i < b; ++i)
        if (__builtin_mul_overflow(result, a, &result)) throw ValueError("integer overflow");
      return Value(result);
    }
  }
  return Value();
}

Value float_arithmetic(ArithOp op, double a, double b) {
  switch (op) {
    case ArithOp::kAdd: return Value(a + b);
    case ArithOp::kSub: return Value(a - b);
    case ArithOp::kMul: return Value(a * b);
    case ArithOp::kDiv:
      if (b == 0) throw ValueError("float division by zero");
      return Value(a / b);
    case ArithOp::kFloorDiv:
      if (b == 0) throw ValueError("float floor division by zero");
      return Value(std::floor(a / b));
    case ArithOp::kMod: {
      if (b == 0) throw ValueError("float modulo");
      double r = std::fmod(a, b);
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return Value(r);
    }
    case ArithOp::kPow: return Value(std::pow(a, b));
  }
  return Value();
}

Value repeat(const Value& sequence, int64_t times, int64_t max_size) {
  if (times < 0) times = 0;
  if (sequence.is_string()) {
    const std::string& s = sequence.as_string();
    if (!s.empty() && times > max_size / static_cast<int64_t>(s.size())) throw ValueError("string repetition result is too large");
    std::string out;
    for (int64_t i = 0; i < times; ++i) out += s;
    return Value(out);
  }
  const List& items = sequence.as_list();
  if (!items.empty() && times > max_size / static_cast<int64_t>(items.size())) throw ValueError("list repetition result is too large");
  List out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), sequence.is_tuple());
}

}  // namespace

Value arithmetic(ArithOp op, const Value& a, const Value& b, int64_t max_size) {
  if (a.is_undefined()) throw ValueError(a.undefined_message());
  if (b.is_undefined()) throw ValueError(b.undefined_message());
  if (a.is_number() && b.is_number()) {
    if (is_intlike(a) && is_intlike(b)) return int_arithmetic(op, a.as_int(), b.as_int());
    return float_arithmetic(op, a.as_double(), b.as_double());
  }
  if (op == ArithOp::kAdd) {
    if (a.is_string()) {
      if (!b.is_string()) throw ValueError("can only concatenate str (not \"" + b.type_name() + "\") to str");
      if (static_cast<int64_t>(a.as_string().size() + b.as_string().size()) > max_size)
        throw ValueError("string concatenation result is too large");
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_list()) {
      if (!b.is_list() || a.is_tuple() != b.is_tuple())
        throw ValueError("can only concatenate " + a.type_name() + " (not \"" + b.type_name() + "\") to " + a.type_name());
      List items = a.as_list();
      items.insert(items.end(), b.as_list().begin(), b.as_list().end());
      return Value::list(std::move(items), a.is_tuple());
    }
  }
  if (op == ArithOp::kMod && a.is_string()) return Value(python_printf(a.as_string(), b));
  if (op == ArithOp::kMul) {
    if ((a.is_string() || a.is_list()) && is_intlike(b)) return repeat(a, b.as_int(), max_size);
    if ((b.is_string() || b.is_list()) && is_intlike(a)) return repeat(b, a.as_int(), max_size);
  }
  unsupported(op, a, b);
}

Value negate(const Value& v) {
  if (v.is_undefined()) throw ValueError(v.undefined_message());
  if (v.is_float()) return Value(-v.as_double());
  if (is_intlike(v)) {
    if (v.as_int() == std::numeric_limits<int64_t>::min()) throw ValueError("integer overflow");
    return Value(-v.as_int());
  }
  throw ValueError("bad operand type for unary -: '" + v.type_name() + "'");
}

Value unary_plus(const Value& v) {
  if (v.is_undefined()) throw ValueError(v.undefined_message());
  if (v.is_float()) return v;
  if (is_intlike(v)) return Value(v.as_int());
  throw ValueError("bad operand type for unary +: '" + v.type_name() + "'");
}

}  // namespace dspark::jinja
