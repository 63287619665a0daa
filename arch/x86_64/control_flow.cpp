// x86-64 control flow for the branch recorder, from Zydis's instruction categories.
#include "arch/x86_64/control_flow.hpp"
#include "arch/x86_64/decoder.hpp"

namespace tpagent::arch::x86_64 {

Result<FlowInstruction> decode_flow(std::span<const std::uint8_t> code, std::uint64_t addr) {
    auto d = decode(code, addr);
    if (!d) return d.error();
    FlowInstruction out;
    out.length = d->insn.length;
    switch (d->insn.meta.category) {
    case ZYDIS_CATEGORY_COND_BR:
        out.kind = FlowKind::Conditional;
        break; // jcc, loop, jrcxz
    case ZYDIS_CATEGORY_UNCOND_BR:
        out.kind = FlowKind::Jump;
        break;
    case ZYDIS_CATEGORY_CALL:
        out.kind = FlowKind::Call;
        break;
    case ZYDIS_CATEGORY_RET:
        out.kind = FlowKind::Return;
        break;
    case ZYDIS_CATEGORY_SYSCALL:
    case ZYDIS_CATEGORY_INTERRUPT:
        out.kind = FlowKind::System;
        return out;
    default:
        return out;
    }
    for (int k = 0; k < d->insn.operand_count_visible; ++k) {
        const ZydisDecodedOperand& op = d->ops[k];
        ZyanU64 target = 0;
        if (op.type == ZYDIS_OPERAND_TYPE_IMMEDIATE && op.imm.is_relative &&
            ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&d->insn, &op, addr, &target)))
            out.target = target;
    }
    return out;
}

} // namespace tpagent::arch::x86_64
