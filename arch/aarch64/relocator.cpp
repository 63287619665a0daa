#include "arch/aarch64/relocator.hpp"
#include "arch/aarch64/emitter.hpp"
#include <cstring>
#include <optional>
#include <fmt/format.h>

namespace tpagent::arch::aarch64 {
namespace {

constexpr std::uint32_t kNop = 0xd503201f;

std::int64_t sign_extend(std::uint64_t value, unsigned bits) {
    const std::uint64_t m = std::uint64_t{1} << (bits - 1);
    return static_cast<std::int64_t>((value ^ m) - m);
}

// A conditional branch to `target` from the pad: the same test, over a hop, then a B.
// `hop` is the instruction with its offset field set to +8 (two instructions on).
Status conditional(Emitter& e, std::uint32_t hop, std::uint64_t from, std::uint64_t target) {
    e.put(hop);
    if (auto s = e.branch(from + 4); !s) return s; // not taken: on after the original
    return e.branch(target);                       // taken
}

// Where a branch or literal load whose word offset sits at bit 5 (`bits` wide) points.
std::uint64_t pc_relative(std::uint32_t insn, std::uint64_t from, unsigned bits) {
    return from +
           static_cast<std::uint64_t>(sign_extend((insn >> 5) & ((1u << bits) - 1), bits) * 4);
}

// The offset width of a conditional branch (B.cond, CBZ/CBNZ: 19; TBZ/TBNZ: 14), 0 for others.
unsigned conditional_offset_bits(std::uint32_t insn) {
    if ((insn & 0xff000010) == 0x54000000 || (insn & 0x7e000000) == 0x34000000) return 19;
    if ((insn & 0x7e000000) == 0x36000000) return 14;
    return 0;
}

} // namespace

Result<std::uint32_t> encode_branch(std::uint64_t from, std::uint64_t to) {
    const std::int64_t delta = static_cast<std::int64_t>(to - from);
    if (delta < -kBranchReach || delta >= kBranchReach || delta % 4 != 0)
        return make_error(ErrorCode::Unsupported,
                          fmt::format("a branch from 0x{:x} cannot reach 0x{:x}", from, to));
    return 0x14000000u | (static_cast<std::uint32_t>(delta >> 2) & 0x3ffffff);
}

Result<Relocated> relocate(std::span<const std::uint8_t> code, std::uint64_t from,
                           std::uint64_t to) {
    if (code.size() < 4 || from % 4 != 0)
        return make_error(ErrorCode::Unsupported, "not a whole AArch64 instruction");
    std::uint32_t insn = 0;
    std::memcpy(&insn, code.data(), 4);
    Emitter e(to);
    Status done = ok_status();
    bool falls_through = true;         // the pad ends with a branch back after the instruction
    std::optional<std::uint64_t> back; // pad offset of the way back, when not at the end
    if ((insn & 0x7c000000) == 0x14000000) { // B, BL
        const std::uint64_t target =
            from + static_cast<std::uint64_t>(sign_extend(insn & 0x3ffffff, 26) * 4); // at bit 0
        if (insn & 0x80000000) e.move_wide(30, from + 4); // BL: the return address
        done = e.branch(target);
        falls_through = false;
    } else if (const unsigned bits = conditional_offset_bits(insn)) {
        // B.cond, CBZ/CBNZ (imm19), TBZ/TBNZ (imm14): the same test over a hop, then B.
        const std::uint32_t field = ((1u << bits) - 1) << 5;
        done = conditional(e, (insn & ~field) | 2u << 5, from, pc_relative(insn, from, bits));
        falls_through = false;
        back = 4;                                   // the not-taken branch is the way back
    } else if ((insn & 0x1f000000) == 0x10000000) { // ADR, ADRP
        const std::uint64_t imm = ((insn >> 29) & 3) | ((insn >> 5) & 0x7ffff) << 2;
        const bool page = insn & 0x80000000;
        const std::uint64_t target =
            page ? (from & ~std::uint64_t{0xfff}) +
                       static_cast<std::uint64_t>(sign_extend(imm, 21) << 12)
                 : from + static_cast<std::uint64_t>(sign_extend(imm, 21));
        e.move_wide(insn & 0x1f, target);
    } else if ((insn & 0x3b000000) == 0x18000000) { // LDR (literal): GPR and SIMD&FP, PRFM
        const std::uint64_t target = pc_relative(insn, from, 19);
        const unsigned rt = insn & 0x1f;
        const unsigned opc = insn >> 30;
        if (insn & 0x04000000) {
            // SIMD&FP: no general register of its own to build the address in, so x16 is
            // borrowed and restored around the load. The stack pointer moves first: AArch64
            // has no red zone, a signal handler may write right below it.
            if (opc == 3)
                return make_error(ErrorCode::Unsupported,
                                  fmt::format("0x{:x}: not an instruction", from));
            e.put(0xf81f0ff0); // str x16, [sp, #-16]!
            e.move_wide(16, target);
            static constexpr std::uint32_t kLoad[] = {0xbd400000, 0xfd400000, 0x3dc00000};
            e.put(kLoad[opc] | 16u << 5 | rt); // ldr St | Dt | Qt, [x16]
            e.put(0xf84107f0);                 // ldr x16, [sp], #16
        } else if (opc == 3) {
            e.put(kNop); // PRFM: a hint, dropped
        } else {
            e.move_wide(rt, target);
            const std::uint32_t load = opc == 0 ? 0xb9400000 : opc == 1 ? 0xf9400000 : 0xb9800000;
            e.put(load | rt << 5 | rt); // LDR Wt | LDR Xt | LDRSW Xt, [Xt]
        }
    } else if ((insn & 0xfffffc1f) == 0xd63f0000 || (insn & 0xfffff81f) == 0xd63f081f ||
               (insn & 0xfffff800) == 0xd73f0800) {
        // BLR, BLRAAZ/BLRABZ, BLRAA/BLRAB: the link register gets the original's return
        // address, so the call goes through x17 (IP1: callers never rely on it across a
        // call; and a BTI c landing pad accepts a BR from it). BR(AAZ|ABZ|AA|AB) x17.
        const unsigned n = (insn >> 5) & 31, m = insn & 31;
        const bool modifier = (insn & 0x01000000) != 0;
        if (modifier && (m == 30 || m == 17))
            return make_error(ErrorCode::Unsupported,
                              fmt::format("0x{:x}: an authenticated call with x{} as modifier "
                                          "cannot be moved",
                                          from, m));
        if (n != 17) e.put(0xaa0003f1 | n << 16); // mov x17, xn
        e.move_wide(30, from + 4);
        e.put((insn & ~0x00200000u & ~(31u << 5)) | 17u << 5); // the same branch, without link
        falls_through = false;
    } else {
        e.put(insn); // no pc in it
    }
    if (!done) return done.error();
    Relocated out;
    out.covered = 4;
    if (!back) back = e.pc() - to;
    if (falls_through)
        if (auto s = e.branch(from + 4); !s) return s.error();
    out.boundaries = {{0, 0}, {4, static_cast<std::uint32_t>(*back)}};
    out.code = e.take();
    return out;
}

} // namespace tpagent::arch::aarch64
