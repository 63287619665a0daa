// Byte layout of the FXSAVE legacy area and the (non-compacted) XSAVE area, which is what
// PTRACE_GETREGSET returns for NT_PRFPREG (first 512 bytes only) and NT_X86_XSTATE.
#pragma once
#include <array>
#include <cstdint>

namespace tpagent::arch::x86_64 {

// FXSAVE area (64-bit format), Intel SDM vol. 1, table 10-2.
namespace fxsave {
inline constexpr std::uint32_t kFcw = 0;  // 16-bit control word
inline constexpr std::uint32_t kFsw = 2;  // 16-bit status word
inline constexpr std::uint32_t kFtw = 4;  // 8-bit abridged tag word
inline constexpr std::uint32_t kFop = 6;  // 11-bit last opcode
inline constexpr std::uint32_t kFip = 8;  // instruction pointer offset (low 32 bits)
inline constexpr std::uint32_t kFcs = 12; // instruction pointer selector
inline constexpr std::uint32_t kFdp = 16; // operand pointer offset (low 32 bits)
inline constexpr std::uint32_t kFds = 20; // operand pointer selector
inline constexpr std::uint32_t kMxcsr = 24;
inline constexpr std::uint32_t kSt0 = 32; // st/mm registers: 10 bytes in a 16-byte slot
inline constexpr std::uint32_t kStSlot = 16;
inline constexpr std::uint32_t kXmm0 = 160; // xmm0-15, 16 bytes each
inline constexpr std::uint32_t kSize = 512;
} // namespace fxsave

// The legacy area's bytes 464..511 are software's: the kernel puts there (ptrace, signal
// frames) FP_XSTATE_MAGIC1 and then the 64-bit mask of the components the area holds.
inline constexpr std::uint32_t kSwBytesOffset = 464;
inline constexpr std::uint32_t kSwMagic1 = 0x46505853;

// XSAVE header follows the legacy area; XSTATE_BV says which components hold live state.
inline constexpr std::uint32_t kXstateBvOffset = 512;
inline constexpr std::uint32_t kXsaveHeaderEnd = 576;

// State-component numbers (bit positions in XCR0 and XSTATE_BV).
enum XComponent : unsigned {
    kX87 = 0,
    kSse = 1,
    kAvx = 2,      // upper halves of ymm0-15
    kBndregs = 3,  // MPX bnd0-3
    kBndcsr = 4,   // MPX bndcfgu, bndstatus
    kOpmask = 5,   // AVX-512 k0-7
    kZmmHi256 = 6, // upper 256 bits of zmm0-15
    kHi16Zmm = 7,  // zmm16-31, all 512 bits
    kPkru = 9,
    kComponentCount = 10,
};

// The components this agent knows how to present to gdb.
inline constexpr std::uint64_t kSupportedXcr0 =
    (1u << kX87) | (1u << kSse) | (1u << kAvx) | (1u << kBndregs) | (1u << kBndcsr) |
    (1u << kOpmask) | (1u << kZmmHi256) | (1u << kHi16Zmm) | (1u << kPkru);

// Offsets every XSAVE-capable CPU uses so far in the standard (non-compacted) format; used
// when cpuid leaf 0xD cannot be asked (0 = no fixed offset).
inline constexpr std::array<std::uint32_t, kComponentCount> kStandardComponentOffsets = {
    0, 160, 576, 960, 1024, 1088, 1152, 1664, 0, 2688};

// Sizes of the components above in the standard format (0: not an XSAVE-managed block).
inline constexpr std::array<std::uint32_t, kComponentCount> kComponentSizes = {
    0, 0, 256, 64, 64, 64, 512, 1024, 0, 8};

} // namespace tpagent::arch::x86_64
