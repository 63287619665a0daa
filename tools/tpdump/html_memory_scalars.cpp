#include "tools/tpdump/html_memory_scalars.hpp"

#include "tools/tpdump/html_source_items.hpp"
#include <fmt/format.h>
#include <optional>

namespace tpagent::tpdump {

namespace {

// More elements than this in one `x@N` are left to the hex dump.
constexpr std::uint64_t kMaxArrayElements = 64;

bool integer_size(std::size_t size) {
    return size == 1 || size == 2 || size == 4 || size == 8;
}

std::int64_t signed_le(std::span<const std::uint8_t> bytes) {
    std::uint64_t v = 0;
    for (std::size_t i = bytes.size(); i-- > 0;)
        v = v << 8 | bytes[i];
    const unsigned unused = 64 - 8 * static_cast<unsigned>(bytes.size());
    return static_cast<std::int64_t>(v << unused) >> unused; // sign-extend
}

// `a[k]` as a and k, when k is a literal.
std::optional<std::pair<std::string_view, std::uint64_t>> indexed(std::string_view text) {
    std::size_t open = text.rfind('[');
    if (text.empty() || text.back() != ']' || open == std::string_view::npos || open == 0)
        return std::nullopt;
    std::string_view inside = text.substr(open + 1, text.size() - open - 2);
    while (!inside.empty() && inside.front() == ' ')
        inside.remove_prefix(1);
    while (!inside.empty() && inside.back() == ' ')
        inside.remove_suffix(1);
    auto k = parse_integer_literal(inside);
    if (!k) return std::nullopt;
    return std::pair(text.substr(0, open), *k);
}

} // namespace

std::vector<MemoryScalar> memory_scalars(std::string_view name, std::uint64_t address,
                                         std::span<const std::uint8_t> bytes) {
    std::vector<MemoryScalar> out;
    if (name.empty()) {
        if (integer_size(bytes.size()))
            out.push_back({fmt::format("*(int{}*)0x{:x}", 8 * bytes.size(), address),
                           signed_le(bytes), bytes.size()});
        return out;
    }
    auto parts = split_top_level(name, '@');
    if (parts.size() == 2) {
        auto count = parse_integer_literal(parts[1]);
        if (!count || *count == 0 || *count > kMaxArrayElements || bytes.size() % *count != 0)
            return out;
        const std::size_t size = bytes.size() / *count;
        if (!integer_size(size)) return out;
        auto base = indexed(parts[0]);
        for (std::size_t i = 0; i < *count; ++i) {
            std::string label = base ? fmt::format("{}[{}]", base->first, base->second + i)
                                     : fmt::format("({})[{}]", name, i);
            out.push_back({std::move(label), signed_le(bytes.subspan(i * size, size)), size});
        }
        return out;
    }
    if (integer_size(bytes.size()))
        out.push_back({std::string(name), signed_le(bytes), bytes.size()});
    return out;
}

} // namespace tpagent::tpdump
