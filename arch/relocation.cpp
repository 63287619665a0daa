#include "arch/relocation.hpp"
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

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

bool in_relocated(const Relocated& r, std::uint64_t copy, std::uint64_t pc) {
    return pc >= copy && pc - copy < r.code.size();
}

std::optional<std::uint64_t> original_address(const Relocated& r, std::uint64_t copy,
                                              std::uint64_t site, std::uint64_t pc) {
    if (!in_relocated(r, copy, pc)) return std::nullopt;
    auto off = from_offset_of(r, pc - copy);
    return off ? std::optional(site + *off) : std::nullopt;
}

std::optional<std::string> relocation_mismatch(std::span<const std::uint64_t> original,
                                               std::span<const std::uint64_t> relocated,
                                               std::uint64_t site, std::size_t covered) {
    if (!std::equal(original.begin(), original.end(), relocated.begin(), relocated.end()))
        return fmt::format("reaches [{:#x}] where the original reaches [{:#x}]",
                           fmt::join(relocated, ", "), fmt::join(original, ", "));
    for (std::uint64_t target : original)
        if (target > site && target - site < covered)
            return fmt::format("reaches {:#x}, inside the bytes the jump replaces", target);
    return std::nullopt;
}

} // namespace tpagent::arch
