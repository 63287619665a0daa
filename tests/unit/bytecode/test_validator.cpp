#include "ax_builder.hpp"
#include "bytecode/disassembler.hpp"

using namespace tpagent::bytecode;
using namespace tpagent::bytecode::testing;

namespace {
std::string reject(const std::vector<std::uint8_t>& bytes, const Limits& limits = {}) {
    auto p = validate(bytes, kRegisterCount, limits);
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().code == tpagent::ErrorCode::BadBytecode);
    return p.error().text;
}
} // namespace

TEST_CASE("opcode table covers the manual's opcodes and nothing else") {
    unsigned known = 0;
    for (unsigned b = 0; b < 256; ++b)
        if (op_info(static_cast<std::uint8_t>(b)).name) ++known;
    CHECK(known == 0x34 - 1); // 0x01..0x34 without 0x31
    CHECK(op_info(0x00).name == nullptr);
    CHECK(op_info(0x31).name == nullptr);
    CHECK(op_info(0x35).name == nullptr);
    CHECK(std::string(op_info(Op::RemSigned).name) == "rem_signed");
    CHECK(op_info(Op::Const64).operand_bytes == 8);
    CHECK(op_info(Op::Reg).operand_bytes == 2);
    CHECK(op_info(Op::Swap).pops == 2);
    CHECK(op_info(Op::Swap).pushes == 2);
    CHECK_FALSE(op_info(Op::RefDouble).supported);
}

TEST_CASE("validator accepts what gdb emits and records depths") {
    // x % 2 == 0 as gdb 13 compiles it for a global int
    const Program p = must_validate({0x24, 0x00, 0x4a, 0x40, 0xd0, 0x19, 0x16, 0x20, 0x22, 0x02,
                                     0x07, 0x16, 0x20, 0x22, 0x00, 0x13, 0x27});
    CHECK(p.insns().size() == 9);
    CHECK(p.max_depth() == 2);
    CHECK(p.insns()[4].op == Op::RemSigned);
    CHECK(p.insns()[4].depth == 2);
    CHECK(p.insns()[0].imm == 0x4a40d0);
    CHECK_FALSE(p.uses_registers());
    CHECK_FALSE(p.collects());
}

TEST_CASE("validator rejections say where and why") {
    CHECK(reject({}) == "offset 0: empty expression (no end)");
    CHECK(reject({0x22, 1, 0x00}) == "offset 2: unknown opcode 0x00");
    CHECK(reject({0x31, 0x27}) == "offset 0: unknown opcode 0x31");
    CHECK(reject({0x22, 1, 0x1e, 0x27}) == "offset 2: unsupported floating-point opcode l_to_d");
    CHECK(reject({0x22, 1, 0x24, 0, 0}) == "offset 2: truncated operand of const32");
    CHECK(reject({0x22, 1, 0x22, 2}) ==
          "offset 2: execution runs past the last instruction (no end)");
    CHECK(reject({0x02, 0x27}) == "offset 0: stack underflow: add needs 2 entries, has 0");
    CHECK(reject({0x22, 1, 0x32, 1, 0x27}) ==
          "offset 2: stack underflow: pick needs 2 entries, has 1");
    CHECK(reject({0x21, 0, 9, 0x27}) == "offset 0: jump to offset 9 is outside the expression");
    CHECK(reject({0x21, 0, 2, 0x27}) == "offset 0: jump to offset 2 lands inside an instruction");
    CHECK(reject({0x26, 0, 99, 0x27}) ==
          "offset 0: register 99 does not exist (the target has 58)");
    // if_goto joins two paths with different depths
    CHECK(reject({0x22, 1, 0x22, 1, 0x20, 0, 9, 0x22, 5, 0x27}) ==
          "offset 7: stack depth at offset 9 differs between paths (1 and 2)");
    // a loop that grows the stack is caught either way
    CHECK(!validate(std::vector<std::uint8_t>{0x22, 1, 0x21, 0, 0, 0x27}, kRegisterCount).ok());
    Limits small;
    small.max_stack = 3;
    CHECK(reject(Ax().k(1).k(2).k(3).k(4).end().b, small) ==
          "offset 6: stack depth 4 exceeds the limit 3");
    small.max_length = 4;
    CHECK(reject(Ax().k(1).k(2).end().b, small) ==
          "offset 0: expression is 5 bytes, the limit is 4");
    // printf: the format must parse and agree with the argument count
    CHECK(reject(Ax().k(0).k(0).k(0).printf(2, "%d").end().b) ==
          "offset 6: printf format has 1 conversions but 2 arguments");
    CHECK(reject(Ax().k(0).k(0).k(0).printf(1, "%f").end().b) ==
          "offset 6: printf: floating-point conversion %f is not supported");
    CHECK(reject(Ax().k(0).k(0).k(0).printf(1, "%n").end().b) ==
          "offset 6: printf: conversion %n at byte 0 is not supported");
    CHECK(reject(Ax().k(0).k(0).printf(0, "\\q").end().b) ==
          "offset 4: printf: unrecognized escape at byte 0");
    CHECK(reject(Ax().k(0).k(0).k(0).printf(1, "%*d").end().b) ==
          "offset 6: printf: '*' width or precision at byte 0 is not supported");
    CHECK(reject(Ax().k(0).k(0).printf(1, "%d").end().b) ==
          "offset 4: stack underflow: printf needs 3 entries, has 2");
    CHECK(reject({0x22, 0, 0x22, 0, 0x34, 0, 0, 3, 'a', 'b', 'c', 0x27}) ==
          "offset 4: printf format is not NUL-terminated");
    CHECK(reject({0x22, 0, 0x22, 0, 0x34, 0, 0, 9, 'a', 0}) == "offset 4: truncated printf format");
}

TEST_CASE("unreachable code is decoded but not checked for depth") {
    // goto over a lone add that would underflow
    const Program p = must_validate({0x21, 0, 4, 0x02, 0x22, 7, 0x27});
    CHECK_FALSE(p.insns()[1].reachable);
    CHECK(value_of({0x21, 0, 4, 0x02, 0x22, 7, 0x27}) == 7);
}

TEST_CASE("disassembly matches gdb's maint agent layout") {
    const Program p = must_validate({0x24, 0x00, 0x4a, 0x40, 0xd0, 0x19, 0x16, 0x20, 0x22, 0x02,
                                     0x07, 0x16, 0x20, 0x22, 0x00, 0x13, 0x27});
    CHECK(disassemble(p) == "  0  const32 4866256\n"
                            "  5  ref32\n"
                            "  6  ext 32\n"
                            "  8  const8 2\n"
                            " 10  rem_signed\n"
                            " 11  ext 32\n"
                            " 13  const8 0\n"
                            " 15  equal\n"
                            " 16  end\n");
    const std::vector<std::uint8_t> bad = {0x22, 1, 0x99};
    CHECK(disassemble(bad) == "  0  const8 1\n  2  (bad: unknown opcode 0x99)\n");
    CHECK(disassemble(Ax().k(0).k(0).printf(0, "hi\\n").end().b) ==
          "  0  const8 0\n  2  const8 0\n  4  printf 0 \"hi\\n\"\n 13  end\n");
}
