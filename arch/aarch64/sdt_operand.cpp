#include "arch/aarch64/sdt_operand.hpp"
#include "protocol/hex.hpp"
#include <optional>

namespace tpagent::arch::aarch64 {

using protocol::trim;

namespace {

constexpr std::int16_t kSp = 31; // gdb's regnum; x0..x30 are 0..30

std::optional<std::int16_t> parse_register(std::string_view name) {
    if (name == "sp" || name == "wsp") return kSp;
    if (name.size() < 2 || name.size() > 3 || (name[0] != 'x' && name[0] != 'w'))
        return std::nullopt;
    int n = 0;
    for (char c : name.substr(1)) {
        if (c < '0' || c > '9') return std::nullopt;
        n = n * 10 + (c - '0');
    }
    if (n > 30) return std::nullopt;
    return static_cast<std::int16_t>(n);
}

} // namespace

SdtArgument parse_sdt_operand(std::string_view operand, const SdtSymbolResolver& symbol) {
    SdtArgument a;
    operand = trim(operand);
    if (operand.empty()) return a;
    if (auto r = parse_register(operand)) {
        a.kind = SdtArgument::Kind::Register;
        a.base = *r;
        return a;
    }
    if (operand.front() == '[') {
        if (operand.back() != ']') return a;
        std::string_view inside = operand.substr(1, operand.size() - 2);
        const std::size_t comma = inside.find(',');
        auto base = parse_register(trim(inside.substr(0, comma)));
        if (!base) return a;
        std::int64_t offset = 0;
        if (comma != std::string_view::npos) {
            std::string_view disp = trim(inside.substr(comma + 1));
            if (!disp.empty() && disp.front() == '#') disp.remove_prefix(1);
            auto v = parse_sdt_number(disp, nullptr);
            if (!v) return a;
            offset = *v;
        }
        a.kind = SdtArgument::Kind::Memory;
        a.base = *base;
        a.offset = offset;
        return a;
    }
    if (operand.front() == '#') operand.remove_prefix(1);
    auto v = parse_sdt_number(operand, symbol);
    if (!v) return a;
    a.kind = SdtArgument::Kind::Constant;
    a.offset = *v;
    return a;
}

} // namespace tpagent::arch::aarch64
