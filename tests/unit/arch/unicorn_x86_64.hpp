// The x86-64 general registers as Unicorn names them, for the tests that run code in it: in
// gdb's numbering (the order of the g block), with gdb's names.
#pragma once
#include <array>
#include <unicorn/unicorn.h>

namespace tpagent::test {

inline constexpr std::array<int, 16> kGprs = {
    UC_X86_REG_RAX, UC_X86_REG_RBX, UC_X86_REG_RCX, UC_X86_REG_RDX, UC_X86_REG_RSI, UC_X86_REG_RDI,
    UC_X86_REG_RBP, UC_X86_REG_RSP, UC_X86_REG_R8,  UC_X86_REG_R9,  UC_X86_REG_R10, UC_X86_REG_R11,
    UC_X86_REG_R12, UC_X86_REG_R13, UC_X86_REG_R14, UC_X86_REG_R15};
inline constexpr const char* kGprNames[16] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi",
                                              "rbp", "rsp", "r8",  "r9",  "r10", "r11",
                                              "r12", "r13", "r14", "r15"};

} // namespace tpagent::test
