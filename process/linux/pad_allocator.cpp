#include "process/linux/pad_allocator.hpp"
#include "protocol/hex.hpp"
#include <algorithm>

namespace tpagent::process {

namespace {
constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kLowest = 0x10000;
} // namespace

std::optional<MappedRange> parse_maps_line(std::string_view line) {
    std::size_t dash = line.find('-');
    std::size_t space = line.find(' ');
    if (dash == std::string_view::npos || space == std::string_view::npos || dash > space)
        return std::nullopt;
    auto start = protocol::parse_hex_u64(line.substr(0, dash));
    auto end = protocol::parse_hex_u64(line.substr(dash + 1, space - dash - 1));
    if (!start || !end || *start >= *end) return std::nullopt;
    // Columns: range perms offset dev inode [pathname]; the pathname may hold spaces.
    std::string_view rest = line.substr(space + 1);
    const bool readable = rest.starts_with('r');
    std::uint64_t offset = 0;
    for (int column = 0; column < 4 && !rest.empty(); ++column) {
        const std::size_t next = rest.find(' ');
        if (column == 1)
            if (auto v = protocol::parse_hex_u64(rest.substr(0, next))) offset = *v;
        rest = next == std::string_view::npos ? std::string_view{} : rest.substr(next + 1);
    }
    const std::size_t name = rest.find_first_not_of(' ');
    return MappedRange{*start, *end, readable,
                       std::string(name == std::string_view::npos ? "" : rest.substr(name)),
                       offset};
}

std::vector<MappedRange> parse_maps(std::string_view text) {
    std::vector<MappedRange> out;
    while (!text.empty()) {
        std::size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
        if (auto m = parse_maps_line(line)) out.push_back(std::move(*m));
    }
    std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.start < b.start; });
    return out;
}

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
