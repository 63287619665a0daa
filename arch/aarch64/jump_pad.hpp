// AArch64 fast-tracepoint jump pads: the code a tracepoint's `B` leads to. It saves the
// thread's general registers on the thread's own stack in gdb's `g` layout, calls the
// in-process collector, restores them and NZCV, runs the displaced instruction (relocate(),
// placed right after the pad's own code) and branches back. No locks, no system calls. With a
// gate (JumpPadSpec::gate) it first reads the agent's tracing flag, x16 alone saved below sp:
// while tracing is off it runs only the displaced instruction.
//
// The collector is called as
//     void collector(std::uint64_t argument, std::uint8_t* block, std::uint64_t frame,
//                    const std::uint8_t* anchor);
// block: the core of a `g` block, all of it stored by the pad: x0..x30, sp (the thread's, as
//        at the tracepoint), pc (the tracepoint address), cpsr (NZCV: what EL0 can read).
//        The collector must not change it: the pad restores the registers from it.
// frame: block's address (with stage_vector_state: below the saved state, under the block);
//        the pad's return address is at frame - 8 (where tpagent looks for it to run a
//        thread it stopped inside the collector to its return).
// anchor: block's address too (the pad leaves nothing for the collector to complete).
//
// Stack of the thread while the collector runs (O = the thread's sp at the tracepoint; no red
// zone on AArch64: sp moves first, a signal may be delivered at any instruction):
//
//     O                 +---------------------------+
//                       | core block (272 bytes)    |  x0..x30, sp, pc, cpsr, padding
//     S+16 = frame      +---------------------------+  <- x1, x2, x3
//                       | return address            |
//                       | (unused)                  |
//     S = O - 288       +---------------------------+  <- sp at the call (16-byte aligned)
//
// With agent stacks (AgentStacks, for Go's goroutines) the pad first moves to the thread's
// agent stack, the thread's sp and its words' address pushed there, and O above is that
// stack's top less 16; the thread's stack is not written.
//
// The collector uses general registers only (built so), so no FP/SIMD or SVE state is saved,
// except for tracepoints that collect those registers (stage_vector_state): then the pad
// saves it below the block and the frame moves below it (pad_vector_state.hpp); the block's
// address is then x1 and x3, and the return address is still at frame - 8.
#pragma once
#include "arch/aarch64/pad_vector_state.hpp"
#include "arch/arch.hpp"
#include "base/result.hpp"
#include <cstddef>
#include <cstdint>
#include <span>

namespace tpagent::arch::aarch64 {

// Bytes of the core of gdb's aarch64 `g` block: x0..x30, sp, pc (8 each) and cpsr (4).
inline constexpr std::size_t kCoreBlockBytes = 33 * 8 + 4;

struct JumpPadSpec {
    std::uint64_t pad_address = 0;               // where EmittedJumpPad::code will be written
    std::uint64_t tracepoint_address = 0;        // where EmittedJumpPad::patch will be written
    std::uint64_t collector = 0;                 // absolute address of the collector function
    std::uint64_t argument = 0;                  // its first argument (the tracepoint's record)
    std::span<const std::uint8_t> original_code; // at least the 4 bytes at tracepoint_address
    bool branch_target_guarded = false;          // the code is in a PROT_BTI mapping
    bool stage_vector_state = false;             // save FP/SIMD (and SVE) state for the collector
    PadVectorState vector_state;                 // what the CPU has of it
    AgentStacks agent_stacks;                    // with a pool: the pad runs on an agent stack
    // Nonzero (and no agent stacks): a 4-byte flag in the program (the agent's `tracing`);
    // while it is 0 the pad runs only the displaced instruction.
    std::uint64_t gate = 0;
    // With a gate: the tracepoint's frame written by the pad's front itself
    // (inline_collection.hpp), falling back to the code that calls the collector. One that
    // cannot be made is left out.
    const InlineCollection* inline_collection = nullptr;
};

Result<EmittedJumpPad> emit_jump_pad(const JumpPadSpec& spec);

// BTI (any of its forms) and PACIASP/PACIBSP, which BTI also accepts as landing pads.
bool landing_pad(std::uint32_t insn);

} // namespace tpagent::arch::aarch64
