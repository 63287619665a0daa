#include "bytecode/traced_range.hpp"
#include "bytecode/semantics.hpp"
#include <vector>

namespace tpagent::bytecode {
namespace {

// A stack entry: a constant, or a register's value plus a constant.
struct Value {
    int reg = -1;
    std::uint64_t constant = 0;
};

} // namespace

std::optional<TracedRange> traced_range(const Program& p) {
    std::vector<Value> stack;
    std::optional<TracedRange> range;
    auto pop = [&]() -> std::optional<Value> {
        if (stack.empty()) return std::nullopt;
        Value v = stack.back();
        stack.pop_back();
        return v;
    };
    auto take = [&](const Value& addr, std::uint64_t length) {
        if (range) return false; // a second range: not this shape
        range = TracedRange{addr.reg, addr.constant, length};
        return true;
    };
    for (const Insn& i : p.insns()) {
        switch (i.op) {
        case Op::Const8:
        case Op::Const16:
        case Op::Const32:
        case Op::Const64:
            stack.push_back({-1, i.imm});
            break;
        case Op::Reg:
            stack.push_back({static_cast<int>(i.imm), 0});
            break;
        case Op::Ext:
        case Op::ZeroExt: {
            if (stack.empty() || stack.back().reg >= 0) return std::nullopt;
            std::uint64_t& c = stack.back().constant;
            c = i.op == Op::Ext ? sem::sign_extend(c, i.imm) : sem::zero_extend(c, i.imm);
            break;
        }
        case Op::Add: {
            auto b = pop(), a = pop();
            if (!a || !b || (a->reg >= 0 && b->reg >= 0)) return std::nullopt;
            stack.push_back({a->reg >= 0 ? a->reg : b->reg, a->constant + b->constant});
            break;
        }
        case Op::Trace: {
            auto size = pop(), addr = pop();
            if (!size || !addr || size->reg >= 0 || !take(*addr, size->constant))
                return std::nullopt;
            break;
        }
        case Op::TraceQuick:
        case Op::Trace16:
            if (stack.empty() || !take(stack.back(), i.imm)) return std::nullopt;
            break;
        case Op::Pop:
            if (!pop()) return std::nullopt;
            break;
        case Op::End:
            return range;
        default:
            return std::nullopt;
        }
    }
    return std::nullopt;
}

} // namespace tpagent::bytecode
