#include "arch/arch.hpp"
#include <x86intrin.h>

namespace tpagent::arch {

// The time-stamp counter, as the in-process agent's tpagent_timestamp reads it.
std::uint64_t frame_stamp() {
    return __rdtsc();
}

} // namespace tpagent::arch
