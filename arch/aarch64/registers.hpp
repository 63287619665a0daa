// gdb's aarch64-linux registers (features org.gnu.gdb.aarch64.core and .fpu) and the kernel's
// regsets behind them: NT_PRSTATUS (user_pt_regs), NT_PRFPREG (user_fpsimd_state), and
// NT_ARM_SYSTEM_CALL (the syscall number a restart would use).
#pragma once
#include "arch/arch.hpp"
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tpagent::arch::aarch64 {

inline constexpr int kSpRegnum = 31;
inline constexpr int kPcRegnum = 32;
inline constexpr int kCpsrRegnum = 33;
inline constexpr int kFirstVRegnum = 34;
inline constexpr int kFpsrRegnum = 66;
inline constexpr int kFpcrRegnum = 67;
inline constexpr std::size_t kPauthDmaskRegnum = 68; // and pauth_cmask: where the CPU has them
inline constexpr int kFpRegnum = 29;                 // x29, the frame pointer
inline constexpr int kLrRegnum = 30;

// Snapshot layout: gpr = user_pt_regs (x0..x30, sp, pc, pstate) then the 4-byte syscall number;
// xstate = user_fpsimd_state (v0..v31, fpsr, fpcr, 8 reserved bytes), the two
// pointer-authentication masks (NT_ARM_PAC_MASK, zero where the CPU has none), tpidr
// (NT_ARM_TLS). Only the FP/SIMD part is ever written back.
inline constexpr std::size_t kPtRegsBytes = 34 * 8;
inline constexpr std::size_t kSyscallNoOffset = kPtRegsBytes;
inline constexpr std::size_t kGprBytes = kPtRegsBytes + 4;
inline constexpr std::size_t kFpsimdBytes = 32 * 16 + 16;
inline constexpr std::size_t kPacMaskOffset = kFpsimdBytes;    // NT_ARM_PAC_MASK: 2 x 8 bytes
inline constexpr std::size_t kTlsOffset = kPacMaskOffset + 16; // NT_ARM_TLS: tpidr
inline constexpr std::size_t kXstateBytes = kTlsOffset + 8;

std::span<const RegisterDesc> registers();
std::size_t g_size();
void snapshot_to_g(const RegisterSnapshot& s, std::span<std::uint8_t> g,
                   std::vector<bool>& available);
void g_to_snapshot(std::span<const std::uint8_t> g, RegisterSnapshot& s);
std::string target_xml();

std::uint64_t x(const RegisterSnapshot& s, int n); // n = 31: sp, 32: pc
void set_x(RegisterSnapshot& s, int n, std::uint64_t value);

Status read_general_regsets(pid_t tid, RegisterSnapshot& out);
Status read_all_regsets(pid_t tid, RegisterSnapshot& out);
Status write_general_regsets(pid_t tid, const RegisterSnapshot& in);
Status write_all_regsets(pid_t tid, const RegisterSnapshot& in);

} // namespace tpagent::arch::aarch64
