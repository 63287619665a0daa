#include "base/proc_maps.hpp"
#include "base/proc_files.hpp"
#include <algorithm>
#include <charconv>
#include <fmt/format.h>

namespace tpagent {

namespace {
std::optional<std::uint64_t> parse_hex(std::string_view text) {
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}
} // namespace

std::optional<MappedRange> parse_maps_line(std::string_view line) {
    std::size_t dash = line.find('-');
    std::size_t space = line.find(' ');
    if (dash == std::string_view::npos || space == std::string_view::npos || dash > space)
        return std::nullopt;
    auto start = parse_hex(line.substr(0, dash));
    auto end = parse_hex(line.substr(dash + 1, space - dash - 1));
    if (!start || !end || *start >= *end) return std::nullopt;
    // Columns: range perms offset dev inode [pathname]; the pathname may hold spaces.
    std::string_view rest = line.substr(space + 1);
    const std::string_view perms = rest.substr(0, rest.find(' '));
    std::uint64_t offset = 0, inode = 0;
    for (int column = 0; column < 4 && !rest.empty(); ++column) {
        const std::size_t next = rest.find(' ');
        const std::string_view field = rest.substr(0, next);
        if (column == 1)
            if (auto v = parse_hex(field)) offset = *v;
        if (column == 3)
            std::from_chars(field.data(), field.data() + field.size(), inode); // decimal
        rest = next == std::string_view::npos ? std::string_view{} : rest.substr(next + 1);
    }
    const std::size_t name = rest.find_first_not_of(' ');
    MappedRange out{*start, *end, perms.starts_with('r'),
                    std::string(name == std::string_view::npos ? "" : rest.substr(name)), offset};
    out.writable = perms.size() > 1 && perms[1] == 'w';
    out.shared = perms.size() > 3 && perms[3] == 's';
    out.inode = inode;
    return out;
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

std::vector<MappedRange> read_maps(pid_t pid) {
    return parse_maps(read_file(fmt::format("/proc/{}/maps", pid)));
}

} // namespace tpagent
