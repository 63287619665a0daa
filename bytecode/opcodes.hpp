// The agent-expression opcode set: one table that the validator, interpreter, compiler
// backends and disassembler all read, so an opcode's encoding lives in exactly one place.
#pragma once
#include <cstdint>

namespace tpagent::bytecode {

enum class Op : std::uint8_t {
    Float = 0x01,
    Add = 0x02,
    Sub = 0x03,
    Mul = 0x04,
    DivSigned = 0x05,
    DivUnsigned = 0x06,
    RemSigned = 0x07,
    RemUnsigned = 0x08,
    Lsh = 0x09,
    RshSigned = 0x0a,
    RshUnsigned = 0x0b,
    Trace = 0x0c,
    TraceQuick = 0x0d,
    LogNot = 0x0e,
    BitAnd = 0x0f,
    BitOr = 0x10,
    BitXor = 0x11,
    BitNot = 0x12,
    Equal = 0x13,
    LessSigned = 0x14,
    LessUnsigned = 0x15,
    Ext = 0x16,
    Ref8 = 0x17,
    Ref16 = 0x18,
    Ref32 = 0x19,
    Ref64 = 0x1a,
    RefFloat = 0x1b,
    RefDouble = 0x1c,
    RefLongDouble = 0x1d,
    LToD = 0x1e,
    DToL = 0x1f,
    IfGoto = 0x20,
    Goto = 0x21,
    Const8 = 0x22,
    Const16 = 0x23,
    Const32 = 0x24,
    Const64 = 0x25,
    Reg = 0x26,
    End = 0x27,
    Dup = 0x28,
    Pop = 0x29,
    ZeroExt = 0x2a,
    Swap = 0x2b,
    Getv = 0x2c,
    Setv = 0x2d,
    Tracev = 0x2e,
    Tracenz = 0x2f,
    Trace16 = 0x30,
    Pick = 0x32,
    Rot = 0x33,
    Printf = 0x34,
};

// How control leaves an instruction.
enum class Flow : std::uint8_t { Next, Jump, CondJump, Stop };

struct OpInfo {
    const char* name;           // nullptr: the byte is not an opcode
    std::uint8_t operand_bytes; // fixed operand bytes after the opcode (printf: its 3-byte head)
    std::uint8_t pops;          // stack entries consumed (pick, printf: see validator)
    std::uint8_t pushes;        // stack entries produced
    Flow flow;
    bool supported; // false: floating-point opcodes, which gdb never emits
};

// Entry for any byte value; unknown bytes have name == nullptr.
const OpInfo& op_info(std::uint8_t byte);
inline const OpInfo& op_info(Op op) {
    return op_info(static_cast<std::uint8_t>(op));
}

// Width in bytes that refN reads, or 0 for other opcodes.
constexpr unsigned ref_size(Op op) {
    switch (op) {
    case Op::Ref8:
        return 1;
    case Op::Ref16:
        return 2;
    case Op::Ref32:
        return 4;
    case Op::Ref64:
        return 8;
    default:
        return 0;
    }
}

} // namespace tpagent::bytecode
