#include "arch/x86_64/sdt_operand.hpp"
#include <array>
#include <optional>
#include <string>

namespace tpagent::arch::x86_64 {

namespace {

constexpr int kRip = 16; // gdb's regnum; rax..r15 are 0..15 in gdb's order

struct RegisterName {
    std::int16_t regnum;
    std::uint8_t shift;
};

// gdb's order: rax rbx rcx rdx rsi rdi rbp rsp r8..r15.
std::optional<RegisterName> register_named(std::string_view name) {
    static constexpr std::array<std::array<const char*, 5>, 8> kLegacy = {{
        {"rax", "eax", "ax", "al", "ah"},
        {"rbx", "ebx", "bx", "bl", "bh"},
        {"rcx", "ecx", "cx", "cl", "ch"},
        {"rdx", "edx", "dx", "dl", "dh"},
        {"rsi", "esi", "si", "sil", nullptr},
        {"rdi", "edi", "di", "dil", nullptr},
        {"rbp", "ebp", "bp", "bpl", nullptr},
        {"rsp", "esp", "sp", "spl", nullptr},
    }};
    for (std::size_t r = 0; r < kLegacy.size(); ++r)
        for (std::size_t form = 0; form < kLegacy[r].size(); ++form)
            if (kLegacy[r][form] && name == kLegacy[r][form])
                return RegisterName{static_cast<std::int16_t>(r),
                                    static_cast<std::uint8_t>(form == 4 ? 8 : 0)};
    if (name == "rip") return RegisterName{kRip, 0};
    // r8..r15 with the suffixes d, w, b (and l, as some assemblers write the byte form)
    if (name.size() >= 2 && name[0] == 'r') {
        std::size_t i = 1;
        int n = 0;
        while (i < name.size() && name[i] >= '0' && name[i] <= '9' && n < 100)
            n = n * 10 + (name[i++] - '0');
        const std::string_view suffix = name.substr(i);
        if (i > 1 && n >= 8 && n <= 15 &&
            (suffix.empty() || suffix == "d" || suffix == "w" || suffix == "b" || suffix == "l"))
            return RegisterName{static_cast<std::int16_t>(n), 0};
    }
    return std::nullopt;
}

std::optional<RegisterName> parse_register(std::string_view text) {
    if (text.size() < 2 || text.front() != '%') return std::nullopt;
    return register_named(text.substr(1));
}

} // namespace

SdtArgument parse_sdt_operand(std::string_view operand, const SdtSymbolResolver& symbol) {
    SdtArgument a;
    if (operand.empty()) return a;
    if (operand.front() == '%') { // a register
        auto r = parse_register(operand);
        if (!r || r->regnum == kRip) return a;
        a.kind = SdtArgument::Kind::Register;
        a.base = r->regnum;
        a.shift = r->shift;
        return a;
    }
    if (operand.front() == '$') { // an immediate
        auto v = parse_sdt_number(operand.substr(1), symbol);
        if (!v) return a;
        a.kind = SdtArgument::Kind::Constant;
        a.offset = *v;
        return a;
    }
    // displacement(base,index,scale): every part optional but the parentheses' content
    const std::size_t open = operand.find('(');
    const std::string_view displacement = operand.substr(0, open);
    std::int64_t offset = 0;
    if (!displacement.empty()) {
        auto v = parse_sdt_number(displacement, symbol);
        if (!v) return a;
        offset = *v;
    }
    SdtArgument m;
    m.kind = SdtArgument::Kind::Memory;
    m.offset = offset;
    if (open == std::string_view::npos) return displacement.empty() ? a : m; // absolute
    if (operand.back() != ')') return a;
    std::string_view inside = operand.substr(open + 1, operand.size() - open - 2);
    std::array<std::string_view, 3> parts{};
    std::size_t count = 0;
    while (count < parts.size()) {
        const std::size_t comma = inside.find(',');
        parts[count++] = inside.substr(0, comma);
        if (comma == std::string_view::npos) break;
        inside.remove_prefix(comma + 1);
        if (count == parts.size()) return a; // a fourth part
    }
    if (!parts[0].empty()) {
        auto base = parse_register(parts[0]);
        if (!base || base->shift) return a;
        if (base->regnum == kRip) {
            // sym(%rip) is how position-independent code names sym: the address is the
            // symbol's. A bare number relative to the rip of an instruction that is not there
            // (the marker's operand is never assembled) means nothing.
            const bool named = !displacement.empty() &&
                               !(displacement.front() == '-' || displacement.front() == '+' ||
                                 (displacement.front() >= '0' && displacement.front() <= '9'));
            if (!named || count > 1) return a;
            return m;
        }
        m.base = base->regnum;
    }
    if (count >= 2) {
        auto index = parse_register(parts[1]);
        if (!index || index->shift || index->regnum == kRip || index->regnum == 7) return a;
        m.index = index->regnum;
        if (count == 3) {
            auto scale = parse_sdt_number(parts[2], nullptr);
            if (!scale || (*scale != 1 && *scale != 2 && *scale != 4 && *scale != 8)) return a;
            m.scale = static_cast<std::uint8_t>(*scale);
        }
    }
    if (m.base < 0 && m.index < 0) return a;
    return m;
}

} // namespace tpagent::arch::x86_64
