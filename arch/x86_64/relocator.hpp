// x86-64 instruction relocation: the instructions a tracepoint displaces from FROM run instead
// from a pad at TO, then execution continues at FROM + covered.
//
// What each displaced instruction becomes in the pad (rel32 = "in rel32 range of its use";
// abs = `jmp [rip+0]; dq target`, 14 bytes, when it is not):
//  - no dependence on rip          : copied byte for byte.
//  - rip-relative memory operand   : copied with disp32 re-aimed at the same address; an address
//                                    beyond ±2 GiB of the pad is an Unsupported error.
//  - jmp rel8/rel32                : jmp rel32, or abs.
//  - jcc rel8/rel32                : jcc rel32, or `j!cc +14; abs`.
//  - loop/loope/loopne/jrcxz/jecxz : the same instruction (prefixes kept) with rel8 = 2, then
//                                    `jmp short over; <jmp rel32 or abs to the target>; over:`.
//  - call rel32, last displaced    : `call T` to a trampoline placed after the jump back,
//                                    T: `mov [rsp], FROM+len` (one qword if it fits a sign-
//                                    extended imm32, else two dwords); `jmp target` (rel32/abs).
//  - call r/m, last displaced      : `push r/m` (same operand, rip re-aimed: the operand is read
//                                    before the stack is written, as the CPU does); `call T`,
//                                    T: `push [rsp+8]; mov [rsp+16], FROM+len; lea rsp,[rsp+16];
//                                    jmp [rsp-16]` (reads the red zone, which signals skip;
//                                    the two qwords below the callee's rsp are left as scratch).
//    A real `call` into a trampoline (instead of push + jmp) keeps the return-stack predictor in
//    step: the callee's `ret` mispredicts once rather than every return up the stack. No
//    register or flag is touched.
//  - call not last displaced       : its return address would land in overwritten bytes, so a
//                                    native call returning into the pad is emitted instead
//                                    (call rel32, `call [rip+2]; jmp +8; dq target`, or the r/m
//                                    form re-aimed).
//  - branch targets inside (FROM, FROM+covered) go to the matching place in the pad; FROM itself
//    stays FROM (the tracepoint is hit again, as it would be).
//  - then the jump back to FROM + covered: jmp rel32, or abs.
// Refused (ErrorCode::Unsupported): xbegin (its abort address), far calls, branches with an
// operand-size prefix, targets inside a displaced instruction, undecodable bytes.
// `syscall` is moved as is: it leaves the pad address in rcx, which the ABI says is clobbered.
#pragma once
#include "arch/relocation.hpp"
#include "base/result.hpp"
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace tpagent::arch::x86_64 {

// Length of the instruction at the start of `bytes` (64-bit mode); `addr` is for the error text.
Result<std::size_t> instruction_length(std::span<const std::uint8_t> bytes, std::uint64_t addr);

// The absolute addresses the rip-relative operands (branch targets, [rip+disp] memory) of the
// whole instructions in `bytes` (at `addr`) reach, in order; Unsupported if `bytes` does not
// decode to whole instructions.
Result<std::vector<std::uint64_t>> pc_relative_targets(std::span<const std::uint8_t> bytes,
                                                       std::uint64_t addr);

using arch::Boundary;
using arch::from_offset_of;
using arch::pad_offset_of;
using arch::Relocated;

// Relocates the whole instructions at the start of `code` (which lives at `from`) that cover at
// least `min_bytes` (1 for a breakpoint, 5 for a jump), for a pad at `to`.
Result<Relocated> relocate(std::span<const std::uint8_t> code, std::uint64_t from, std::uint64_t to,
                           std::size_t min_bytes);

} // namespace tpagent::arch::x86_64
