// x86-64 fast-tracepoint jump pads: the code a tracepoint's `jmp rel32` leads to. It saves the
// thread's state on the thread's own stack, calls the in-process collector with a register
// block in gdb's `g` layout, restores every register and flag, runs the displaced instructions
// (relocated by relocate(), placed right after the pad's own code) and jumps back.
// No locks, no system calls: all state lives on the stack of the thread that hit.
//
// The collector is called as
//     void collector(std::uint64_t argument, std::uint8_t* block, std::uint64_t frame,
//                    const std::uint8_t* anchor);
// block: the first RegisterLayout::g_size() bytes of a `g` block. The pad stores only what
//        changes at every hit, rax..r15 but rsp; the rest of the core part is the collector's
//        to fill when a hit reads registers (block_completion(): rip = the tracepoint address,
//        rsp = anchor + 136, eflags = the 4 bytes at the anchor, the segment selectors, the
//        same at every hit of a thread), as are the FP/vector part (x87, SSE, AVX...,
//        converted from the save area at frame + 16) and orig_rax, fs_base, gs_base. Bytes
//        0..127 are also what the pad restores the general registers from: the collector must
//        not change them.
// frame: the rsp the pad calls with: the return address is at frame - 8.
// anchor: where the pad pushed rflags.
// The save area: XSAVE (standard, non-compacted format, XSTATE_BV valid, 64-byte aligned) or
//        the 512-byte FXSAVE area, per JumpPadSpec::state_save.
//
// Stack of the thread while the collector runs (O = the thread's rsp at the tracepoint;
// addresses grow upwards; T = round_up(g_size, 8) - 128):
//
//     O                 +---------------------------+
//                       | red zone, 128 bytes       |  untouched
//     O-128             +---------------------------+
//                       | rflags (pushfq)           |  <- rcx (anchor); restored from here
//     O-136             +---------------------------+
//                       | g block bytes 128..g_size |  rip, eflags, segments, FP/vector
//                       |  (T bytes)                |  part (collector)
//     B+128             +---------------------------+
//                       | g block bytes 0..127      |  pushed r15..r8, (rsp slot), rbp,
//                       |  rax..r15                 |  rdi, rsi, rdx, rcx, rbx, rax
//     B = O-264-T       +---------------------------+  <- rsi
//                       | 0..63 bytes of alignment  |
//     A                 +---------------------------+  64-byte aligned
//                       | XSAVE / FXSAVE area       |
//                       +---------------------------+
//                       | B (restore pointer)       |
//     A-16              | (unused)                  |  <- rdx (frame); `call` pushes below
//                       +---------------------------+
//
// Before the call the pad clears DF (the ABI requires it; a tracepoint inside `std ... cld`
// code would otherwise run the collector's memcpy backwards) and, when AVX state is saved,
// executes vzeroupper (the collector's SSE code would pay for dirty upper halves). The x87
// stack and MXCSR are left as the program had them: the collector does no floating point.
#pragma once
#include "arch/arch.hpp"
#include "arch/relocation.hpp"
#include "arch/x86_64/cpu_features.hpp"
#include "arch/x86_64/registers.hpp"
#include "base/result.hpp"
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tpagent::arch::x86_64 {

// The jump written at a fast tracepoint, and the shortest instruction span it may replace
// (the `qTMinFTPILen` answer).
inline constexpr std::size_t kJumpLength = 5;
constexpr std::size_t min_insn_len() {
    return kJumpLength;
}

// `jmp rel32` at `from` to `to`; Unsupported when `to` is beyond ±2 GiB.
Result<std::array<std::uint8_t, kJumpLength>> encode_jump(std::uint64_t from, std::uint64_t to);

// How the pad saves the vector/FP state the collector may clobber.
struct StateSave {
    // None: the collector uses general registers only (built so), nothing is saved.
    enum class Kind : std::uint8_t { Xsave, Fxsave, None };
    Kind kind = Kind::Fxsave;
    std::uint64_t mask = 0; // XSAVE requested-feature bitmap (EDX:EAX); ignored for FXSAVE
    std::uint32_t size = 0; // bytes of the save area for `mask` (>= 576 for XSAVE, 512 FXSAVE)
};

// XSAVE of every component the agent knows (XCR0 & kSupportedXcr0: not AMX tiles, whose
// XFD trap would turn an XRSTOR into a signal) when the OS enabled it, else FXSAVE.
// `os_xsave`: CPUID.1:ECX.OSXSAVE on this machine.
StateSave state_save_for(const CpuFeatures& cpu, bool os_xsave);
// The same for the running CPU.
StateSave detect_state_save();

// Where the save area starts relative to the collector's `frame` argument (A = rdx + 16).
inline constexpr std::int32_t kSavedStateFrameOffset = 16;

// A pad's save area (XSAVE with `mask`, or FXSAVE when it is 512 bytes) as the kernel gives
// NT_X86_XSTATE, which RegisterLayout::snapshot_to_g reads: the software bytes say which
// components it holds, and the x87 and SSE parts of components XSTATE_BV marks as in their
// initial state (which XSAVE need not write, leaving the stack's old bytes) get that state.
std::vector<std::uint8_t> pad_state_as_kernel_xstate(std::span<const std::uint8_t> area,
                                                     std::uint64_t mask);

struct JumpPadSpec {
    std::uint64_t pad_address = 0;        // where JumpPad::code will be written
    std::uint64_t tracepoint_address = 0; // where JumpPad::patch will be written
    std::uint64_t collector = 0;          // absolute address of the collector function
    std::uint64_t argument = 0;           // its first argument (e.g. the tracepoint's record)
    // The original bytes at tracepoint_address: at least the whole instructions covering
    // kJumpLength bytes (kJumpLength + 15 is always enough).
    std::span<const std::uint8_t> original_code;
    const RegisterLayout* layout = nullptr; // `g` offsets and size
    StateSave state_save;
    // Store the whole core (rsp, rip, eflags, the segments) in the pad rather than leave it to
    // the collector (block_completion()).
    bool stage_full_core = false;
    // Reserve only the core of the `g` block (core_block_bytes()) instead of all of it: for a
    // collector that converts no FP/vector state, so the pad touches less stack.
    bool core_block_only = false;
    // Restore the flags with sahf (+ OF and DF by hand) instead of popfq, which is microcoded
    // and costs about as much as the rest of the pad's exit. Needs CPUID LAHF-SAHF in 64-bit
    // mode. Only the arithmetic flags and DF are restored: nothing the pad or a collector runs
    // changes the others (TF, AC, ...), so they keep their live values.
    bool flags_by_sahf = false;
    // With a pool: the pad switches to the thread's agent stack before it writes anything and
    // leaves the thread's stack untouched (arch::AgentStacks). Needs stage_full_core and
    // lahf/sahf. The switch uses four words at fs:thread_slots: the thread's rcx while rcx
    // holds the stack, the stack's top (0 while the thread is in the pad: a nested hit, from a
    // signal handler, takes a stack of its own), and rax and the flags while a first hit
    // takes a stack from the pool. A hit that finds the pool used up runs only the displaced
    // instructions and is counted at pool + 8.
    AgentStacks agent_stacks;
    // Bytes the displaced instructions cover at least (0: kJumpLength). Shorter: JumpPad::patch
    // is left empty (the jump goes elsewhere: arch::JumpPadRequest::displaced_minimum).
    std::size_t displaced_minimum = 0;
    // Nonzero: the pad's front (inline_collection.hpp) first reads this 4-byte flag and, while
    // it is 0, runs only the displaced instructions (no flag changes). Not on agent stacks.
    std::uint64_t gate = 0;
    // With a gate: the tracepoint's frame written by the front itself, falling back to the
    // code below (which calls the collector). A front that cannot be made, or a CPU without
    // lahf/sahf in 64-bit mode (the front restores the flags with sahf), is the gate alone.
    const InlineCollection* inline_collection = nullptr;
};

// Whether this CPU has lahf/sahf in 64-bit mode.
bool has_lahf_sahf();

// Bytes of the `g` block's core (rax..r15, rip, eflags, segments); 0 if the layout does not
// have them where the pad expects.
std::size_t core_block_bytes(const RegisterLayout& layout);

// What the collector fills into the core (the pad leaves it): see the header comment. Empty
// when the layout does not have the core where the pad expects.
Architecture::FastBlockCompletion block_completion(const RegisterLayout& layout);

struct JumpPad {
    // Bytes for pad_address: the pad's own code, then at relocated_offset the displaced
    // instructions and their jump back.
    std::vector<std::uint8_t> code;
    std::size_t relocated_offset = 0;
    // relocate()'s answer for a pad at pad_address + relocated_offset (its pad offsets are
    // relative to relocated_offset): covered bytes, instruction boundaries.
    Relocated relocated;
    // Bytes for tracepoint_address: the jump to the pad, then int3 up to relocated.covered.
    std::vector<std::uint8_t> patch;
    // Offset in `code` just after the collector call (the return address a thread inside the
    // collector has on its stack).
    std::size_t return_offset = 0;
    // The most the pad itself uses below the thread's rsp (red zone included; the collector's
    // own frame comes on top); on an agent stack, below its top.
    std::size_t stack_bytes = 0;
    // Where the front copies program memory in line (JumpPadSpec::inline_collection).
    std::optional<PadCopyRange> copy;
};

Result<JumpPad> emit_jump_pad(const JumpPadSpec& spec);

} // namespace tpagent::arch::x86_64
