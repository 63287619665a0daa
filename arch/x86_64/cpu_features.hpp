// Which XSAVE state components this CPU and kernel enable, and where they live.
#pragma once
#include "arch/x86_64/xsave_layout.hpp"
#include <array>
#include <cstdint>

namespace tpagent::arch::x86_64 {

struct CpuFeatures {
    std::uint64_t xcr0 = (1u << kX87) | (1u << kSse); // enabled components
    std::array<std::uint32_t, kComponentCount> offsets = kStandardComponentOffsets;
    std::uint32_t xstate_size = fxsave::kSize; // bytes of the XSAVE area for xcr0

    bool has(XComponent c) const { return (xcr0 >> c) & 1u; }
};

// Reads XCR0 (xgetbv) and cpuid leaf 0xD on the running CPU; x87+SSE only without OSXSAVE.
CpuFeatures detect_cpu_features();

// A feature set for a given XCR0 with standard offsets (for tests and trace-file layouts).
CpuFeatures cpu_features_for_xcr0(std::uint64_t xcr0);

} // namespace tpagent::arch::x86_64
