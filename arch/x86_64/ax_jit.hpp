// x86-64 backend of the agent-expression compiler (see bytecode/compiler.hpp).
//
// Code shape: each stack entry has a fixed home chosen by its depth (the validator proved
// the depth of every instruction is path-independent): entries 0-3 live in r8-r11,
// 4-9 in rbx, r12-r15, rbp, deeper ones in the frame. Constants stay virtual until they
// must be materialised, so `x % 2` becomes a shift-and-mask sequence and `const; ref`
// an immediate address. rdi holds the Context, rsi the EvalOut. Loads inside the
// Context's direct window are inline; everything else calls the rt:: helpers at the
// addresses translate() is given (mov rax, imm; call rax), saving live caller-saved homes
// around the call. Jumps are rel32 inside the code and no operand is rip-relative.
#pragma once
#include "bytecode/compiler.hpp"

namespace tpagent::arch::x86_64 {

const bytecode::CompilerBackend& ax_backend();

} // namespace tpagent::arch::x86_64
