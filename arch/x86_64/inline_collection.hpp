// The front of an x86-64 fast tracepoint's pad, before the pad jump_pad.cpp builds: the gate
// (a pad whose tracing flag is 0 runs only the displaced instructions, its registers, flags and
// stack as they were), then, for a tracepoint collected in line (arch::InlineCollection), code
// made for that tracepoint alone that writes its frame into the thread's chunk of the shared
// buffer: the checks first, every one a way back to the pad that calls the agent's collector
// with nothing changed; then the record, straight-line, from the live registers and the few the
// front saved. Only rax, rcx, rdx, rsi, rdi, r9, r10, r11 and the flags are saved (lahf/seto,
// put back by sahf: no popfq); DF is never changed, no vector register is touched.
//
// Stack while the front runs (O = the thread's rsp at the tracepoint):
//
//     O          red zone, 128 bytes, untouched
//     O-136      rcx
//     O-144      rflags (pushfq), only where the frame holds registers
//                rax, then the flags as lahf/seto left them in ax, rdx, rsi, rdi, r9, r10, r11
//
// A fault reading a range (a mapping gone since tpagent listed it) goes on at PadFront::copy's
// fault: the frame is left unwritten and counted as dropped.
#pragma once
#include "arch/arch.hpp"
#include "arch/x86_64/x86_writer.hpp"
#include "base/result.hpp"
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace tpagent::arch::x86_64 {

// Where the core registers go in an R block (block_completion()'s offsets) and its size.
struct InlineCore {
    std::uint32_t pc_offset = 0;
    std::uint32_t flags_offset = 0;
    std::uint32_t constants_offset = 0;
    std::uint32_t constants_size = 0;
    std::uint32_t bytes = 0;
};

// What emit_jump_pad patches once it knows where its own code and the relocated instructions
// are: rel32 fields of the front.
struct PadFront {
    std::vector<std::size_t> to_relocated;
    std::optional<PadCopyRange> copy;
};

// The front, emitted at the writer's position. `gate`: the flag's address (nonzero);
// `collection`: null for the gate alone.
Result<PadFront> emit_pad_front(x86_writer::X86Writer& a, std::uint64_t gate,
                                const InlineCollection* collection,
                                std::uint64_t tracepoint_address, const InlineCore& core);

} // namespace tpagent::arch::x86_64
