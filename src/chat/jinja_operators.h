// Python arithmetic on Values: + - * / // % ** and unary -, with Python's rules: bool is
// an int, int op int stays int (except /), floor division and modulo round toward
// negative infinity, str + str and list + list concatenate, str * int repeats, str % args
// formats printf-style, and every
// other mix is a TypeError-like ValueError with Python's message. Results larger than
// `max_size` bytes/items are refused so that a template cannot exhaust memory.
#pragma once

#include <cstdint>

#include "chat/jinja_value.h"

namespace dspark::jinja {

enum class ArithOp { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow };

Value arithmetic(ArithOp op, const Value& a, const Value& b, int64_t max_size);
Value negate(const Value& v);
Value unary_plus(const Value& v);

}  // namespace dspark::jinja
