// How one instruction can move the pc: what the software branch recorder needs to find where a
// block of sequentially executed instructions ends.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>

namespace tpagent::arch {

enum class FlowKind {
    Sequential,  // the pc moves to the next instruction
    System,      // syscall, int, svc: the next instruction, or where the kernel sends it
    Conditional, // jcc, loop, cbz, tbz, b.cond: taken or falls through
    Jump,        // always taken: jmp, b, br
    Call,        // always taken: call, bl, blr
    Return,      // always taken: ret
};

struct FlowInstruction {
    std::size_t length = 0;
    FlowKind kind = FlowKind::Sequential;
    std::optional<std::uint64_t> target; // a direct branch's destination
};

} // namespace tpagent::arch
