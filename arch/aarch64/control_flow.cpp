// AArch64 control flow for the branch recorder: every instruction is 4 bytes; the branches are
// the "branches, exception generating and system instructions" group's B/BL, B.cond,
// CBZ/CBNZ, TBZ/TBNZ and the register forms (BR, BLR, RET and their pointer-authenticated
// variants).
#include "arch/aarch64/control_flow.hpp"
#include <cstring>

namespace tpagent::arch::aarch64 {
namespace {

std::uint64_t relative(std::uint64_t addr, std::uint32_t insn, int shift, int bits) {
    const std::uint32_t field = (insn >> shift) & ((1U << bits) - 1);
    const std::int64_t offset = static_cast<std::int32_t>(field << (32 - bits)) >> (32 - bits);
    return addr + static_cast<std::uint64_t>(offset * 4);
}

} // namespace

Result<FlowInstruction> decode_flow(std::span<const std::uint8_t> code, std::uint64_t addr) {
    if (code.size() < 4) return make_error(ErrorCode::Unsupported, "an instruction is 4 bytes");
    std::uint32_t insn = 0;
    std::memcpy(&insn, code.data(), 4);
    FlowInstruction out{4, FlowKind::Sequential, std::nullopt};
    if ((insn & 0x7c000000) == 0x14000000) { // B, BL
        out.kind = (insn & 0x80000000) ? FlowKind::Call : FlowKind::Jump;
        out.target = relative(addr, insn, 0, 26);
    } else if ((insn & 0xff000010) == 0x54000000 || (insn & 0x7e000000) == 0x34000000) {
        out.kind = FlowKind::Conditional; // B.cond, CBZ/CBNZ
        out.target = relative(addr, insn, 5, 19);
    } else if ((insn & 0x7e000000) == 0x36000000) {
        out.kind = FlowKind::Conditional; // TBZ/TBNZ
        out.target = relative(addr, insn, 5, 14);
    } else if ((insn & 0xffe0001f) == 0xd4000001) {
        out.kind = FlowKind::System; // SVC
    } else if ((insn & 0xfe000000) == 0xd6000000) {
        switch ((insn >> 21) & 0xf) {
        case 1:
        case 9:
            out.kind = FlowKind::Call;
            break; // BLR, BLRAA/BLRAB
        case 2:
            out.kind = FlowKind::Return;
            break; // RET, RETAA/RETAB
        default:
            out.kind = FlowKind::Jump;
            break; // BR, BRAA/BRAB, ERET
        }
    }
    return out;
}

} // namespace tpagent::arch::aarch64
