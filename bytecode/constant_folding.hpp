// What a compiler backend computes at translation time for opcodes whose operands are both
// constants: the same arithmetic as the interpreter (bytecode/semantics.hpp).
#pragma once
#include "bytecode/opcodes.hpp"
#include "bytecode/semantics.hpp"

namespace tpagent::bytecode {

// add, sub, mul, the shifts, the bitwise operators and the comparisons; 0 for other opcodes.
inline std::uint64_t fold_binary(Op op, std::uint64_t a, std::uint64_t b) {
    switch (op) {
    case Op::Add:
        return a + b;
    case Op::Sub:
        return a - b;
    case Op::Mul:
        return a * b;
    case Op::Lsh:
        return sem::lsh(a, b);
    case Op::RshSigned:
        return sem::rsh_signed(a, b);
    case Op::RshUnsigned:
        return sem::rsh_unsigned(a, b);
    case Op::BitAnd:
        return a & b;
    case Op::BitOr:
        return a | b;
    case Op::BitXor:
        return a ^ b;
    case Op::Equal:
        return a == b;
    case Op::LessSigned:
        return sem::less_signed(a, b);
    case Op::LessUnsigned:
        return a < b;
    default:
        return 0;
    }
}

// div_signed, div_unsigned, rem_signed, rem_unsigned; b must not be 0.
inline std::uint64_t fold_divrem(Op op, std::uint64_t a, std::uint64_t b) {
    switch (op) {
    case Op::DivSigned:
        return sem::div_signed(a, b);
    case Op::RemSigned:
        return sem::rem_signed(a, b);
    case Op::DivUnsigned:
        return sem::div_unsigned(a, b);
    default:
        return sem::rem_unsigned(a, b);
    }
}

} // namespace tpagent::bytecode
