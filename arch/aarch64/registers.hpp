// gdb's aarch64-linux registers (features org.gnu.gdb.aarch64.core, then .fpu or, where the CPU
// has SVE, .sve; .pauth; .tls) and the kernel's regsets behind them: NT_PRSTATUS (user_pt_regs),
// NT_PRFPREG (user_fpsimd_state), NT_ARM_SVE, NT_ARM_PAC_MASK, NT_ARM_TLS and NT_ARM_SYSTEM_CALL
// (the syscall number a restart would use).
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
inline constexpr int kFirstVRegnum = 34; // v0, or z0 with SVE
inline constexpr int kFirstPRegnum = 68; // p0..p15, ffr, vg: with SVE only
inline constexpr int kFpsrRegnum = 66;
inline constexpr int kFpcrRegnum = 67;
inline constexpr int kFpRegnum = 29; // x29, the frame pointer
inline constexpr int kLrRegnum = 30;

// Snapshot layout: gpr = user_pt_regs (x0..x30, sp, pc, pstate) then the 4-byte syscall number;
// xstate = user_fpsimd_state (v0..v31, fpsr, fpcr, 8 reserved bytes), the two
// pointer-authentication masks (NT_ARM_PAC_MASK, zero where the CPU has none), tpidr
// (NT_ARM_TLS); with SVE, then a header (the thread's vector length, whether it was in SVE mode)
// and z0..z31, p0..p15, ffr in NT_ARM_SVE's order. Only FP/SIMD and SVE state is written back.
inline constexpr std::size_t kPtRegsBytes = 34 * 8;
inline constexpr std::size_t kSyscallNoOffset = kPtRegsBytes;
inline constexpr std::size_t kGprBytes = kPtRegsBytes + 4;
inline constexpr std::size_t kFpsimdBytes = 32 * 16 + 16;
inline constexpr std::size_t kPacMaskOffset = kFpsimdBytes;    // NT_ARM_PAC_MASK: 2 x 8 bytes
inline constexpr std::size_t kTlsOffset = kPacMaskOffset + 16; // NT_ARM_TLS: tpidr
inline constexpr std::size_t kXstateBytes = kTlsOffset + 8;    // without SVE
inline constexpr std::size_t kSveOffset = kXstateBytes;
inline constexpr std::size_t kSveHeaderBytes = 8; // u16 vector length (bytes), u16 SVE mode
inline constexpr std::size_t kMaxSveVl = 256;     // bytes: the architecture's limit

// The registers one CPU has: gdb's numbering and g layout depend on them.
struct Layout {
    Layout() = default;
    Layout(Layout&&) = default; // regs point into names' strings: moved, never copied
    Layout& operator=(Layout&&) = default;
    Layout(const Layout&) = delete;
    Layout& operator=(const Layout&) = delete;

    unsigned sve_vl = 0; // vector length in bytes; 0: no SVE
    bool pauth = false;
    std::vector<std::string> names;
    std::vector<RegisterDesc> regs;
    std::size_t g_size = 0;
    std::size_t xstate_bytes = 0; // a full snapshot's
    std::size_t pauth_regnum = 0; // pauth_dmask, then pauth_cmask (when pauth)
    std::size_t tpidr_regnum = 0;
};
Layout make_layout(unsigned sve_vl, bool pauth);
const Layout& host_layout(); // this CPU's (tpagent runs on the board it debugs)

std::span<const RegisterDesc> registers();
std::size_t g_size();
void snapshot_to_g(const Layout& layout, const RegisterSnapshot& s, std::span<std::uint8_t> g,
                   std::vector<bool>& available);
void g_to_snapshot(const Layout& layout, std::span<const std::uint8_t> g, RegisterSnapshot& s);
std::string target_xml(const Layout& layout);

std::uint64_t x(const RegisterSnapshot& s, int n); // n = 31: sp, 32: pc
void set_x(RegisterSnapshot& s, int n, std::uint64_t value);

// The SVE part of a snapshot from NT_ARM_SVE's payload (either mode), and back.
void sve_from_regset(const Layout& layout, std::span<const std::uint8_t> regset,
                     RegisterSnapshot& s);
std::vector<std::uint8_t> sve_to_regset(const Layout& layout, const RegisterSnapshot& s);

Status read_general_regsets(pid_t tid, RegisterSnapshot& out);
Status read_all_regsets(const Layout& layout, pid_t tid, RegisterSnapshot& out);
Status write_general_regsets(pid_t tid, const RegisterSnapshot& in);
Status write_all_regsets(const Layout& layout, pid_t tid, const RegisterSnapshot& in);

} // namespace tpagent::arch::aarch64
