#include "tools/tpdump/html_expression_shape.hpp"

namespace tpagent::tpdump {

namespace {

using bytecode::Op;

bool is_const(Op op) {
    return op == Op::Const8 || op == Op::Const16 || op == Op::Const32 || op == Op::Const64;
}

} // namespace

ExpressionShape shape_of(const bytecode::Program& program) {
    ExpressionShape out;
    auto insns = program.insns();
    for (std::size_t i = 0; i < insns.size(); ++i) {
        const bytecode::Insn& insn = insns[i];
        if (!insn.reachable) continue;
        const bool after_const = i > 0 && is_const(insns[i - 1].op);
        switch (insn.op) {
        case Op::Goto:
        case Op::IfGoto:
            out.fixed = false;
            break;
        case Op::Tracenz: // records nothing for an empty string
            out.fixed = false;
            out.traces.push_back(std::nullopt);
            break;
        case Op::TraceQuick:
        case Op::Trace16:
            out.traces.push_back(insn.imm);
            break;
        case Op::Trace:
            out.traces.push_back(after_const ? std::optional(insns[i - 1].imm) : std::nullopt);
            break;
        case Op::Setv:
            out.sets_variable = true;
            break;
        case Op::Tracev:
            out.traced_variables.push_back(static_cast<std::uint32_t>(insn.imm));
            break;
        case Op::End:
            if (out.fixed) { // no jumps: the first end is where every run stops
                out.value_traced =
                    i >= 2 && insns[i - 1].op == Op::Trace && is_const(insns[i - 2].op);
                if (i == 3 && out.value_traced && is_const(insns[0].op))
                    out.constant_address = insns[0].imm;
                return out;
            }
            break;
        default:
            break;
        }
    }
    return out;
}

} // namespace tpagent::tpdump
