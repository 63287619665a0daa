// The agent-expression compiler backend for AArch64 (jit::FrontEnd walks the program): each
// stack entry in a home of its own (the first seven in the callee-saved x21..x27, deeper ones
// in the frame), so helper calls need no saving and every jump target finds the entries where
// it expects them. Scratch: x9..x13; helpers get (ctx, out, a, b) in x0..x3 and answer
// {value, status} in x0:x1. Constants are folded; the rest is straight code.
#include "arch/aarch64/ax_jit.hpp"
#include "arch/aarch64/emitter.hpp"
#include "arch/aarch64/encoding.hpp"
#include "arch/jit_front_end.hpp"
#include <cstddef>
#include <optional>

namespace tpagent::arch::aarch64 {
namespace {

using bytecode::Insn;
using bytecode::Op;
using jit::BranchSite;
using jit::HelperArg;
using namespace enc;

// Not x28: a Go program's goroutine, which Go's signal handler reads at any instruction.
constexpr unsigned kCtx = 19, kOut = 20, kFirstHome = 21, kRegHomes = 7;
constexpr unsigned kA = 9, kB = 10, kT = 11, kU = 12;
constexpr unsigned kScratch[3] = {kA, kB, kT}; // jit::Scratch roles
constexpr std::uint32_t kSaveBytes = 96;       // x29, x30, x19..x28

enum Cond : std::uint32_t { EQ = 0, NE = 1, HS = 2, LO = 3, HI = 8, LT = 11 };

// --- encodings ---
std::uint32_t alu_reg(std::uint32_t base, unsigned d, unsigned n, unsigned m) {
    return base | m << 16 | n << 5 | d;
}
constexpr std::uint32_t kAdd = 0x8b000000, kSub = 0xcb000000, kAnd = 0x8a000000, kOrr = 0xaa000000,
                        kEor = 0xca000000, kSubs = 0xeb000000, kMul = 0x9b007c00,
                        kSdiv = 0x9ac00c00, kUdiv = 0x9ac00800, kLslv = 0x9ac02000,
                        kLsrv = 0x9ac02400, kAsrv = 0x9ac02800;
std::uint32_t cmp_reg(unsigned n, unsigned m) {
    return alu_reg(kSubs, kZr, n, m);
}
std::uint32_t cmp_imm(unsigned n, std::uint32_t imm12) { // subs xzr, xn, #imm
    return 0xf100001f | imm12 << 10 | n << 5;
}
std::uint32_t cset(unsigned d, Cond c) { // csinc xd, xzr, xzr, !c
    return 0x9a9f07e0 | (c ^ 1u) << 12 | d;
}
std::uint32_t csel(unsigned d, unsigned n, unsigned m, Cond c) {
    return 0x9a800000 | m << 16 | c << 12 | n << 5 | d;
}
std::uint32_t msub(unsigned d, unsigned n, unsigned m, unsigned a) { // d = a - n * m
    return 0x9b008000 | m << 16 | a << 10 | n << 5 | d;
}
std::uint32_t ubfm(unsigned d, unsigned n, unsigned immr, unsigned imms) {
    return 0xd3400000 | immr << 16 | imms << 10 | n << 5 | d;
}
std::uint32_t sbfm(unsigned d, unsigned n, unsigned immr, unsigned imms) {
    return 0x93400000 | immr << 16 | imms << 10 | n << 5 | d;
}
// ldr{b,h,w,x} t, [n, m]: zero-extending loads of 1, 2, 4, 8 bytes.
std::uint32_t load_indexed(unsigned size, unsigned t, unsigned n, unsigned m) {
    const std::uint32_t sz = size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3;
    return 0x38606800 | sz << 30 | m << 16 | n << 5 | t;
}
std::uint32_t stp_pre(unsigned a, unsigned b, std::int32_t offset) { // stp a, b, [sp, #off]!
    return 0xa9800000 | (static_cast<std::uint32_t>(offset / 8) & 0x7f) << 15 | b << 10 | kSp << 5 |
           a;
}
std::uint32_t ldp_post(unsigned a, unsigned b, std::int32_t offset) { // ldp a, b, [sp], #off
    return 0xa8c00000 | (static_cast<std::uint32_t>(offset / 8) & 0x7f) << 15 | b << 10 | kSp << 5 |
           a;
}
constexpr std::uint32_t kRet = 0xd65f03c0;
constexpr std::uint32_t kMvn = 0xaa2003e0; // orn xd, xzr, xm

// Branches patched once their target is known (BranchSite::kind).
enum Fix : unsigned { kFixB, kFixBCond, kFixCbz };

// The AArch64 encoding of each operation.
class Translator final : public jit::FrontEnd {
  public:
    Translator(const bytecode::Program& p, const bytecode::HelperAddresses& helpers,
               const bytecode::StagedRegisterLayout& staged,
               const bytecode::FormatAddresses& formats)
        : FrontEnd(p, helpers, staged, formats), e_(0) {}

  private:
    // --- homes ---
    jit::Slot& slot(unsigned i) { return stack()[i]; }
    std::uint32_t mem_offset(unsigned i) const { return sp_delta_ + 8 * (i - kRegHomes); }
    void load(unsigned i, unsigned r) {
        if (slot(i).is_const)
            e_.move_wide(r, slot(i).k);
        else if (i < kRegHomes)
            e_.put(mov_reg(r, kFirstHome + i));
        else
            e_.put(ldr_x(r, kSp, mem_offset(i)));
    }
    void store(unsigned i, unsigned r) {
        slot(i).is_const = false;
        if (i < kRegHomes)
            e_.put(mov_reg(kFirstHome + i, r));
        else
            e_.put(str_x(r, kSp, mem_offset(i)));
    }
    void load_entry(unsigned i, unsigned scratch) override { load(i, kScratch[scratch]); }
    void store_entry(unsigned i, unsigned scratch) override { store(i, kScratch[scratch]); }
    void materialize(unsigned i) override { // through kU, which holds nothing across operations
        if (!slot(i).is_const) return;
        e_.move_wide(kU, slot(i).k);
        store(i, kU);
    }

    // --- control ---
    std::size_t code_size() const override { return e_.size(); }
    BranchSite put_branch(Fix fix, std::uint32_t insn) {
        const BranchSite site{e_.size(), fix};
        e_.put(insn);
        return site;
    }
    BranchSite emit_jump() override { return put_branch(kFixB, 0x14000000); }
    BranchSite emit_branch_if(unsigned i, bool nonzero) override {
        load(i, kA);
        return put_branch(kFixCbz, (nonzero ? 0xb5000000 : 0xb4000000) | kA); // cbnz / cbz
    }
    void patch(BranchSite site, std::size_t to) override;
    void fail_cond(Cond c, std::uint32_t offset, std::optional<bytecode::EvalStatus> fixed) {
        add_fail(put_branch(kFixBCond, 0x54000000 | c), offset, fixed);
    }
    void fail_if_status(std::uint32_t offset) { // cbnz x1 -> fail with the helper's status
        add_fail(put_branch(kFixCbz, 0xb5000001), offset, std::nullopt);
    }
    std::uint32_t budget_offset() const { return sp_delta_ + 8 * mem_slots_; }
    void emit_spend_budget(std::uint32_t offset) override {
        e_.put(ldr_x(kT, kSp, budget_offset()));
        e_.put(0xf1000400 | kT << 5 | kT); // subs xt, xt, #1
        e_.put(str_x(kT, kSp, budget_offset()));
        fail_cond(LO, offset, bytecode::EvalStatus::StepLimit);
    }

    void call(std::uint64_t helper) {
        e_.put(mov_reg(0, kCtx));
        e_.put(mov_reg(1, kOut));
        e_.move_wide(16, helper);
        e_.put(kBlrX16);
    }
    void load_arg(const HelperArg& arg, unsigned r) {
        if (arg.kind == HelperArg::Kind::Entry)
            load(static_cast<unsigned>(arg.value), r);
        else
            e_.move_wide(r, arg.value); // none: 0
    }
    void emit_call(const jit::HelperCall& helper_call) override {
        load_arg(helper_call.a, 2);
        load_arg(helper_call.b, 3);
        call(helper_call.helper);
        fail_if_status(helper_call.offset);
        if (helper_call.pushes_result) {
            stack().emplace_back();
            store(depth() - 1, 0);
        }
    }
    void epilogue() {
        if (frame_bytes_) e_.put(add_imm(kSp, kSp, frame_bytes_));
        for (unsigned r = 19, at = 16; r < 29; r += 2, at += 16)
            e_.put(ldp(r, r + 1, kSp, at));
        e_.put(ldp_post(29, 30, static_cast<std::int32_t>(kSaveBytes)));
        e_.put(kRet);
    }

    void emit_prologue(bool has_backward) override;
    void emit_binary(Op op) override;
    void emit_divrem(const Insn& insn) override;
    void emit_not(Op op) override;
    void emit_extend(Op op, unsigned bits) override;
    void emit_ref(const Insn& insn) override;
    void emit_load_staged(const bytecode::StagedRegister& staged) override {
        e_.put(ldr_x(kT, kCtx, offsetof(bytecode::Context, registers)));
        e_.move_wide(kB, staged.offset);
        e_.put(load_indexed(staged.size, kA, kT, kB));
    }
    void emit_printf(const Insn& insn) override;
    void emit_return() override;
    void emit_fail_status(const jit::FailExit& fail) override;
    void emit_fail_tail(bool reached) override;
    std::vector<std::uint8_t> take_code() override { return e_.take(); }

    Emitter e_;
    std::uint32_t sp_delta_ = 0; // bytes below the body's sp (printf's arguments)
    unsigned mem_slots_ = 0;
    std::uint32_t frame_bytes_ = 0;
};

void Translator::patch(BranchSite site, std::size_t to) {
    e_.link(site.at, to);
}

// x29, x30 and x19..x28 saved; room for the deep entries and the budget.
void Translator::emit_prologue(bool has_backward) {
    e_.put(stp_pre(29, 30, -static_cast<std::int32_t>(kSaveBytes)));
    e_.put(add_imm(29, kSp, 0));
    for (unsigned r = 19, at = 16; r < 29; r += 2, at += 16)
        e_.put(stp(r, r + 1, kSp, at));
    mem_slots_ = mem_slots(kRegHomes);
    frame_bytes_ = (8 * (mem_slots_ + (has_backward ? 1 : 0)) + 15) / 16 * 16;
    if (frame_bytes_) e_.put(sub_imm(kSp, kSp, frame_bytes_));
    e_.put(mov_reg(kCtx, 0));
    e_.put(mov_reg(kOut, 1));
    if (has_backward) {
        e_.move_wide(kT, program().backward_jump_budget());
        e_.put(str_x(kT, kSp, budget_offset()));
    }
}

void Translator::emit_binary(Op op) {
    const unsigned d = depth();
    load(d - 2, kA);
    load(d - 1, kB);
    switch (op) {
    case Op::Add:
        e_.put(alu_reg(kAdd, kA, kA, kB));
        break;
    case Op::Sub:
        e_.put(alu_reg(kSub, kA, kA, kB));
        break;
    case Op::Mul:
        e_.put(alu_reg(kMul, kA, kA, kB));
        break;
    case Op::BitAnd:
        e_.put(alu_reg(kAnd, kA, kA, kB));
        break;
    case Op::BitOr:
        e_.put(alu_reg(kOrr, kA, kA, kB));
        break;
    case Op::BitXor:
        e_.put(alu_reg(kEor, kA, kA, kB));
        break;
    case Op::Equal:
        e_.put(cmp_reg(kA, kB)), e_.put(cset(kA, EQ));
        break;
    case Op::LessSigned:
        e_.put(cmp_reg(kA, kB)), e_.put(cset(kA, LT));
        break;
    case Op::LessUnsigned:
        e_.put(cmp_reg(kA, kB)), e_.put(cset(kA, LO));
        break;
    case Op::Lsh:
    case Op::RshUnsigned: // the shift takes the count mod 64; counts of 64 or more give 0
        e_.put(alu_reg(op == Op::Lsh ? kLslv : kLsrv, kA, kA, kB));
        e_.put(cmp_imm(kB, 64));
        e_.put(csel(kA, kZr, kA, HS));
        break;
    case Op::RshSigned: // counts of 64 or more act as 63
        e_.move_wide(kT, 63);
        e_.put(cmp_imm(kB, 63));
        e_.put(csel(kB, kT, kB, HI));
        e_.put(alu_reg(kAsrv, kA, kA, kB));
        break;
    default:
        break;
    }
}

void Translator::emit_divrem(const Insn& insn) {
    const unsigned d = depth();
    const bool is_signed = insn.op == Op::DivSigned || insn.op == Op::RemSigned;
    const bool is_rem = insn.op == Op::RemSigned || insn.op == Op::RemUnsigned;
    const bool divisor_known = slot(d - 1).is_const;
    load(d - 2, kA);
    load(d - 1, kB);
    if (!divisor_known) {
        e_.put(cmp_imm(kB, 0));
        fail_cond(EQ, insn.offset, bytecode::EvalStatus::DivideByZero);
    }
    // sdiv does not trap: INT64_MIN / -1 wraps to INT64_MIN, as sem::div_signed's 0 - a, and
    // the remainder a - q * b is then 0, as sem::rem_signed's.
    e_.put(alu_reg(is_signed ? kSdiv : kUdiv, kT, kA, kB));
    if (is_rem)
        e_.put(msub(kA, kT, kB, kA));
    else
        e_.put(mov_reg(kA, kT));
}

void Translator::emit_not(Op op) {
    load(depth() - 1, kA);
    if (op == Op::BitNot) {
        e_.put(kMvn | kA << 16 | kA);
    } else {
        e_.put(cmp_imm(kA, 0));
        e_.put(cset(kA, EQ));
    }
}

void Translator::emit_extend(Op op, unsigned bits) {
    load(depth() - 1, kA);
    e_.put(op == Op::Ext ? sbfm(kA, kA, 0, bits - 1) : ubfm(kA, kA, 0, bits - 1));
}

void Translator::emit_ref(const Insn& insn) {
    const unsigned size = bytecode::ref_size(insn.op);
    load(depth() - 1, kA); // the address
    // In the direct window: addr - window_start < window_loads; else rt::read.
    e_.put(ldr_x(kT, kCtx, offsetof(bytecode::Context, window_start)));
    e_.put(alu_reg(kSub, kB, kA, kT));
    e_.put(ldr_x(kT, kCtx, offsetof(bytecode::Context, window_loads)));
    e_.put(cmp_reg(kB, kT));
    const BranchSite to_slow = put_branch(kFixBCond, 0x54000000 | HS);
    e_.put(ldr_x(kT, kCtx, offsetof(bytecode::Context, window_host)));
    e_.put(load_indexed(size, kA, kT, kB));
    const BranchSite to_done = emit_jump();
    patch_here(to_slow);
    e_.put(mov_reg(2, kA));
    e_.move_wide(3, size);
    call(helpers().read);
    fail_if_status(insn.offset);
    e_.put(mov_reg(kA, 0));
    patch_here(to_done);
}

void Translator::emit_printf(const Insn& insn) {
    const unsigned d = depth();
    const unsigned n = insn.target;
    // args[k] = entry d - 3 - k, laid out upwards from sp in a 16-byte-aligned block.
    const std::uint32_t block = (8 * n + 15) / 16 * 16;
    if (block) e_.put(sub_imm(kSp, kSp, block)), sp_delta_ += block;
    for (unsigned k = 0; k < n; ++k) {
        load(d - 3 - k, kA);
        e_.put(str_x(kA, kSp, 8 * k));
    }
    e_.move_wide(2, format_address(insn.imm));
    e_.put(add_imm(3, kSp, 0));
    call(helpers().printf);
    if (block) e_.put(add_imm(kSp, kSp, block)), sp_delta_ -= block;
    fail_if_status(insn.offset);
}

void Translator::emit_return() {
    load(depth() - 1, kA);
    e_.put(str_x(kA, kOut, offsetof(bytecode::EvalOut, value)));
    e_.move_wide(0, 0);
    epilogue();
}

// The status (fixed, or the helper's in x1) in w0 and the fault offset in kT.
void Translator::emit_fail_status(const jit::FailExit& fail) {
    e_.move_wide(kT, fail.offset);
    if (fail.fixed) {
        e_.put(str_x(kZr, kOut, offsetof(bytecode::EvalOut, fault_address)));
        e_.move_wide(0, static_cast<std::uint32_t>(*fail.fixed));
    } else {
        e_.put(0x2a0103e0); // mov w0, w1
    }
}

// Stores the offset and returns.
void Translator::emit_fail_tail(bool reached) {
    if (!reached) return;
    e_.put(str_w(kT, kOut, offsetof(bytecode::EvalOut, fault_offset)));
    epilogue();
}

} // namespace

const bytecode::CompilerBackend& ax_backend() {
    static const jit::Backend<Translator> backend("aarch64");
    return backend;
}

} // namespace tpagent::arch::aarch64
