// A validated agent expression. Only validate() makes one, so everything that runs a
// Program (interpreter, compiled code) may skip the checks the validator already did.
#pragma once
#include "bytecode/opcodes.hpp"
#include "bytecode/printf_format.hpp"
#include "base/result.hpp"
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tpagent::bytecode {

// Hard ceiling for Limits::max_stack: the interpreter keeps its stack in a fixed array.
inline constexpr unsigned kStackCeiling = 256;

struct Limits {
    std::size_t max_length = 8192;            // bytes of bytecode
    unsigned max_stack = 100;                 // entries, on every path (<= kStackCeiling)
    std::uint32_t max_backward_jumps = 10000; // taken backward jumps per evaluation
};

// One decoded instruction. Operands are decoded from their big-endian encoding.
struct Insn {
    std::uint64_t imm = 0;    // const value, ext/zero_ext bits, reg/tsv number, trace size,
                              // pick depth, printf: index into Program::formats()
    std::uint32_t target = 0; // goto/if_goto: index of the destination instruction
                              // printf: argument count
    std::uint32_t offset = 0; // byte offset of the opcode in the expression
    std::uint16_t depth = 0;  // stack entries before this instruction runs
    Op op = Op::End;
    bool reachable = false; // false: no path from the start reaches it; never run
};

class Program {
  public:
    std::span<const Insn> insns() const { return insns_; }
    std::span<const std::uint8_t> bytes() const { return bytes_; }
    const std::vector<PrintfFormat>& formats() const { return formats_; }
    unsigned max_depth() const { return max_depth_; }
    std::uint32_t backward_jump_budget() const { return backward_jump_budget_; }
    // Which host facilities the expression may use; lets callers skip set-up.
    bool uses_registers() const { return uses_registers_; }
    bool collects() const { return collects_; }

  private:
    friend Result<Program> validate(std::span<const std::uint8_t>, unsigned, const Limits&);
    Program() = default;

    std::vector<Insn> insns_;
    std::vector<std::uint8_t> bytes_;
    std::vector<PrintfFormat> formats_;
    unsigned max_depth_ = 0;
    std::uint32_t backward_jump_budget_ = 0;
    bool uses_registers_ = false;
    bool collects_ = false;
};

// Checks `bytes` once, before a tracepoint is accepted: known opcodes, whole operands,
// jumps onto instruction starts inside the expression, no stack underflow, the same stack
// depth on every path into an instruction and at most limits.max_stack entries, every path
// ending in `end`, register numbers below register_count. Errors are ErrorCode::BadBytecode
// with text "offset N: reason".
Result<Program> validate(std::span<const std::uint8_t> bytes, unsigned register_count,
                         const Limits& limits = {});

} // namespace tpagent::bytecode
