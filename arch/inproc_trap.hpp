// For the in-process agent's SIGTRAP handler (inproc/orphan_traps.cpp), per ISA: whether a trap
// is a breakpoint instruction's or a single step's, where the breakpoint is, resuming there, and
// whether a breakpoint instruction is (still) at an address. One header, so that inproc/ may
// include it without the rest of arch/.
#pragma once
#include <csignal>
#include <cstdint>
#include <ucontext.h>

namespace tpagent::arch::inproc_trap {

#if defined(__x86_64__)
// int3 (0xcc) traps with si_code SI_KERNEL, the pc past it.
inline constexpr std::uint64_t kBreakpointBytes = 1;
inline bool breakpoint_trap(const siginfo_t* info) {
    return info->si_code == SI_KERNEL;
}
inline bool step_trap(const siginfo_t* info) {
    return info->si_code == TRAP_TRACE;
}
inline std::uint64_t breakpoint_address(const void* context) {
    const auto* uc = static_cast<const ucontext_t*>(context);
    return static_cast<std::uint64_t>(uc->uc_mcontext.gregs[REG_RIP]) - 1;
}
inline void resume_at(void* context, std::uint64_t pc) {
    static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(pc);
}
inline bool breakpoint_at(std::uint64_t addr) {
    return *reinterpret_cast<const volatile std::uint8_t*>(addr) == 0xcc;
}
#elif defined(__aarch64__)
// BRK #imm traps with si_code TRAP_BRKPT, the pc on it.
inline constexpr std::uint64_t kBreakpointBytes = 4;
inline bool breakpoint_trap(const siginfo_t* info) {
    return info->si_code == TRAP_BRKPT;
}
inline bool step_trap(const siginfo_t* info) {
    return info->si_code == TRAP_TRACE || info->si_code == TRAP_HWBKPT;
}
inline std::uint64_t breakpoint_address(const void* context) {
    return static_cast<const ucontext_t*>(context)->uc_mcontext.pc;
}
inline void resume_at(void* context, std::uint64_t pc) {
    static_cast<ucontext_t*>(context)->uc_mcontext.pc = pc;
}
inline bool breakpoint_at(std::uint64_t addr) {
    const std::uint32_t insn = *reinterpret_cast<const volatile std::uint32_t*>(addr);
    return (insn & 0xffe0001fU) == 0xd4200000U; // BRK #imm16
}
#else
#error "no in-process trap support for this architecture"
#endif

} // namespace tpagent::arch::inproc_trap
