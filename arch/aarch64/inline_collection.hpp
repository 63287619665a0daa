// The front of an arm64 fast tracepoint's pad, after its gate and before the pad jump_pad.cpp
// builds: for a tracepoint collected in line (arch::InlineCollection), code made for that
// tracepoint alone that writes its frame into the thread's chunk of the shared buffer, as the
// x86-64 front does (arch/x86_64/inline_collection.hpp). The checks come first, every one a way
// back to the pad that calls the agent's collector with nothing changed; then the record,
// straight-line, from the live registers and the few the front saved, published by a
// store-release of the chunk's committed bytes.
//
// Stack while the front runs (O = the thread's sp at the tracepoint, 16-byte aligned; arm64
// has no red zone, so sp moves first):
//
//     O                  +------------------------------------------+
//                        | x0..x7, x16, x17, NZCV (and x8..x15, x18, |
//                        | x30 with a condition, which it calls)     |
//     O - F + area       +------------------------------------------+
//                        | with a condition: its register block     |
//                        | (gdb's offsets), its context and result  |
//     O - F = sp         +------------------------------------------+
//
// A fault reading a range (a mapping gone since tpagent listed it) goes on at copy's fault:
// the frame is left unwritten and counted as dropped.
#pragma once
#include "arch/aarch64/emitter.hpp"
#include "arch/arch.hpp"
#include "base/result.hpp"
#include <cstddef>
#include <optional>
#include <vector>

namespace tpagent::arch::aarch64 {

// What emit_jump_pad links once it knows where the relocated instruction is.
struct PadFront {
    std::vector<std::size_t> to_relocated; // B instructions, their offsets in the emitter
    std::optional<PadCopyRange> copy;
};

// The front, emitted at the emitter's position (the gate already passed: every register as at
// the tracepoint); it ends where the pad that calls the agent's collector begins.
Result<PadFront> emit_pad_front(Emitter& e, const InlineCollection& c,
                                std::uint64_t tracepoint_address);

} // namespace tpagent::arch::aarch64
