#include "process/linux/pad_allocator.hpp"
#include <algorithm>

namespace tpagent::process {

namespace {
constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kLowest = 0x10000;
} // namespace

std::optional<std::uint64_t> find_free_range(const std::vector<MappedRange>& mapped,
                                             std::uint64_t near, std::uint64_t size,
                                             std::uint64_t reach, std::uint64_t top) {
    size = (size + kPage - 1) & ~(kPage - 1);
    std::uint64_t lo = near > reach ? near - reach : 0;
    std::uint64_t hi = near + reach < near ? ~0ull : near + reach;
    lo = std::max(lo, kLowest);
    hi = std::min(hi, top);
    std::optional<std::uint64_t> best;
    std::uint64_t best_distance = ~0ull;
    auto consider = [&](std::uint64_t gap_start, std::uint64_t gap_end) {
        gap_start = std::max((gap_start + kPage - 1) & ~(kPage - 1), lo);
        gap_end = std::min(gap_end & ~(kPage - 1), hi);
        if (gap_end <= gap_start || gap_end - gap_start < size) return;
        // Closest placement inside the gap: just below `near`'s mapping or just above it.
        std::uint64_t candidate =
            near < gap_start ? gap_start : std::min(gap_end - size, (near & ~(kPage - 1)));
        if (candidate < gap_start) candidate = gap_start;
        std::uint64_t far_end = candidate + size;
        std::uint64_t distance = near > candidate ? near - candidate : far_end - near;
        if (distance <= reach && distance < best_distance) {
            best = candidate;
            best_distance = distance;
        }
    };
    std::uint64_t prev_end = 0;
    for (const auto& m : mapped) {
        if (m.start > prev_end) consider(prev_end, m.start);
        prev_end = std::max(prev_end, m.end);
    }
    consider(prev_end, top);
    return best;
}

} // namespace tpagent::process
