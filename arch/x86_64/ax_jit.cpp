#include "arch/x86_64/ax_jit.hpp"
#include "arch/jit_front_end.hpp"
#include "arch/x86_64/x86_writer.hpp"
#include "bytecode/semantics.hpp"
#include <cstddef>
#include <optional>

namespace tpagent::arch::x86_64 {
namespace {

using namespace x86_writer;
using bytecode::Context;
using bytecode::EvalOut;
using bytecode::EvalStatus;
using bytecode::HelperAddresses;
using bytecode::Insn;
using bytecode::Op;
using bytecode::Program;
using jit::BranchSite;
using jit::FailExit;
using jit::HelperArg;
using jit::HelperCall;
using jit::is_binary;
using jit::is_divrem;
using jit::Slot;
namespace sem = bytecode::sem;

constexpr Reg kSlotRegs[] = {R8, R9, R10, R11, RBX, R12, R13, R14, R15, RBP};
constexpr unsigned kRegSlots = 10;
constexpr unsigned kCallerSavedSlots = 4;
constexpr Reg kCtx = RDI;
constexpr Reg kOut = RSI;
constexpr Reg kScratch[3] = {RAX, RCX, RDX}; // jit::Scratch roles

constexpr std::int32_t off(std::size_t o) {
    return static_cast<std::int32_t>(o);
}
const std::int32_t kWindowStart = off(offsetof(Context, window_start));
const std::int32_t kWindowLoads = off(offsetof(Context, window_loads));
const std::int32_t kWindowHost = off(offsetof(Context, window_host));
const std::int32_t kRegisters = off(offsetof(Context, registers));
const std::int32_t kOutValue = off(offsetof(EvalOut, value));
const std::int32_t kOutFaultAddress = off(offsetof(EvalOut, fault_address));
const std::int32_t kOutFaultOffset = off(offsetof(EvalOut, fault_offset));

bool is_pow2(std::uint64_t v) {
    return v && !(v & (v - 1));
}
unsigned log2(std::uint64_t v) {
    return static_cast<unsigned>(__builtin_ctzll(v));
}

// The binary opcodes that are one ALU instruction on rax (the first operand), and the
// comparisons: cmp, then the condition as 0 or 1 in rax.
struct AluOp {
    Op op;
    Alu alu;
};
constexpr AluOp kAluOps[] = {
    {Op::Add, ADD}, {Op::Sub, SUB}, {Op::BitAnd, AND}, {Op::BitOr, OR}, {Op::BitXor, XOR}};
struct Compare {
    Op op;
    Cond cond;
};
constexpr Compare kCompares[] = {{Op::Equal, E}, {Op::LessSigned, L}, {Op::LessUnsigned, B}};

// The x86-64 encoding of each operation; jit::FrontEnd walks the program.
class Translator final : public jit::FrontEnd {
  public:
    Translator(const Program& p, const HelperAddresses& helpers,
               const bytecode::StagedRegisterLayout& staged,
               const bytecode::FormatAddresses& formats)
        : FrontEnd(p, helpers, staged, formats) {}

  private:
    // --- stack entry homes ---
    bool in_reg(unsigned i) const { return i < kRegSlots; }
    Reg reg_home(unsigned i) const { return kSlotRegs[i]; }
    Mem mem_home(unsigned i) const {
        return {RSP, static_cast<std::int32_t>(8 * (i - kRegSlots)) + rsp_delta_};
    }
    Mem budget_home() const {
        return {RSP, static_cast<std::int32_t>(8 * mem_slots_) + rsp_delta_};
    }
    Slot& slot(unsigned i) { return stack()[i]; }

    void load_slot(unsigned i, Reg r) {
        if (slot(i).is_const)
            a_.mov_imm(r, slot(i).k);
        else if (static_cast<int>(i) == pending_)
            a_.mov(r, RAX);
        else if (in_reg(i))
            a_.mov(r, reg_home(i));
        else
            a_.load(r, mem_home(i));
    }
    void store_slot(unsigned i, Reg r) {
        slot(i).is_const = false;
        if (r == RAX && in_reg(i)) { // written to its home only if still needed there
            pending_ = static_cast<int>(i);
            return;
        }
        if (static_cast<int>(i) == pending_) pending_ = -1;
        if (in_reg(i))
            a_.mov(reg_home(i), r);
        else
            a_.store(mem_home(i), r);
    }
    void load_entry(unsigned i, unsigned scratch) override { load_slot(i, kScratch[scratch]); }
    void store_entry(unsigned i, unsigned scratch) override { store_slot(i, kScratch[scratch]); }
    void materialize(unsigned i) override {
        if (!slot(i).is_const) return;
        if (in_reg(i)) {
            a_.mov_imm(reg_home(i), slot(i).k);
        } else {
            a_.mov_imm(RAX, slot(i).k);
            a_.store(mem_home(i), RAX);
        }
        slot(i).is_const = false;
    }
    // Writes the entry that so far lives only in rax to its home register.
    void settle() override {
        if (pending_ >= 0 && static_cast<unsigned>(pending_) < depth() && !slot(pending_).is_const)
            a_.mov(reg_home(static_cast<unsigned>(pending_)), RAX);
        pending_ = -1;
    }
    // Whether `insn` starts by reading the rax-only entry into rax (so it need not be
    // written home first) and emits nothing that clobbers rax before that.
    bool consumes_pending(const Insn& insn, unsigned d) const {
        if (is_binary(insn.op) || is_divrem(insn.op)) return pending_ == static_cast<int>(d) - 2;
        switch (insn.op) {
        case Op::End:
        case Op::Const8:
        case Op::Const16:
        case Op::Const32:
        case Op::Const64:
            return true;
        case Op::Ext:
        case Op::ZeroExt:
        case Op::LogNot:
        case Op::BitNot:
        case Op::Ref8:
        case Op::Ref16:
        case Op::Ref32:
        case Op::Ref64:
            return pending_ == static_cast<int>(d) - 1;
        default:
            return false;
        }
    }
    void before_insn(const Insn& insn) override {
        if (!consumes_pending(insn, depth())) settle();
    }
    void at_label() override { pending_ = -1; }
    std::vector<Reg> live_caller_saved(unsigned survivors) {
        std::vector<Reg> regs;
        for (unsigned i = 0; i < survivors && i < kCallerSavedSlots; ++i)
            if (!slot(i).is_const) regs.push_back(reg_home(i));
        return regs;
    }

    // --- control ---
    std::size_t code_size() const override { return a_.pos(); }
    BranchSite emit_jump() override { return {a_.jmp()}; }
    BranchSite emit_branch_if(unsigned i, bool nonzero) override {
        if (in_reg(i)) {
            a_.test(reg_home(i), reg_home(i));
        } else {
            a_.load(RAX, mem_home(i));
            a_.test(RAX, RAX);
        }
        return {a_.jcc(nonzero ? NE : E)};
    }
    void patch(BranchSite site, std::size_t to) override { a_.patch(site.at, to); }
    void fail_if(Cond c, std::uint32_t offset, std::optional<EvalStatus> fixed) {
        add_fail({a_.jcc(c)}, offset, fixed);
    }
    void emit_spend_budget(std::uint32_t offset) override {
        a_.alu_mem_imm(SUB, budget_home(), 1);
        fail_if(B, offset, EvalStatus::StepLimit);
    }
    void epilogue() {
        if (frame_bytes_) a_.alu_imm(ADD, RSP, static_cast<std::int32_t>(frame_bytes_));
        for (auto it = callee_saved_.rbegin(); it != callee_saved_.rend(); ++it)
            a_.pop(*it);
        a_.ret();
    }

    // Calls helper(ctx, out, rdx, rcx) with `saved` preserved; set_args loads rdx and rcx.
    template <typename SetArgs>
    void call_helper(std::uint64_t helper, const std::vector<Reg>& saved, std::uint32_t offset,
                     SetArgs set_args) {
        a_.push(kCtx), a_.push(kOut);
        for (Reg r : saved)
            a_.push(r);
        rsp_delta_ += static_cast<std::int32_t>(8 * (2 + saved.size()));
        const bool pad = (body_mod_ + rsp_delta_) % 16 != 0;
        if (pad) a_.alu_imm(SUB, RSP, 8), rsp_delta_ += 8;
        set_args();
        a_.mov_imm(RAX, helper);
        a_.call(RAX);
        if (pad) a_.alu_imm(ADD, RSP, 8), rsp_delta_ -= 8;
        for (auto it = saved.rbegin(); it != saved.rend(); ++it)
            a_.pop(*it);
        a_.pop(kOut), a_.pop(kCtx);
        rsp_delta_ -= static_cast<std::int32_t>(8 * (2 + saved.size()));
        a_.test(RDX, RDX);
        fail_if(NE, offset, std::nullopt);
    }
    void load_arg(const HelperArg& arg, Reg r) {
        if (arg.kind == HelperArg::Kind::Immediate)
            a_.mov_imm(r, arg.value);
        else if (arg.kind == HelperArg::Kind::Entry)
            load_slot(static_cast<unsigned>(arg.value), r);
    }
    void emit_call(const HelperCall& call) override {
        call_helper(call.helper, live_caller_saved(call.survivors), call.offset, [&] {
            load_arg(call.a, RDX);
            load_arg(call.b, RCX);
        });
        if (call.pushes_result) push(jit::kScratch0);
    }

    void emit_prologue(bool has_backward) override;
    void emit_binary(Op op) override;
    void emit_divrem(const Insn& insn) override;
    void emit_not(Op op) override;
    void emit_extend(Op op, unsigned bits) override;
    void emit_ref(const Insn& insn) override { ref(insn, 0); }
    void emit_load_staged(const bytecode::StagedRegister& staged) override {
        a_.load(RAX, {kCtx, kRegisters});
        a_.load_sized(RAX, {RAX, off(staged.offset)}, staged.size);
    }
    void ref(const Insn& insn, unsigned sign_bits);
    void emit_printf(const Insn& insn) override;
    void emit_return() override;
    std::optional<std::uint32_t> translate_fused(std::uint32_t index) override;
    bool remainder_test(std::uint32_t index);
    void emit_slow_paths() override;
    void emit_fail_status(const FailExit& fail) override;
    void emit_fail_tail(bool /*reached*/) override { epilogue(); }
    std::vector<std::uint8_t> take_code() override { return std::move(a_.code()); }

    struct RefSlowPath {
        std::size_t fixup, resume;
        unsigned size, sign_bits;
        std::optional<std::uint64_t> const_addr; // else the address is in rax
        std::vector<Reg> saved;
        std::uint32_t offset;
    };

    X86Writer a_;
    std::int32_t rsp_delta_ = 0; // bytes pushed below the body's stack pointer
    unsigned mem_slots_ = 0;
    std::uint32_t frame_bytes_ = 0;
    std::int32_t body_mod_ = 0; // rsp % 16 in the body
    std::vector<Reg> callee_saved_;
    std::vector<RefSlowPath> refs_;
    int pending_ = -1; // entry whose value is in rax and not yet in its home register
};

// Saves the callee-saved homes in use, makes room for deep entries and the budget.
void Translator::emit_prologue(bool has_backward) {
    const unsigned max_depth = program().max_depth();
    for (unsigned i = kCallerSavedSlots; i < max_depth && i < kRegSlots; ++i)
        callee_saved_.push_back(kSlotRegs[i]);
    for (Reg r : callee_saved_)
        a_.push(r);
    mem_slots_ = mem_slots(kRegSlots);
    frame_bytes_ = 8 * (mem_slots_ + (has_backward ? 1 : 0));
    const std::uint32_t after_pushes = 8 + 8 * static_cast<std::uint32_t>(callee_saved_.size());
    if (frame_bytes_ && (after_pushes + frame_bytes_) % 16) frame_bytes_ += 8;
    body_mod_ = static_cast<std::int32_t>((after_pushes + frame_bytes_) % 16);
    if (frame_bytes_) a_.alu_imm(SUB, RSP, static_cast<std::int32_t>(frame_bytes_));
    if (has_backward) {
        a_.mov_imm(RAX, program().backward_jump_budget());
        a_.store(budget_home(), RAX);
    }
}

void Translator::emit_binary(Op op) {
    const unsigned d = depth();
    const Slot b = slot(d - 1);
    load_slot(d - 2, RAX);
    const bool imm = b.is_const && X86Writer::fits_i32(b.k);
    if (!imm) load_slot(d - 1, RCX);
    const auto imm32 = static_cast<std::int32_t>(b.k);
    auto alu = [&](Alu alu_op) {
        if (imm)
            a_.alu_imm(alu_op, RAX, imm32);
        else
            a_.alu(alu_op, RAX, RCX);
    };
    for (const auto& [bytecode_op, alu_op] : kAluOps)
        if (op == bytecode_op) alu(alu_op);
    for (const auto& [bytecode_op, cond] : kCompares)
        if (op == bytecode_op) alu(CMP), a_.setcc_movzx(cond, RAX);
    switch (op) {
    case Op::Mul:
        if (imm)
            a_.imul_imm(RAX, imm32);
        else
            a_.imul(RAX, RCX);
        break;
    case Op::Lsh:
    case Op::RshUnsigned:
    case Op::RshSigned: {
        const Shift s = op == Op::Lsh ? SHL : op == Op::RshSigned ? SAR : SHR;
        if (b.is_const) {
            if (b.k < 64)
                a_.shift_imm(s, RAX, static_cast<std::uint8_t>(b.k));
            else if (s == SAR)
                a_.shift_imm(SAR, RAX, 63);
            else
                a_.mov_imm(RAX, 0);
        } else if (s == SAR) { // counts of 64 or more act as 63
            a_.mov_imm(RDX, 63);
            a_.alu_imm(CMP, RCX, 63);
            a_.cmov(A, RCX, RDX);
            a_.shift_cl(SAR, RAX);
        } else { // counts of 64 or more give 0
            a_.shift_cl(s, RAX);
            a_.mov_imm(RDX, 0);
            a_.alu_imm(CMP, RCX, 64);
            a_.cmov(AE, RAX, RDX);
        }
        break;
    }
    default:
        break;
    }
}

void Translator::emit_divrem(const Insn& insn) {
    const unsigned d = depth();
    const Slot b = slot(d - 1);
    const bool is_signed = insn.op == Op::DivSigned || insn.op == Op::RemSigned;
    const bool is_rem = insn.op == Op::RemSigned || insn.op == Op::RemUnsigned;
    load_slot(d - 2, RAX);
    if (b.is_const && (b.k == 1 || (is_signed && static_cast<std::int64_t>(b.k) == -1))) {
        if (is_rem)
            a_.mov_imm(RAX, 0);
        else if (b.k != 1)
            a_.neg(RAX);
    } else if (b.is_const && is_pow2(b.k) && (!is_signed || b.k < (1ull << 63))) {
        const unsigned s = log2(b.k);
        if (!is_signed) {
            if (!is_rem) {
                a_.shift_imm(SHR, RAX, static_cast<std::uint8_t>(s));
            } else {
                a_.shift_imm(SHL, RAX, static_cast<std::uint8_t>(64 - s));
                a_.shift_imm(SHR, RAX, static_cast<std::uint8_t>(64 - s));
            }
        } else {
            // bias = k-1 for negative dividends, so the shift rounds toward zero.
            a_.mov(RCX, RAX);
            a_.shift_imm(SAR, RCX, 63);
            a_.shift_imm(SHR, RCX, static_cast<std::uint8_t>(64 - s));
            if (!is_rem) {
                a_.alu(ADD, RAX, RCX);
                a_.shift_imm(SAR, RAX, static_cast<std::uint8_t>(s));
            } else {
                a_.mov(RDX, RAX);
                a_.alu(ADD, RDX, RCX);
                if (s <= 31) {
                    a_.alu_imm(AND, RDX, -static_cast<std::int32_t>(1u << s >> 1) * 2);
                } else {
                    a_.shift_imm(SHR, RDX, static_cast<std::uint8_t>(s));
                    a_.shift_imm(SHL, RDX, static_cast<std::uint8_t>(s));
                }
                a_.alu(SUB, RAX, RDX);
            }
        }
    } else {
        load_slot(d - 1, RCX);
        std::size_t to_special = 0, to_done = 0;
        if (!b.is_const) {
            a_.test(RCX, RCX);
            fail_if(E, insn.offset, EvalStatus::DivideByZero);
            if (is_signed) { // INT64_MIN / -1 traps on x86; -1 is handled apart
                a_.alu_imm(CMP, RCX, -1);
                to_special = a_.jcc(E);
            }
        }
        if (is_signed) {
            a_.cqo();
            a_.idiv(RCX);
        } else {
            a_.mov_imm(RDX, 0);
            a_.div(RCX);
        }
        if (is_rem) a_.mov(RAX, RDX);
        if (to_special) {
            to_done = a_.jmp();
            a_.patch(to_special, a_.pos());
            if (is_rem)
                a_.mov_imm(RAX, 0);
            else
                a_.neg(RAX);
            a_.patch(to_done, a_.pos());
        }
    }
}

void Translator::emit_not(Op op) {
    load_slot(depth() - 1, RAX);
    if (op == Op::BitNot) {
        a_.not_(RAX);
    } else {
        a_.test(RAX, RAX);
        a_.setcc_movzx(E, RAX);
    }
}

void Translator::emit_extend(Op op, unsigned n) {
    load_slot(depth() - 1, RAX);
    if (op == Op::Ext) {
        if (n == 8 || n == 16 || n == 32) {
            a_.movsx(RAX, n);
        } else {
            a_.shift_imm(SHL, RAX, static_cast<std::uint8_t>(64 - n));
            a_.shift_imm(SAR, RAX, static_cast<std::uint8_t>(64 - n));
        }
    } else if (n == 8 || n == 16) {
        a_.movzx(RAX, n);
    } else if (n == 32) {
        a_.mov32(RAX, RAX);
    } else if (n < 32) {
        a_.alu_imm(AND, RAX, static_cast<std::int32_t>((1u << n) - 1), false);
    } else {
        a_.shift_imm(SHL, RAX, static_cast<std::uint8_t>(64 - n));
        a_.shift_imm(SHR, RAX, static_cast<std::uint8_t>(64 - n));
    }
}

// The loaded value is left in rax.
void Translator::ref(const Insn& insn, unsigned sign_bits) {
    const unsigned i = depth() - 1;
    const unsigned size = bytecode::ref_size(insn.op);
    std::optional<std::uint64_t> const_addr;
    // Inline load when addr - window_start < window_loads, else the rt::read slow path.
    if (slot(i).is_const) {
        const_addr = slot(i).k;
        a_.mov_imm(RCX, slot(i).k);
    } else {
        load_slot(i, RAX);
        a_.mov(RCX, RAX);
    }
    a_.alu_mem(SUB, RCX, {kCtx, kWindowStart});
    a_.alu_mem(CMP, RCX, {kCtx, kWindowLoads});
    const std::size_t fixup = a_.jcc(AE);
    a_.alu_mem(ADD, RCX, {kCtx, kWindowHost});
    if (sign_bits)
        a_.load_signed(RAX, RCX, size);
    else
        a_.load_sized(RAX, RCX, size);
    refs_.push_back(
        {fixup, a_.pos(), size, sign_bits, const_addr, live_caller_saved(i), insn.offset});
}

void Translator::emit_printf(const Insn& insn) {
    const unsigned d = depth();
    const unsigned n = insn.target;
    const std::vector<Reg> saved = live_caller_saved(d - 2 - n);
    a_.push(kCtx), a_.push(kOut);
    for (Reg r : saved)
        a_.push(r);
    const std::int32_t pushed = static_cast<std::int32_t>(8 * (2 + saved.size()));
    rsp_delta_ += pushed;
    const std::int32_t pad =
        (body_mod_ + rsp_delta_ + 8 * static_cast<std::int32_t>(n)) % 16 ? 8 : 0;
    if (pad) a_.alu_imm(SUB, RSP, pad), rsp_delta_ += pad;
    for (unsigned j = n; j-- > 0;) { // args[0] ends up at the lowest address
        load_slot(d - 3 - j, RAX);
        a_.push(RAX);
        rsp_delta_ += 8;
    }
    a_.mov(RCX, RSP);
    a_.mov_imm(RDX, format_address(insn.imm));
    a_.mov_imm(RAX, helpers().printf);
    a_.call(RAX);
    const std::int32_t drop = static_cast<std::int32_t>(8 * n) + pad;
    if (drop) a_.alu_imm(ADD, RSP, drop);
    rsp_delta_ -= drop;
    for (auto it = saved.rbegin(); it != saved.rend(); ++it)
        a_.pop(*it);
    a_.pop(kOut), a_.pop(kCtx);
    rsp_delta_ -= pushed;
    a_.test(RDX, RDX);
    fail_if(NE, insn.offset, std::nullopt);
}

void Translator::emit_return() {
    load_slot(depth() - 1, RAX);
    a_.store({kOut, kOutValue}, RAX);
    a_.mov_imm(RAX, 0);
    epilogue();
}

// `a % 2^s == 0` (optionally with ext/zero_ext of at least s bits in between) is
// `(a & (2^s - 1)) == 0` for signed and unsigned remainders alike.
bool Translator::remainder_test(std::uint32_t index) {
    const auto insns = program().insns();
    const unsigned d = depth();
    const Slot a = slot(d - 2), b = slot(d - 1);
    if (a.is_const || !b.is_const || b.k < 2 || b.k > (1ull << 31) || !sem::is_pow2(b.k))
        return false;
    std::uint32_t j = index + 1;
    const bool extended = fusible(index, 1) &&
                          (insns[j].op == Op::Ext || insns[j].op == Op::ZeroExt) &&
                          insns[j].imm >= log2(b.k);
    if (extended) ++j;
    const std::uint32_t n = j - index;
    if (!fusible(index, n + 1) || insns[j].imm != 0 || insns[j + 1].op != Op::Equal) return false;
    switch (insns[j].op) {
    case Op::Const8:
    case Op::Const16:
    case Op::Const32:
    case Op::Const64:
        break;
    default:
        return false;
    }
    load_slot(d - 2, RAX);
    a_.test_imm(RAX, static_cast<std::int32_t>(b.k - 1));
    a_.setcc_movzx(E, RAX);
    stack().pop_back();
    store_slot(d - 2, RAX);
    return true;
}

// Fused forms of what gdb emits all the time.
std::optional<std::uint32_t> Translator::translate_fused(std::uint32_t index) {
    const Insn& insn = program().insns()[index];
    if ((insn.op == Op::RemSigned || insn.op == Op::RemUnsigned) && remainder_test(index)) {
        const Insn& next = program().insns()[index + 1];
        return next.op == Op::Ext || next.op == Op::ZeroExt ? 3 : 2;
    }
    if ((insn.op == Op::Ref8 || insn.op == Op::Ref16 || insn.op == Op::Ref32) &&
        fusible(index, 1)) {
        const Insn& next = program().insns()[index + 1];
        if (next.op == Op::Ext && next.imm == 8 * bytecode::ref_size(insn.op)) {
            ref(insn, static_cast<unsigned>(next.imm));
            store_slot(depth() - 1, RAX);
            return 1;
        }
    }
    return std::nullopt;
}

void Translator::emit_slow_paths() {
    for (const RefSlowPath& r : refs_) {
        a_.patch(r.fixup, a_.pos());
        call_helper(helpers().read, r.saved, r.offset, [&] {
            if (r.const_addr)
                a_.mov_imm(RDX, *r.const_addr);
            else
                a_.mov(RDX, RAX);
            a_.mov_imm(RCX, r.size);
        });
        if (r.sign_bits) a_.movsx(RAX, r.sign_bits);
        a_.patch(a_.jmp(), r.resume);
    }
}

void Translator::emit_fail_status(const FailExit& fail) {
    a_.store_imm32({kOut, kOutFaultOffset}, fail.offset, false);
    if (fail.fixed) {
        a_.store_imm32({kOut, kOutFaultAddress}, 0, true);
        a_.mov_imm(RAX, static_cast<std::uint32_t>(*fail.fixed));
    } else {
        a_.mov32(RAX, RDX);
    }
}

} // namespace

const bytecode::CompilerBackend& ax_backend() {
    static const jit::Backend<Translator> backend("x86-64");
    return backend;
}

} // namespace tpagent::arch::x86_64
