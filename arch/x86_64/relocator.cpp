#include "arch/x86_64/relocator.hpp"
#include "arch/x86_64/decoder.hpp"

#include <Zydis/Zydis.h>
#include <fmt/format.h>
#include <algorithm>
#include <string>

namespace tpagent::arch::x86_64 {
namespace {

std::string describe(const Decoded& d, std::uint64_t addr) {
    static const ZydisFormatter f = [] {
        ZydisFormatter z;
        ZydisFormatterInit(&z, ZYDIS_FORMATTER_STYLE_INTEL);
        ZydisFormatterSetProperty(&z, ZYDIS_FORMATTER_PROP_ADDR_PADDING_ABSOLUTE,
                                  ZYDIS_PADDING_DISABLED);
        return z;
    }();
    char buf[128];
    if (ZYAN_FAILED(ZydisFormatterFormatInstruction(
            &f, &d.insn, d.ops, d.insn.operand_count_visible, buf, sizeof buf, addr, nullptr)))
        return "?";
    return buf;
}

bool fits_rel32(std::int64_t v) {
    return v >= INT32_MIN && v <= INT32_MAX;
}

// Where a relocated branch goes: an absolute address, a displaced instruction's place in the
// pad, or a trampoline after the jump back (both resolved once the pad is laid out).
struct Dest {
    enum Kind { Abs, Boundary, Tramp } kind;
    std::uint64_t value;
};

// What a trampoline does after writing the original return address (see the header).
struct Trampoline {
    bool indirect;
    std::uint64_t ret;
    Dest target; // for !indirect
};

class Emitter {
  public:
    explicit Emitter(std::uint64_t base) : base_(base) {}
    std::vector<std::uint8_t>& code() { return out_; }
    std::size_t pos() const { return out_.size(); }
    std::uint64_t here() const { return base_ + out_.size(); }

    void bytes(std::initializer_list<std::uint8_t> bs) { out_.insert(out_.end(), bs); }
    void bytes(std::span<const std::uint8_t> bs) { out_.insert(out_.end(), bs.begin(), bs.end()); }
    void u32(std::uint32_t v) {
        for (int i = 0; i < 4; ++i)
            out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    }
    void u64(std::uint64_t v) {
        for (int i = 0; i < 8; ++i)
            out_.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
    }

    // The rel32 field of an instruction whose next byte is at here()+4: either the distance now,
    // or a fixup. Returns false when an absolute target is out of range (nothing emitted).
    bool rel32(Dest d) {
        if (d.kind != Dest::Abs) {
            fixups_.push_back({pos(), d});
            u32(0);
            return true;
        }
        const auto rel = static_cast<std::int64_t>(d.value - (here() + 4));
        if (!fits_rel32(rel)) return false;
        u32(static_cast<std::uint32_t>(rel));
        return true;
    }
    bool in_range(Dest d, std::size_t insn_len) const {
        return d.kind != Dest::Abs ||
               fits_rel32(static_cast<std::int64_t>(d.value - (here() + insn_len)));
    }

    void jmp_abs(std::uint64_t target) { // jmp [rip+0]; dq target
        bytes({0xff, 0x25, 0, 0, 0, 0});
        u64(target);
    }
    void jmp(Dest d) {
        if (in_range(d, 5)) {
            bytes({0xe9});
            rel32(d);
        } else {
            jmp_abs(d.value);
        }
    }
    void jcc(std::uint8_t cc, Dest d) {
        if (in_range(d, 6)) {
            bytes({0x0f, static_cast<std::uint8_t>(0x80 | cc)});
            rel32(d);
        } else {
            bytes({static_cast<std::uint8_t>(0x70 | (cc ^ 1)), 14}); // skip the absolute jump
            jmp_abs(d.value);
        }
    }
    // A native call: the return address it pushes is in the pad.
    void call(Dest d) {
        if (in_range(d, 5)) {
            bytes({0xe8});
            rel32(d);
        } else {
            bytes({0xff, 0x15, 2, 0, 0, 0, 0xeb, 8}); // call [rip+2]; jmp over the target
            u64(d.value);
        }
    }
    // Writes an 8-byte immediate to [rsp+off] without touching registers or flags.
    void store_qword_at_rsp(std::uint8_t off, std::uint64_t v) {
        const auto s = static_cast<std::int64_t>(v);
        if (s >= INT32_MIN && s <= INT32_MAX) {
            bytes({0x48, 0xc7, 0x44, 0x24, off}); // mov qword [rsp+off], simm32
            u32(static_cast<std::uint32_t>(v));
        } else {
            bytes({0xc7, 0x44, 0x24, off}); // mov dword [rsp+off], lo
            u32(static_cast<std::uint32_t>(v));
            bytes({0xc7, 0x44, 0x24, static_cast<std::uint8_t>(off + 4)}); // mov dword, hi
            u32(static_cast<std::uint32_t>(v >> 32));
        }
    }

    struct Fixup {
        std::size_t at;
        Dest dest;
    };
    const std::vector<Fixup>& fixups() const { return fixups_; }

  private:
    std::uint64_t base_;
    std::vector<std::uint8_t> out_;
    std::vector<Fixup> fixups_;
};

struct Insn {
    Decoded d;
    std::uint64_t addr;
    std::size_t offset; // from `from`
    std::span<const std::uint8_t> bytes;
};

class Relocator {
  public:
    Relocator(std::uint64_t from, std::uint64_t to, std::size_t covered)
        : from_(from), covered_(covered), e_(to) {}

    Status add(const Insn& in) {
        const ZydisDecodedInstruction& i = in.d.insn;
        boundaries_.push_back(
            {static_cast<std::uint32_t>(in.offset), static_cast<std::uint32_t>(e_.pos())});
        if (i.mnemonic == ZYDIS_MNEMONIC_XBEGIN)
            return refuse(in, "its abort address is relative to the instruction");
        if (i.meta.category == ZYDIS_CATEGORY_CALL || i.meta.category == ZYDIS_CATEGORY_COND_BR ||
            i.meta.category == ZYDIS_CATEGORY_UNCOND_BR) {
            if (i.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR) {
                if (i.meta.category == ZYDIS_CATEGORY_CALL)
                    return refuse(in, "a far call pushes the pad's address");
                return copy_rip_relative(in);
            }
            // Intel ignores 0x66 on near branches, AMD truncates to 16 bits: ambiguous.
            if (i.operand_width != 64 || (i.attributes & ZYDIS_ATTRIB_HAS_OPERANDSIZE))
                return refuse(in, "operand-size prefix on a near branch");
        }
        if (i.meta.category == ZYDIS_CATEGORY_CALL)
            return has_relative_imm(in) ? relative_branch(in) : call_indirect(in);
        if (has_relative_imm(in)) return relative_branch(in);
        return copy_rip_relative(in); // a plain copy when nothing is rip-relative
    }

    Result<Relocated> finish() {
        boundaries_.push_back(
            {static_cast<std::uint32_t>(covered_), static_cast<std::uint32_t>(e_.pos())});
        e_.jmp(Dest{Dest::Abs, from_ + covered_});
        std::vector<std::size_t> tramp_at;
        for (const Trampoline& t : trampolines_) {
            tramp_at.push_back(e_.pos());
            if (t.indirect) {
                e_.bytes({0xff, 0x74, 0x24, 0x08}); // push qword [rsp+8]: the target
                e_.store_qword_at_rsp(16, t.ret);
                e_.bytes({0x48, 0x8d, 0x64, 0x24, 0x10}); // lea rsp, [rsp+16]
                e_.bytes({0xff, 0x64, 0x24, 0xf0});       // jmp qword [rsp-16]
            } else {
                e_.store_qword_at_rsp(0, t.ret);
                e_.jmp(t.target);
            }
        }
        for (const auto& f : e_.fixups()) {
            const std::size_t dest =
                f.dest.kind == Dest::Tramp ? tramp_at[f.dest.value] : pad_offset(f.dest.value);
            const auto rel = static_cast<std::uint32_t>(dest - (f.at + 4));
            for (int k = 0; k < 4; ++k)
                e_.code()[f.at + k] = static_cast<std::uint8_t>(rel >> (8 * k));
        }
        Relocated r;
        r.code = std::move(e_.code());
        r.covered = covered_;
        r.boundaries = std::move(boundaries_);
        return r;
    }

    // Offsets of every displaced instruction start, known before emission, so branches into
    // the displaced range can be checked.
    std::vector<std::size_t> starts;

  private:
    Error refuse(const Insn& in, std::string_view why) const {
        return make_error(ErrorCode::Unsupported,
                          fmt::format("cannot relocate '{}' at {:#x}: {}", describe(in.d, in.addr),
                                      in.addr, why));
    }

    static bool is_rip_memory(const Insn& in) {
        for (int k = 0; k < in.d.insn.operand_count; ++k)
            if (in.d.ops[k].type == ZYDIS_OPERAND_TYPE_MEMORY &&
                in.d.ops[k].mem.base == ZYDIS_REGISTER_RIP)
                return true;
        return false;
    }

    static bool has_relative_imm(const Insn& in) {
        for (int k = 0; k < in.d.insn.operand_count; ++k)
            if (in.d.ops[k].type == ZYDIS_OPERAND_TYPE_IMMEDIATE && in.d.ops[k].imm.is_relative)
                return true;
        return false;
    }

    // Absolute address of the relative operand (branch target or rip-relative memory).
    static std::uint64_t target_of(const Insn& in) {
        for (int k = 0; k < in.d.insn.operand_count; ++k) {
            const ZydisDecodedOperand& op = in.d.ops[k];
            const bool rel =
                (op.type == ZYDIS_OPERAND_TYPE_IMMEDIATE && op.imm.is_relative) ||
                (op.type == ZYDIS_OPERAND_TYPE_MEMORY && op.mem.base == ZYDIS_REGISTER_RIP);
            ZyanU64 a = 0;
            if (rel && ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in.d.insn, &op, in.addr, &a)))
                return a;
        }
        return 0;
    }

    // A branch target: inside the displaced bytes it must be an instruction start, and then goes
    // to the pad (FROM itself stays: that is the tracepoint again).
    Result<Dest> dest_for(const Insn& in, std::uint64_t target) const {
        if (target <= from_ || target >= from_ + covered_) return Dest{Dest::Abs, target};
        const std::size_t off = target - from_;
        for (std::size_t k = 0; k < starts.size(); ++k)
            if (starts[k] == off) return Dest{Dest::Boundary, k};
        return refuse(in, "it branches into the middle of a displaced instruction");
    }

    std::size_t pad_offset(std::size_t index) const { return boundaries_[index].pad_offset; }

    bool is_last(const Insn& in) const { return in.offset + in.d.insn.length == covered_; }

    // The instruction's bytes with its rip-relative disp32 re-aimed from the pad position.
    Result<std::vector<std::uint8_t>> rip_fixed(const Insn& in) const {
        std::vector<std::uint8_t> b(in.bytes.begin(), in.bytes.end());
        if (!is_rip_memory(in)) return b;
        const std::uint64_t target = target_of(in);
        const auto disp = static_cast<std::int64_t>(target - (e_.here() + b.size()));
        if (!fits_rel32(disp) || in.d.insn.raw.disp.size != 32)
            return refuse(in, fmt::format("its operand {:#x} is beyond ±2 GiB of the pad at {:#x}",
                                          target, e_.here()));
        const auto v = static_cast<std::uint32_t>(disp);
        for (int k = 0; k < 4; ++k)
            b[in.d.insn.raw.disp.offset + k] = static_cast<std::uint8_t>(v >> (8 * k));
        return b;
    }

    Status copy_rip_relative(const Insn& in) {
        auto b = rip_fixed(in);
        if (!b) return b.error();
        e_.bytes(*b);
        return ok_status();
    }

    Status relative_branch(const Insn& in) {
        const ZydisDecodedInstruction& i = in.d.insn;
        auto dest = dest_for(in, target_of(in));
        if (!dest) return dest.error();
        switch (i.mnemonic) {
        case ZYDIS_MNEMONIC_JMP:
            e_.jmp(*dest);
            return ok_status();
        case ZYDIS_MNEMONIC_CALL:
            if (!is_last(in)) {
                e_.call(*dest);
                return ok_status();
            }
            trampolines_.push_back({false, in.addr + i.length, *dest});
            e_.bytes({0xe8});
            e_.rel32(Dest{Dest::Tramp, trampolines_.size() - 1});
            return ok_status();
        case ZYDIS_MNEMONIC_LOOP:
        case ZYDIS_MNEMONIC_LOOPE:
        case ZYDIS_MNEMONIC_LOOPNE:
        case ZYDIS_MNEMONIC_JRCXZ:
        case ZYDIS_MNEMONIC_JECXZ: {
            // Same instruction (prefixes kept) hopping over a short jump to a long one.
            e_.bytes(in.bytes.first(in.bytes.size() - 1));
            e_.bytes({2});
            const std::size_t skip_at = e_.pos() + 1;
            e_.bytes({0xeb, 0});
            e_.jmp(*dest);
            e_.code()[skip_at] = static_cast<std::uint8_t>(e_.pos() - (skip_at + 1));
            return ok_status();
        }
        default:
            break;
        }
        const bool jcc8 = i.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT && (i.opcode & 0xf0) == 0x70;
        const bool jcc32 = i.opcode_map == ZYDIS_OPCODE_MAP_0F && (i.opcode & 0xf0) == 0x80;
        if (i.meta.category == ZYDIS_CATEGORY_COND_BR && (jcc8 || jcc32)) {
            e_.jcc(i.opcode & 0x0f, *dest);
            return ok_status();
        }
        return refuse(in, "unknown relative instruction");
    }

    Status call_indirect(const Insn& in) {
        auto b = rip_fixed(in);
        if (!b) return b.error();
        if (!is_last(in)) { // a native call returns into the pad
            e_.bytes(*b);
            return ok_status();
        }
        // call r/m (FF /2) -> push r/m (FF /6): same operand, same length.
        if (in.d.insn.opcode != 0xff || in.d.insn.raw.modrm.reg != 2)
            return refuse(in, "unexpected call encoding");
        std::uint8_t& modrm = (*b)[in.d.insn.raw.modrm.offset];
        modrm = static_cast<std::uint8_t>((modrm & 0xc7) | (6 << 3));
        e_.bytes(*b);
        trampolines_.push_back({true, in.addr + in.d.insn.length, Dest{Dest::Abs, 0}});
        e_.bytes({0xe8});
        e_.rel32(Dest{Dest::Tramp, trampolines_.size() - 1});
        return ok_status();
    }

    std::uint64_t from_;
    std::size_t covered_;
    Emitter e_;
    std::vector<Boundary> boundaries_;
    std::vector<Trampoline> trampolines_;
};

} // namespace

Result<std::size_t> instruction_length(std::span<const std::uint8_t> bytes, std::uint64_t addr) {
    auto d = decode(bytes, addr);
    if (!d) return d.error();
    return std::size_t{d->insn.length};
}

Result<std::vector<std::uint64_t>> pc_relative_targets(std::span<const std::uint8_t> bytes,
                                                       std::uint64_t addr) {
    std::vector<std::uint64_t> out;
    for (std::size_t at = 0; at < bytes.size();) {
        auto d = decode(bytes.subspan(at), addr + at);
        if (!d) return d.error();
        for (int k = 0; k < d->insn.operand_count; ++k) {
            const ZydisDecodedOperand& op = d->ops[k];
            const bool rel =
                (op.type == ZYDIS_OPERAND_TYPE_IMMEDIATE && op.imm.is_relative) ||
                (op.type == ZYDIS_OPERAND_TYPE_MEMORY && op.mem.base == ZYDIS_REGISTER_RIP);
            ZyanU64 target = 0;
            if (rel && ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&d->insn, &op, addr + at, &target)))
                out.push_back(target);
        }
        at += d->insn.length;
    }
    return out;
}

Result<Relocated> relocate(std::span<const std::uint8_t> code, std::uint64_t from, std::uint64_t to,
                           std::size_t min_bytes) {
    std::vector<Insn> insns;
    std::size_t covered = 0;
    while (covered < std::max<std::size_t>(min_bytes, 1)) {
        auto d = decode(code.subspan(covered), from + covered);
        if (!d) return d.error();
        const std::size_t len = d->insn.length;
        insns.push_back(Insn{*d, from + covered, covered, code.subspan(covered, len)});
        covered += len;
    }
    Relocator r(from, to, covered);
    for (const Insn& in : insns)
        r.starts.push_back(in.offset);
    for (const Insn& in : insns)
        if (auto st = r.add(in); !st) return st.error();
    return r.finish();
}

} // namespace tpagent::arch::x86_64
