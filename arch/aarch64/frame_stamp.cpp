#include "arch/arch.hpp"

namespace tpagent::arch {

// The virtual counter, as the in-process agent's tpagent_timestamp reads it.
std::uint64_t frame_stamp() {
    std::uint64_t v;
    asm volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
    return v;
}

} // namespace tpagent::arch
