// x86-64 code sweep: Zydis decodes each instruction; relative branch operands give targets,
// rip-relative `lea` gives computed code addresses and table bases, and an indexed memory
// operand with an absolute displacement (`jmp *table(,%rax,8)`, non-PIC) a table base.
#include "arch/x86_64/code_references.hpp"
#include "arch/x86_64/decoder.hpp"
#include <fmt/format.h>

namespace tpagent::arch::x86_64 {

namespace {

void note_operands(const Decoded& d, std::uint64_t at, CodeReferences& out) {
    for (int k = 0; k < d.insn.operand_count_visible; ++k) {
        const ZydisDecodedOperand& op = d.ops[k];
        ZyanU64 abs = 0;
        if (op.type == ZYDIS_OPERAND_TYPE_IMMEDIATE && op.imm.is_relative) {
            if (ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&d.insn, &op, at, &abs)))
                out.targets.push_back(abs);
        } else if (op.type == ZYDIS_OPERAND_TYPE_MEMORY) {
            if (op.mem.base == ZYDIS_REGISTER_RIP) {
                if (!ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&d.insn, &op, at, &abs))) continue;
                // lea of code: an address the program may jump or call to later; of data: a
                // table that may hold code addresses (either way, the caller sorts it out).
                if (d.insn.mnemonic == ZYDIS_MNEMONIC_LEA) out.targets.push_back(abs);
                out.tables.push_back(abs);
            } else if (op.mem.base == ZYDIS_REGISTER_NONE && op.mem.index != ZYDIS_REGISTER_NONE &&
                       op.mem.disp.has_displacement && op.mem.disp.value > 0) {
                out.tables.push_back(static_cast<std::uint64_t>(op.mem.disp.value));
            }
        }
    }
}

} // namespace

void sweep_code_references(std::span<const std::uint8_t> code, std::uint64_t addr,
                           CodeReferences& out) {
    std::size_t at = 0;
    while (at < code.size()) {
        auto d = decode(code.subspan(at), addr + at);
        if (!d) {
            ++at;
            continue;
        }
        note_operands(*d, addr + at, out);
        ZyanU64 callee = 0;
        if (out.resumed_at_calls_to && d->insn.mnemonic == ZYDIS_MNEMONIC_CALL &&
            d->ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && d->ops[0].imm.is_relative &&
            ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&d->insn, &d->ops[0], addr + at, &callee)) &&
            callee == out.resumed_at_calls_to)
            out.resumed_calls.push_back(addr + at);
        at += d->insn.length;
    }
}

namespace {
// Alignment padding compilers put after a function's last instruction: never run.
bool is_padding(const Decoded& d) {
    return d.insn.mnemonic == ZYDIS_MNEMONIC_NOP || d.insn.mnemonic == ZYDIS_MNEMONIC_INT3;
}
} // namespace

std::optional<std::string> displacement_hazard(std::span<const std::uint8_t> code,
                                               std::uint64_t addr, const Relocated& relocated) {
    const auto& b = relocated.boundaries;
    // boundaries: one per displaced instruction, then {covered, jump back}. What follows a
    // jump or return may be only padding (nothing reaches it: the caller checks that no branch
    // lands in it), whose copy in the pad never runs either.
    auto only_padding_after = [&](std::size_t i) {
        for (std::size_t k = i + 1; k + 1 < b.size(); ++k) {
            auto d = decode(code.subspan(b[k].from_offset), addr + b[k].from_offset);
            if (!d || !is_padding(*d)) return false;
        }
        return true;
    };
    for (std::size_t i = 0; i + 2 < b.size(); ++i) {
        const std::uint64_t at = addr + b[i].from_offset;
        auto d = decode(code.subspan(b[i].from_offset), at);
        if (!d) return d.error().text;
        const auto category = d->insn.meta.category;
        const auto mnemonic = d->insn.mnemonic;
        const char* what = nullptr;
        if ((category == ZYDIS_CATEGORY_UNCOND_BR || category == ZYDIS_CATEGORY_RET) &&
            only_padding_after(i))
            return std::nullopt;
        if (category == ZYDIS_CATEGORY_UNCOND_BR)
            what = "a jump";
        else if (category == ZYDIS_CATEGORY_RET)
            what = "a return";
        else if (category == ZYDIS_CATEGORY_INTERRUPT || mnemonic == ZYDIS_MNEMONIC_UD0 ||
                 mnemonic == ZYDIS_MNEMONIC_UD1 || mnemonic == ZYDIS_MNEMONIC_UD2 ||
                 mnemonic == ZYDIS_MNEMONIC_HLT)
            what = "a trap";
        if (what)
            return fmt::format("the jump would displace {} at 0x{:x} and the instruction after it",
                               what, at);
    }
    return std::nullopt;
}

std::optional<std::string> displaced_call(std::span<const std::uint8_t> code, std::uint64_t addr,
                                          const Relocated& relocated) {
    const auto& b = relocated.boundaries;
    for (std::size_t i = 0; i + 2 < b.size(); ++i) {
        const std::uint64_t at = addr + b[i].from_offset;
        auto d = decode(code.subspan(b[i].from_offset), at);
        if (!d) return d.error().text;
        if (d->insn.meta.category == ZYDIS_CATEGORY_CALL)
            return fmt::format("the jump would displace a call at 0x{:x} and the instruction "
                               "after it (the callee would return into the pad)",
                               at);
    }
    return std::nullopt;
}

} // namespace tpagent::arch::x86_64
