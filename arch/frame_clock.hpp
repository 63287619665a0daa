// The clock every frame is stamped with, read in line: by the in-process agent at each hit and
// by tpagent for its own frames in a shared buffer, which take their place among the others by
// it. One counter every core reads alike, with no system call and no shared write. Freestanding
// (the in-process agent includes it).
#pragma once
#include <cstdint>

namespace tpagent::arch {

inline std::uint64_t frame_clock() {
#if defined(__x86_64__)
    return __builtin_ia32_rdtsc(); // invariant TSC; in line it costs 0.3 ns less than a call
#elif defined(__aarch64__)
    std::uint64_t v;
    asm volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
#error "no frame clock for this architecture"
#endif
}

} // namespace tpagent::arch
