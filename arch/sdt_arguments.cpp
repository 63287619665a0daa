#include "arch/sdt_arguments.hpp"
#include "arch/arch.hpp"
#include <cctype>
#include <charconv>

namespace tpagent::arch {

namespace {

std::optional<std::int64_t> parse_integer(std::string_view text) {
    bool negative = false;
    if (!text.empty() && (text.front() == '-' || text.front() == '+')) {
        negative = text.front() == '-';
        text.remove_prefix(1);
    }
    int base = 10;
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        base = 16;
        text.remove_prefix(2);
    }
    std::uint64_t v = 0;
    if (text.empty()) return std::nullopt;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return static_cast<std::int64_t>(negative ? 0 - v : v);
}

bool is_symbol_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
}

} // namespace

std::optional<std::int64_t> parse_sdt_number(std::string_view text,
                                             const SdtSymbolResolver& symbol) {
    if (text.empty()) return std::nullopt;
    if (text.front() == '-' || text.front() == '+' ||
        std::isdigit(static_cast<unsigned char>(text.front())))
        return parse_integer(text);
    // name, name+N, name-N
    std::size_t n = 0;
    while (n < text.size() && is_symbol_char(text[n]))
        ++n;
    if (n == 0 || !symbol) return std::nullopt;
    auto address = symbol(text.substr(0, n));
    if (!address) return std::nullopt;
    std::int64_t addend = 0;
    if (n < text.size()) {
        if (text[n] != '+' && text[n] != '-') return std::nullopt;
        auto a = parse_integer(text.substr(n));
        if (!a) return std::nullopt;
        addend = *a;
    }
    return static_cast<std::int64_t>(*address + static_cast<std::uint64_t>(addend));
}

std::vector<SdtArgument> parse_sdt_arguments(std::string_view text, const Architecture& arch,
                                             const SdtSymbolResolver& symbol) {
    std::vector<SdtArgument> out;
    constexpr std::size_t kMaxArguments = 12; // sys/sdt.h stops at 12
    while (out.size() < kMaxArguments) {
        while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
            text.remove_prefix(1);
        if (text.empty()) break;
        std::size_t end = 0;
        int depth = 0; // "8@[sp, 16]" holds a space
        while (end < text.size() &&
               (depth > 0 || !std::isspace(static_cast<unsigned char>(text[end])))) {
            if (text[end] == '[') ++depth;
            if (text[end] == ']') --depth;
            ++end;
        }
        std::string_view one = text.substr(0, end);
        text.remove_prefix(end);
        SdtArgument a; // Unknown until decoded
        const std::size_t at = one.find('@');
        if (at == std::string_view::npos) { // the first note version: no size, a long
            a = arch.parse_sdt_operand(one, symbol);
            a.size = 8;
        } else {
            auto size = parse_integer(one.substr(0, at));
            const std::int64_t bytes = size ? (*size < 0 ? -*size : *size) : 0;
            if (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8) {
                a = arch.parse_sdt_operand(one.substr(at + 1), symbol);
                a.size = static_cast<std::uint8_t>(bytes);
                a.is_signed = *size < 0;
            }
        }
        out.push_back(a);
    }
    return out;
}

} // namespace tpagent::arch
