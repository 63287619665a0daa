#include "arch/x86_64/cpu_features.hpp"
#include <cpuid.h>

namespace tpagent::arch::x86_64 {
namespace {

std::uint64_t read_xcr0() {
    std::uint32_t lo = 0;
    std::uint32_t hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

// End of the highest enabled component: the size of the area ptrace will hand us.
std::uint32_t area_size(const CpuFeatures& f) {
    std::uint32_t size = kXsaveHeaderEnd;
    for (unsigned c = kAvx; c < kComponentCount; ++c) {
        if (f.has(static_cast<XComponent>(c)) && f.offsets[c] + kComponentSizes[c] > size)
            size = f.offsets[c] + kComponentSizes[c];
    }
    return size;
}

} // namespace

CpuFeatures cpu_features_for_xcr0(std::uint64_t xcr0) {
    CpuFeatures f;
    f.xcr0 = (xcr0 & kSupportedXcr0) | (1u << kX87) | (1u << kSse);
    f.xstate_size = f.xcr0 == ((1u << kX87) | (1u << kSse)) ? fxsave::kSize : area_size(f);
    return f;
}

CpuFeatures detect_cpu_features() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & bit_OSXSAVE))
        return cpu_features_for_xcr0(0);
    CpuFeatures f = cpu_features_for_xcr0(read_xcr0());
    for (unsigned c = kAvx; c < kComponentCount; ++c) {
        if (!f.has(static_cast<XComponent>(c))) continue;
        // Sub-leaf c: eax = size, ebx = offset in the non-compacted format.
        __cpuid_count(0xD, c, eax, ebx, ecx, edx);
        if (eax != 0 && ebx != 0) f.offsets[c] = ebx;
    }
    f.xstate_size = area_size(f);
    return f;
}

} // namespace tpagent::arch::x86_64
