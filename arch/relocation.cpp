#include "arch/relocation.hpp"

namespace tpagent::arch {

std::optional<std::size_t> pad_offset_of(const Relocated& r, std::size_t from_offset) {
    for (const Boundary& b : r.boundaries)
        if (b.from_offset == from_offset) return b.pad_offset;
    return std::nullopt;
}

std::optional<std::size_t> from_offset_of(const Relocated& r, std::size_t pad_offset) {
    for (const Boundary& b : r.boundaries)
        if (b.pad_offset == pad_offset) return b.from_offset;
    return std::nullopt;
}

} // namespace tpagent::arch
