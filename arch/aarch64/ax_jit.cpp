// The agent-expression compiler backend for AArch64: one pass over the validated program, each
// stack entry in a home of its own (the first eight in the callee-saved x21..x28, deeper ones
// in the frame), so helper calls need no saving and every jump target finds the entries where
// it expects them. Scratch: x9..x13; helpers get (ctx, out, a, b) in x0..x3 and answer
// {value, status} in x0:x1. Constants are folded; the rest is straight code.
#include "arch/aarch64/ax_jit.hpp"
#include "arch/aarch64/emitter.hpp"
#include "arch/aarch64/encoding.hpp"
#include "arch/compiler_backend.hpp"
#include "bytecode/constant_folding.hpp"
#include "bytecode/semantics.hpp"
#include <cstddef>
#include <optional>

namespace tpagent::arch::aarch64 {
namespace {

using bytecode::Context;
using bytecode::EvalOut;
using bytecode::EvalStatus;
using bytecode::HelperAddresses;
using bytecode::Insn;
using bytecode::Op;
using bytecode::Program;
namespace sem = bytecode::sem;
using namespace enc;

constexpr unsigned kCtx = 19, kOut = 20, kFirstHome = 21, kRegHomes = 8;
constexpr unsigned kA = 9, kB = 10, kT = 11, kU = 12;
constexpr std::uint32_t kSaveBytes = 96; // x29, x30, x19..x28

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

// Forward branches, patched once their target is known.
enum class Fix { B, BCond, Cbz };

class Translator {
  public:
    Translator(const Program& p, const HelperAddresses& helpers)
        : p_(p), helpers_(helpers), e_(0) {}
    std::vector<std::uint8_t> run();

  private:
    struct Slot {
        bool is_const = false;
        std::uint64_t k = 0;
    };
    struct Branch {
        std::size_t at;
        Fix fix;
        std::uint32_t target; // instruction index; for fails: index into fails_
    };
    struct Fail {
        std::uint32_t offset;
        std::optional<EvalStatus> fixed; // nullopt: the status is in x1
    };

    // --- homes ---
    std::uint32_t mem_offset(unsigned i) const { return sp_delta_ + 8 * (i - kRegHomes); }
    void load(unsigned i, unsigned r) {
        if (vs_[i].is_const)
            e_.move_wide(r, vs_[i].k);
        else if (i < kRegHomes)
            e_.put(mov_reg(r, kFirstHome + i));
        else
            e_.put(ldr_x(r, kSp, mem_offset(i)));
    }
    void store(unsigned i, unsigned r) {
        vs_[i].is_const = false;
        if (i < kRegHomes)
            e_.put(mov_reg(kFirstHome + i, r));
        else
            e_.put(str_x(r, kSp, mem_offset(i)));
    }
    void materialize(unsigned i) { // through kU: an IfGoto keeps its condition in kA
        if (!vs_[i].is_const) return;
        e_.move_wide(kU, vs_[i].k);
        store(i, kU);
    }
    void flush() {
        for (unsigned i = 0; i < vs_.size(); ++i)
            materialize(i);
    }
    void push(unsigned r) {
        vs_.emplace_back();
        store(static_cast<unsigned>(vs_.size() - 1), r);
    }

    // --- control ---
    void branch(Fix fix, std::uint32_t insn, std::uint32_t target) {
        branches_.push_back({e_.size(), fix, target});
        e_.put(insn);
    }
    void fail_cond(Cond c, std::uint32_t offset, std::optional<EvalStatus> fixed) {
        fails_.push_back({offset, fixed});
        fail_branches_.push_back(
            {e_.size(), Fix::BCond, static_cast<std::uint32_t>(fails_.size() - 1)});
        e_.put(0x54000000 | c);
    }
    void fail_if_status(std::uint32_t offset) { // cbnz x1 -> fail with the helper's status
        fails_.push_back({offset, std::nullopt});
        fail_branches_.push_back(
            {e_.size(), Fix::Cbz, static_cast<std::uint32_t>(fails_.size() - 1)});
        e_.put(0xb5000001);
    }
    void fail_always(std::uint32_t offset, EvalStatus s) {
        fails_.push_back({offset, s});
        fail_branches_.push_back(
            {e_.size(), Fix::B, static_cast<std::uint32_t>(fails_.size() - 1)});
        e_.put(0x14000000);
    }
    void jump_to(std::uint32_t target, const Insn& insn, std::uint32_t index) {
        if (target <= index) { // backward: one unit of the loop budget
            e_.put(ldr_x(kT, kSp, budget_offset()));
            e_.put(0xf1000400 | kT << 5 | kT); // subs xt, xt, #1
            e_.put(str_x(kT, kSp, budget_offset()));
            fail_cond(LO, insn.offset, EvalStatus::StepLimit);
        }
        branch(Fix::B, 0x14000000, target);
    }
    std::uint32_t budget_offset() const { return sp_delta_ + 8 * mem_slots_; }

    void call(std::uint64_t helper) {
        e_.put(mov_reg(0, kCtx));
        e_.put(mov_reg(1, kOut));
        e_.move_wide(16, helper);
        e_.put(kBlrX16);
    }
    void epilogue() {
        if (frame_bytes_) e_.put(add_imm(kSp, kSp, frame_bytes_));
        for (unsigned r = 19, at = 16; r < 29; r += 2, at += 16)
            e_.put(ldp(r, r + 1, kSp, at));
        e_.put(ldp_post(29, 30, static_cast<std::int32_t>(kSaveBytes)));
        e_.put(kRet);
    }

    void binary(const Insn& insn);
    void divrem(const Insn& insn);
    void extend(const Insn& insn);
    void ref(const Insn& insn);
    void printf_call(const Insn& insn);
    void translate(std::uint32_t index);
    static void patch(Emitter& e, const Branch& b, std::size_t to);

    const Program& p_;
    const HelperAddresses helpers_;
    Emitter e_;
    std::vector<Slot> vs_;
    std::uint32_t sp_delta_ = 0; // bytes below the body's sp (printf's arguments)
    unsigned mem_slots_ = 0;
    std::uint32_t frame_bytes_ = 0;
    std::vector<Branch> branches_, fail_branches_;
    std::vector<Fail> fails_;
    std::vector<std::size_t> labels_;
    bool dead_ = false;
};

void Translator::patch(Emitter& e, const Branch& b, std::size_t to) {
    const auto words = static_cast<std::int64_t>(to) / 4 - static_cast<std::int64_t>(b.at) / 4;
    std::uint32_t insn = 0;
    switch (b.fix) {
    case Fix::B:
        insn = 0x14000000 | (static_cast<std::uint32_t>(words) & 0x3ffffff);
        break;
    case Fix::BCond:
    case Fix::Cbz:
        insn = (static_cast<std::uint32_t>(words) & 0x7ffff) << 5;
        break;
    }
    e.patch_or(b.at, insn);
}

void Translator::binary(const Insn& insn) {
    const unsigned d = static_cast<unsigned>(vs_.size());
    const Slot a = vs_[d - 2], b = vs_[d - 1];
    if (a.is_const && b.is_const) {
        const std::uint64_t r = bytecode::fold_binary(insn.op, a.k, b.k);
        vs_.pop_back();
        vs_.back() = Slot{true, r};
        return;
    }
    load(d - 2, kA);
    load(d - 1, kB);
    switch (insn.op) {
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
        e_.put(alu_reg(insn.op == Op::Lsh ? kLslv : kLsrv, kA, kA, kB));
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
    vs_.pop_back();
    store(d - 2, kA);
}

void Translator::divrem(const Insn& insn) {
    const unsigned d = static_cast<unsigned>(vs_.size());
    const Slot a = vs_[d - 2], b = vs_[d - 1];
    const bool is_signed = insn.op == Op::DivSigned || insn.op == Op::RemSigned;
    const bool is_rem = insn.op == Op::RemSigned || insn.op == Op::RemUnsigned;
    if (b.is_const && b.k == 0) { // always fails; the rest of this path is never run
        fail_always(insn.offset, EvalStatus::DivideByZero);
        vs_.pop_back();
        vs_.back() = Slot{true, 0};
        return;
    }
    if (a.is_const && b.is_const) {
        vs_.pop_back();
        vs_.back() = Slot{true, bytecode::fold_divrem(insn.op, a.k, b.k)};
        return;
    }
    load(d - 2, kA);
    load(d - 1, kB);
    if (!b.is_const) {
        e_.put(cmp_imm(kB, 0));
        fail_cond(EQ, insn.offset, EvalStatus::DivideByZero);
    }
    // sdiv does not trap: INT64_MIN / -1 wraps to INT64_MIN, as sem::div_signed's 0 - a, and
    // the remainder a - q * b is then 0, as sem::rem_signed's.
    e_.put(alu_reg(is_signed ? kSdiv : kUdiv, kT, kA, kB));
    if (is_rem)
        e_.put(msub(kA, kT, kB, kA));
    else
        e_.put(mov_reg(kA, kT));
    vs_.pop_back();
    store(d - 2, kA);
}

void Translator::extend(const Insn& insn) {
    const unsigned i = static_cast<unsigned>(vs_.size() - 1);
    const std::uint64_t n = insn.imm;
    if (vs_[i].is_const) {
        vs_[i].k =
            insn.op == Op::Ext ? sem::sign_extend(vs_[i].k, n) : sem::zero_extend(vs_[i].k, n);
        return;
    }
    if (n >= 64) return;
    if (n == 0) { // ext 0 and zero_ext 0 alike give 0
        vs_[i] = Slot{true, 0};
        return;
    }
    load(i, kA);
    const auto bits = static_cast<unsigned>(n);
    e_.put(insn.op == Op::Ext ? sbfm(kA, kA, 0, bits - 1) : ubfm(kA, kA, 0, bits - 1));
    store(i, kA);
}

void Translator::ref(const Insn& insn) {
    const unsigned i = static_cast<unsigned>(vs_.size() - 1);
    const unsigned size = bytecode::ref_size(insn.op);
    load(i, kA); // the address
    // In the direct window: addr - window_start < window_loads; else rt::read.
    e_.put(ldr_x(kT, kCtx, offsetof(Context, window_start)));
    e_.put(alu_reg(kSub, kB, kA, kT));
    e_.put(ldr_x(kT, kCtx, offsetof(Context, window_loads)));
    e_.put(cmp_reg(kB, kT));
    const std::size_t to_slow = e_.size();
    e_.put(0x54000000 | HS);
    e_.put(ldr_x(kT, kCtx, offsetof(Context, window_host)));
    e_.put(load_indexed(size, kA, kT, kB));
    const std::size_t to_done = e_.size();
    e_.put(0x14000000);
    patch(e_, {to_slow, Fix::BCond, 0}, e_.size());
    e_.put(mov_reg(2, kA));
    e_.move_wide(3, size);
    call(helpers_.read);
    fail_if_status(insn.offset);
    e_.put(mov_reg(kA, 0));
    patch(e_, {to_done, Fix::B, 0}, e_.size());
    store(i, kA);
}

void Translator::printf_call(const Insn& insn) {
    const unsigned d = static_cast<unsigned>(vs_.size());
    const unsigned n = insn.target;
    // args[k] = entry d - 3 - k, laid out upwards from sp in a 16-byte-aligned block.
    const std::uint32_t block = (8 * n + 15) / 16 * 16;
    if (block) e_.put(sub_imm(kSp, kSp, block)), sp_delta_ += block;
    for (unsigned k = 0; k < n; ++k) {
        load(d - 3 - k, kA);
        e_.put(str_x(kA, kSp, 8 * k));
    }
    e_.move_wide(2, reinterpret_cast<std::uintptr_t>(&p_.formats()[insn.imm]));
    e_.put(add_imm(3, kSp, 0));
    call(helpers_.printf);
    if (block) e_.put(add_imm(kSp, kSp, block)), sp_delta_ -= block;
    fail_if_status(insn.offset);
    vs_.resize(d - 2 - n);
}

void Translator::translate(std::uint32_t index) {
    const Insn& insn = p_.insns()[index];
    const unsigned d = static_cast<unsigned>(vs_.size());
    switch (insn.op) {
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Lsh:
    case Op::RshSigned:
    case Op::RshUnsigned:
    case Op::BitAnd:
    case Op::BitOr:
    case Op::BitXor:
    case Op::Equal:
    case Op::LessSigned:
    case Op::LessUnsigned:
        binary(insn);
        break;
    case Op::DivSigned:
    case Op::DivUnsigned:
    case Op::RemSigned:
    case Op::RemUnsigned:
        divrem(insn);
        break;
    case Op::LogNot:
    case Op::BitNot:
        if (vs_[d - 1].is_const) {
            vs_[d - 1].k = insn.op == Op::LogNot ? vs_[d - 1].k == 0 : ~vs_[d - 1].k;
            break;
        }
        load(d - 1, kA);
        if (insn.op == Op::BitNot) {
            e_.put(kMvn | kA << 16 | kA);
        } else {
            e_.put(cmp_imm(kA, 0));
            e_.put(cset(kA, EQ));
        }
        store(d - 1, kA);
        break;
    case Op::Ext:
    case Op::ZeroExt:
        extend(insn);
        break;
    case Op::Ref8:
    case Op::Ref16:
    case Op::Ref32:
    case Op::Ref64:
        ref(insn);
        break;
    case Op::Const8:
    case Op::Const16:
    case Op::Const32:
    case Op::Const64:
        vs_.push_back(Slot{true, insn.imm});
        break;
    case Op::Dup:
    case Op::Pick: {
        const unsigned from = d - 1 - (insn.op == Op::Pick ? static_cast<unsigned>(insn.imm) : 0);
        if (vs_[from].is_const) {
            vs_.push_back(vs_[from]);
        } else {
            load(from, kA);
            push(kA);
        }
        break;
    }
    case Op::Pop:
        vs_.pop_back();
        break;
    case Op::Swap:
    case Op::Rot: {
        // swap: a b => b a; rot: a b c => c a b
        const unsigned count = insn.op == Op::Swap ? 2 : 3;
        const unsigned base = d - count;
        Slot before[3];
        constexpr unsigned scratch[3] = {kA, kB, kT};
        for (unsigned j = 0; j < count; ++j) {
            before[j] = vs_[base + j];
            if (!before[j].is_const) load(base + j, scratch[j]);
        }
        const unsigned swap_order[2] = {1, 0}, rot_order[3] = {2, 0, 1};
        const unsigned* order = insn.op == Op::Swap ? swap_order : rot_order;
        for (unsigned j = 0; j < count; ++j) {
            const unsigned src = order[j];
            if (before[src].is_const)
                vs_[base + j] = before[src];
            else
                store(base + j, scratch[src]);
        }
        break;
    }
    case Op::Reg:
    case Op::Getv:
    case Op::Tracev:
        e_.move_wide(2, insn.imm);
        e_.move_wide(3, 0);
        call(insn.op == Op::Reg    ? helpers_.reg
             : insn.op == Op::Getv ? helpers_.getv
                                   : helpers_.tracev);
        fail_if_status(insn.offset);
        push(0);
        break;
    case Op::Setv:
        e_.move_wide(2, insn.imm);
        load(d - 1, 3);
        call(helpers_.setv);
        fail_if_status(insn.offset);
        break;
    case Op::Trace:
    case Op::Tracenz:
        load(d - 2, 2);
        load(d - 1, 3);
        call(insn.op == Op::Trace ? helpers_.trace : helpers_.tracenz);
        fail_if_status(insn.offset);
        vs_.resize(d - 2);
        break;
    case Op::TraceQuick:
    case Op::Trace16:
        load(d - 1, 2);
        e_.move_wide(3, insn.imm);
        call(helpers_.trace);
        fail_if_status(insn.offset);
        break;
    case Op::Printf:
        printf_call(insn);
        break;
    case Op::IfGoto: {
        const Slot cond = vs_[d - 1];
        if (!cond.is_const) load(d - 1, kA);
        vs_.pop_back();
        if (cond.is_const) {
            if (cond.k != 0) {
                flush();
                jump_to(insn.target, insn, index);
                dead_ = true;
            }
            break;
        }
        flush(); // homes below the condition's; kA keeps it
        if (insn.target > index) {
            branch(Fix::Cbz, 0xb5000000 | kA, insn.target); // cbnz
        } else {
            const std::size_t skip = e_.size();
            e_.put(0xb4000000 | kA); // cbz: not taken
            jump_to(insn.target, insn, index);
            patch(e_, {skip, Fix::Cbz, 0}, e_.size());
        }
        break;
    }
    case Op::Goto:
        flush();
        jump_to(insn.target, insn, index);
        dead_ = true;
        break;
    case Op::End:
        if (d == 0)
            e_.move_wide(kA, 0);
        else
            load(d - 1, kA);
        e_.put(str_x(kA, kOut, offsetof(EvalOut, value)));
        e_.move_wide(0, 0);
        epilogue();
        dead_ = true;
        break;
    default: // floating-point opcodes never pass the validator
        fail_always(insn.offset, EvalStatus::StepLimit);
        dead_ = true;
        break;
    }
}

std::vector<std::uint8_t> Translator::run() {
    const auto insns = p_.insns();
    std::vector<bool> is_target(insns.size(), false);
    bool has_backward = false;
    for (std::uint32_t i = 0; i < insns.size(); ++i) {
        const Insn& in = insns[i];
        if (!in.reachable || (in.op != Op::Goto && in.op != Op::IfGoto)) continue;
        is_target[in.target] = true;
        has_backward |= in.target <= i;
    }

    // Prologue: x29, x30 and x19..x28 saved; room for the deep entries and the budget.
    e_.put(stp_pre(29, 30, -static_cast<std::int32_t>(kSaveBytes)));
    e_.put(add_imm(29, kSp, 0));
    for (unsigned r = 19, at = 16; r < 29; r += 2, at += 16)
        e_.put(stp(r, r + 1, kSp, at));
    const unsigned depth = p_.max_depth();
    mem_slots_ = depth > kRegHomes ? depth - kRegHomes : 0;
    frame_bytes_ = (8 * (mem_slots_ + (has_backward ? 1 : 0)) + 15) / 16 * 16;
    if (frame_bytes_) e_.put(sub_imm(kSp, kSp, frame_bytes_));
    e_.put(mov_reg(kCtx, 0));
    e_.put(mov_reg(kOut, 1));
    if (has_backward) {
        e_.move_wide(kT, p_.backward_jump_budget());
        e_.put(str_x(kT, kSp, budget_offset()));
    }

    labels_.assign(insns.size(), SIZE_MAX);
    for (std::uint32_t i = 0; i < insns.size(); ++i) {
        const Insn& in = insns[i];
        if (!in.reachable) continue;
        if (is_target[i]) {
            if (!dead_) flush();
            labels_[i] = e_.size();
            vs_.assign(in.depth, Slot{});
            dead_ = false;
        } else if (dead_) {
            continue;
        }
        translate(i);
    }
    for (const Branch& b : branches_)
        patch(e_, b, labels_[b.target]);
    // The failure exits: the status (fixed, or the helper's in x1) and the fault offset, then
    // one shared tail that stores the offset and returns.
    std::vector<std::size_t> to_tail;
    for (const Branch& b : fail_branches_) {
        patch(e_, b, e_.size());
        const Fail& f = fails_[b.target];
        e_.move_wide(kT, f.offset);
        if (f.fixed) {
            e_.put(str_x(kZr, kOut, offsetof(EvalOut, fault_address)));
            e_.move_wide(0, static_cast<std::uint32_t>(*f.fixed));
        } else {
            e_.put(0x2a0103e0); // mov w0, w1
        }
        to_tail.push_back(e_.size());
        e_.put(0x14000000);
    }
    for (std::size_t at : to_tail)
        patch(e_, {at, Fix::B, 0}, e_.size());
    if (!to_tail.empty()) {
        e_.put(str_w(kT, kOut, offsetof(EvalOut, fault_offset)));
        epilogue();
    }
    return e_.take();
}

class Aarch64Backend final : public bytecode::CompilerBackend {
  public:
    const char* name() const override { return "aarch64"; }
    using CompilerBackend::translate;
    Result<std::vector<std::uint8_t>> translate(const Program& program,
                                                const HelperAddresses& helpers) const override {
        if (!helpers.printf)
            for (const Insn& in : program.insns())
                if (in.reachable && in.op == Op::Printf)
                    return make_error(ErrorCode::Unsupported,
                                      "printf is not available to this compiled code");
        return Translator(program, helpers).run();
    }
};

} // namespace

const bytecode::CompilerBackend& ax_backend() {
    static const Aarch64Backend backend;
    return backend;
}

} // namespace tpagent::arch::aarch64

#if defined(__aarch64__)
const tpagent::bytecode::CompilerBackend& tpagent::arch::host_compiler_backend() {
    return tpagent::arch::aarch64::ax_backend();
}
#endif
