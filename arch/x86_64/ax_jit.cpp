#include "arch/x86_64/ax_jit.hpp"
#include "arch/compiler_backend.hpp"
#include "arch/x86_64/ax_jit_asm.hpp"
#include "bytecode/constant_folding.hpp"
#include "bytecode/semantics.hpp"
#include <cstddef>
#include <optional>

namespace tpagent::arch::x86_64 {
namespace {

using namespace axjit;
using bytecode::Context;
using bytecode::EvalOut;
using bytecode::EvalStatus;
using bytecode::HelperAddresses;
using bytecode::Insn;
using bytecode::Op;
using bytecode::Program;
namespace sem = bytecode::sem;

constexpr Reg kSlotRegs[] = {R8, R9, R10, R11, RBX, R12, R13, R14, R15, RBP};
constexpr unsigned kRegSlots = 10;
constexpr unsigned kCallerSavedSlots = 4;
constexpr Reg kCtx = RDI;
constexpr Reg kOut = RSI;

constexpr std::int32_t off(std::size_t o) {
    return static_cast<std::int32_t>(o);
}
const std::int32_t kWindowStart = off(offsetof(Context, window_start));
const std::int32_t kWindowLoads = off(offsetof(Context, window_loads));
const std::int32_t kWindowHost = off(offsetof(Context, window_host));
const std::int32_t kOutValue = off(offsetof(EvalOut, value));
const std::int32_t kOutFaultAddress = off(offsetof(EvalOut, fault_address));
const std::int32_t kOutFaultOffset = off(offsetof(EvalOut, fault_offset));

// A stack entry during translation: a compile-time constant, or in its home.
struct Slot {
    bool is_const = false;
    std::uint64_t k = 0;
};

bool is_pow2(std::uint64_t v) {
    return v && !(v & (v - 1));
}
unsigned log2(std::uint64_t v) {
    return static_cast<unsigned>(__builtin_ctzll(v));
}

// The two-operand opcodes Translator::binary translates (one result from two entries).
bool is_binary(Op op) {
    switch (op) {
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
        return true;
    default:
        return false;
    }
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

// Those Translator::divrem translates (two entries, and a check for a zero divisor).
bool is_divrem(Op op) {
    return op == Op::DivSigned || op == Op::DivUnsigned || op == Op::RemSigned ||
           op == Op::RemUnsigned;
}

class Translator {
  public:
    Translator(const Program& p, const HelperAddresses& helpers) : p_(p), helpers_(helpers) {}
    std::vector<std::uint8_t> run();

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

    void load_slot(unsigned i, Reg r) {
        if (vs_[i].is_const)
            a_.mov_imm(r, vs_[i].k);
        else if (static_cast<int>(i) == pending_)
            a_.mov(r, RAX);
        else if (in_reg(i))
            a_.mov(r, reg_home(i));
        else
            a_.load(r, mem_home(i));
    }
    void store_slot(unsigned i, Reg r) {
        vs_[i].is_const = false;
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
    void push_reg(Reg r) { // push a new entry holding r
        vs_.emplace_back();
        store_slot(static_cast<unsigned>(vs_.size() - 1), r);
    }
    void push_const(std::uint64_t k) { vs_.push_back(Slot{true, k}); }
    void materialize(unsigned i) {
        if (!vs_[i].is_const) return;
        if (in_reg(i)) {
            a_.mov_imm(reg_home(i), vs_[i].k);
        } else {
            a_.mov_imm(RAX, vs_[i].k);
            a_.store(mem_home(i), RAX);
        }
        vs_[i].is_const = false;
    }
    // Writes the entry that so far lives only in rax to its home register.
    void settle() {
        if (pending_ >= 0 && static_cast<unsigned>(pending_) < vs_.size() &&
            !vs_[pending_].is_const)
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
    void flush() {
        settle();
        for (unsigned i = 0; i < vs_.size(); ++i)
            materialize(i);
    }
    std::vector<Reg> live_caller_saved(unsigned survivors) const {
        std::vector<Reg> regs;
        for (unsigned i = 0; i < survivors && i < kCallerSavedSlots; ++i)
            if (!vs_[i].is_const) regs.push_back(reg_home(i));
        return regs;
    }

    // --- exits ---
    void fail_if(Cond c, std::uint32_t offset, std::optional<EvalStatus> fixed) {
        fails_.push_back({a_.jcc(c), offset, fixed});
    }
    void fail_always(std::uint32_t offset, EvalStatus s) {
        fails_.push_back({a_.jmp(), offset, s});
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

    void jump_to(std::uint32_t target, const Insn& insn, std::uint32_t index) {
        if (target <= index) { // backward: spend one unit of the loop budget
            a_.alu_mem_imm(SUB, budget_home(), 1);
            fail_if(B, insn.offset, EvalStatus::StepLimit);
        }
        jumps_.push_back({a_.jmp(), target});
    }

    void binary(const Insn& insn);
    void divrem(const Insn& insn);
    void extend(const Insn& insn);
    void ref(const Insn& insn, unsigned sign_bits);
    bool remainder_test(std::uint32_t index);
    void printf_call(const Insn& insn);
    // Emits insns[index]; returns how many following instructions it also covered.
    std::uint32_t translate(std::uint32_t index);
    // Whether insns[index+1 .. index+n] can only be entered from insns[index].
    bool fusible(std::uint32_t index, std::uint32_t n) const {
        const auto insns = p_.insns();
        for (std::uint32_t k = 1; k <= n; ++k)
            if (index + k >= insns.size() || !insns[index + k].reachable || is_target_[index + k])
                return false;
        return true;
    }
    void emit_slow_paths();

    struct Fail {
        std::size_t fixup;
        std::uint32_t offset;
        std::optional<EvalStatus> fixed; // nullopt: status is in rdx
    };
    struct RefSlowPath {
        std::size_t fixup, resume;
        unsigned size, sign_bits;
        std::optional<std::uint64_t> const_addr; // else the address is in rax
        std::vector<Reg> saved;
        std::uint32_t offset;
    };
    struct Jump {
        std::size_t fixup;
        std::uint32_t target;
    };

    const Program& p_;
    const HelperAddresses helpers_;
    Assembler a_;
    std::vector<Slot> vs_;
    std::int32_t rsp_delta_ = 0; // bytes pushed below the body's stack pointer
    unsigned mem_slots_ = 0;
    std::uint32_t frame_bytes_ = 0;
    std::int32_t body_mod_ = 0; // rsp % 16 in the body
    std::vector<Reg> callee_saved_;
    std::vector<Fail> fails_;
    std::vector<RefSlowPath> refs_;
    std::vector<Jump> jumps_;
    std::vector<std::size_t> labels_;
    bool dead_ = false;           // no path reaches the current position
    std::vector<bool> is_target_; // per instruction: some jump lands on it
    int pending_ = -1;            // entry whose value is in rax and not yet in its home register
};

void Translator::binary(const Insn& insn) {
    const unsigned d = static_cast<unsigned>(vs_.size());
    const Slot a = vs_[d - 2], b = vs_[d - 1];
    if (a.is_const && b.is_const) {
        const std::uint64_t r = bytecode::fold_binary(insn.op, a.k, b.k);
        vs_.pop_back();
        vs_.back() = Slot{true, r};
        return;
    }
    load_slot(d - 2, RAX);
    const bool imm = b.is_const && Assembler::fits_i32(b.k);
    if (!imm) load_slot(d - 1, RCX);
    const auto imm32 = static_cast<std::int32_t>(b.k);
    auto alu = [&](Alu op) {
        if (imm)
            a_.alu_imm(op, RAX, imm32);
        else
            a_.alu(op, RAX, RCX);
    };
    for (const auto& [op, alu_op] : kAluOps)
        if (insn.op == op) alu(alu_op);
    for (const auto& [op, cond] : kCompares)
        if (insn.op == op) alu(CMP), a_.setcc_movzx(cond, RAX);
    switch (insn.op) {
    case Op::Mul:
        if (imm)
            a_.imul_imm(RAX, imm32);
        else
            a_.imul(RAX, RCX);
        break;
    case Op::Lsh:
    case Op::RshUnsigned:
    case Op::RshSigned: {
        const Shift s = insn.op == Op::Lsh ? SHL : insn.op == Op::RshSigned ? SAR : SHR;
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
    vs_.pop_back();
    store_slot(d - 2, RAX);
}

void Translator::divrem(const Insn& insn) {
    const unsigned d = static_cast<unsigned>(vs_.size());
    const Slot a = vs_[d - 2], b = vs_[d - 1];
    const bool is_signed = insn.op == Op::DivSigned || insn.op == Op::RemSigned;
    const bool is_rem = insn.op == Op::RemSigned || insn.op == Op::RemUnsigned;
    vs_.pop_back();
    if (b.is_const && b.k == 0) { // always fails; the rest of this path is never run
        fail_always(insn.offset, EvalStatus::DivideByZero);
        vs_.back() = Slot{true, 0};
        return;
    }
    if (a.is_const && b.is_const) {
        vs_.back() = Slot{true, bytecode::fold_divrem(insn.op, a.k, b.k)};
        return;
    }
    vs_.push_back(b); // keep indices valid for load_slot
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
    vs_.pop_back();
    store_slot(d - 2, RAX);
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
    load_slot(i, RAX);
    if (n == 0) {
        a_.mov_imm(RAX, 0);
    } else if (insn.op == Op::Ext) {
        if (n == 8 || n == 16 || n == 32) {
            a_.movsx(RAX, static_cast<unsigned>(n));
        } else {
            a_.shift_imm(SHL, RAX, static_cast<std::uint8_t>(64 - n));
            a_.shift_imm(SAR, RAX, static_cast<std::uint8_t>(64 - n));
        }
    } else if (n == 8 || n == 16) {
        a_.movzx(RAX, static_cast<unsigned>(n));
    } else if (n == 32) {
        a_.mov32(RAX, RAX);
    } else if (n < 32) {
        a_.alu_imm(AND, RAX, static_cast<std::int32_t>((1u << n) - 1), false);
    } else {
        a_.shift_imm(SHL, RAX, static_cast<std::uint8_t>(64 - n));
        a_.shift_imm(SHR, RAX, static_cast<std::uint8_t>(64 - n));
    }
    store_slot(i, RAX);
}

void Translator::ref(const Insn& insn, unsigned sign_bits) {
    const unsigned i = static_cast<unsigned>(vs_.size() - 1);
    const unsigned size = bytecode::ref_size(insn.op);
    std::optional<std::uint64_t> const_addr;
    // Inline load when addr - window_start < window_loads, else the rt::read slow path.
    if (vs_[i].is_const) {
        const_addr = vs_[i].k;
        a_.mov_imm(RCX, vs_[i].k);
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
    store_slot(i, RAX);
}

void Translator::printf_call(const Insn& insn) {
    const unsigned d = static_cast<unsigned>(vs_.size());
    const unsigned n = insn.target;
    const unsigned survivors = d - 2 - n;
    const std::vector<Reg> saved = live_caller_saved(survivors);
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
    a_.mov_imm(RDX, reinterpret_cast<std::uintptr_t>(&p_.formats()[insn.imm]));
    a_.mov_imm(RAX, helpers_.printf);
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
    vs_.resize(survivors);
}

// `a % 2^s == 0` (optionally with ext/zero_ext of at least s bits in between) is
// `(a & (2^s - 1)) == 0` for signed and unsigned remainders alike.
bool Translator::remainder_test(std::uint32_t index) {
    const auto insns = p_.insns();
    const unsigned d = static_cast<unsigned>(vs_.size());
    const Slot a = vs_[d - 2], b = vs_[d - 1];
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
    vs_.pop_back();
    store_slot(d - 2, RAX);
    return true;
}

std::uint32_t Translator::translate(std::uint32_t index) {
    const Insn& insn = p_.insns()[index];
    const unsigned d = static_cast<unsigned>(vs_.size());
    if (!consumes_pending(insn, d)) settle();
    // Fused forms of what gdb emits all the time.
    if ((insn.op == Op::RemSigned || insn.op == Op::RemUnsigned) && remainder_test(index)) {
        const Insn& next = p_.insns()[index + 1];
        return next.op == Op::Ext || next.op == Op::ZeroExt ? 3 : 2;
    }
    if ((insn.op == Op::Ref8 || insn.op == Op::Ref16 || insn.op == Op::Ref32) &&
        fusible(index, 1)) {
        const Insn& next = p_.insns()[index + 1];
        if (next.op == Op::Ext && next.imm == 8 * bytecode::ref_size(insn.op)) {
            ref(insn, static_cast<unsigned>(next.imm));
            return 1;
        }
    }
    if (is_binary(insn.op)) {
        binary(insn);
        return 0;
    }
    if (is_divrem(insn.op)) {
        divrem(insn);
        return 0;
    }
    switch (insn.op) {
    case Op::LogNot:
    case Op::BitNot:
        if (vs_[d - 1].is_const) {
            vs_[d - 1].k = insn.op == Op::LogNot ? vs_[d - 1].k == 0 : ~vs_[d - 1].k;
            break;
        }
        load_slot(d - 1, RAX);
        if (insn.op == Op::BitNot) {
            a_.not_(RAX);
        } else {
            a_.test(RAX, RAX);
            a_.setcc_movzx(E, RAX);
        }
        store_slot(d - 1, RAX);
        break;
    case Op::Ext:
    case Op::ZeroExt:
        extend(insn);
        break;
    case Op::Ref8:
    case Op::Ref16:
    case Op::Ref32:
    case Op::Ref64:
        ref(insn, 0);
        break;
    case Op::Const8:
    case Op::Const16:
    case Op::Const32:
    case Op::Const64:
        push_const(insn.imm);
        break;
    case Op::Dup:
    case Op::Pick: {
        const unsigned from = d - 1 - (insn.op == Op::Pick ? static_cast<unsigned>(insn.imm) : 0);
        if (vs_[from].is_const) {
            push_const(vs_[from].k);
        } else {
            load_slot(from, RAX);
            push_reg(RAX);
        }
        break;
    }
    case Op::Pop:
        vs_.pop_back();
        break;
    case Op::Swap:
    case Op::Rot: {
        // Read the entries into scratch registers, then write them back permuted.
        const unsigned count = insn.op == Op::Swap ? 2 : 3;
        const unsigned base = d - count;
        Slot before[3];
        constexpr Reg scratch[3] = {RAX, RCX, RDX};
        for (unsigned j = 0; j < count; ++j) {
            before[j] = vs_[base + j];
            if (!before[j].is_const) load_slot(base + j, scratch[j]);
        }
        // swap: a b => b a; rot: a b c => c a b
        const unsigned swap_order[2] = {1, 0}, rot_order[3] = {2, 0, 1};
        const unsigned* order = insn.op == Op::Swap ? swap_order : rot_order;
        for (unsigned j = 0; j < count; ++j) {
            const unsigned src = order[j];
            if (before[src].is_const)
                vs_[base + j] = before[src];
            else
                store_slot(base + j, scratch[src]);
        }
        break;
    }
    case Op::Reg:
    case Op::Getv:
    case Op::Tracev: {
        const std::uint64_t helper = insn.op == Op::Reg    ? helpers_.reg
                                     : insn.op == Op::Getv ? helpers_.getv
                                                           : helpers_.tracev;
        call_helper(helper, live_caller_saved(d), insn.offset, [&] { a_.mov_imm(RDX, insn.imm); });
        push_reg(RAX);
        break;
    }
    case Op::Setv:
        call_helper(helpers_.setv, live_caller_saved(d), insn.offset, [&] {
            a_.mov_imm(RDX, insn.imm);
            load_slot(d - 1, RCX);
        });
        break;
    case Op::Trace:
    case Op::Tracenz:
        call_helper(insn.op == Op::Trace ? helpers_.trace : helpers_.tracenz,
                    live_caller_saved(d - 2), insn.offset, [&] {
                        load_slot(d - 2, RDX);
                        load_slot(d - 1, RCX);
                    });
        vs_.resize(d - 2);
        break;
    case Op::TraceQuick:
    case Op::Trace16:
        call_helper(helpers_.trace, live_caller_saved(d), insn.offset, [&] {
            load_slot(d - 1, RDX);
            a_.mov_imm(RCX, insn.imm);
        });
        break;
    case Op::Printf:
        printf_call(insn);
        break;
    case Op::IfGoto: {
        const Slot cond = vs_[d - 1];
        vs_.pop_back();
        if (cond.is_const) {
            if (cond.k != 0) {
                flush();
                jump_to(insn.target, insn, index);
                dead_ = true;
            }
            break;
        }
        flush(); // writes homes below the condition's, which stays intact
        if (in_reg(d - 1)) {
            a_.test(reg_home(d - 1), reg_home(d - 1));
        } else {
            a_.load(RAX, mem_home(d - 1));
            a_.test(RAX, RAX);
        }
        if (insn.target > index) {
            jumps_.push_back({a_.jcc(NE), insn.target});
        } else {
            const std::size_t skip = a_.jcc(E);
            jump_to(insn.target, insn, index);
            a_.patch(skip, a_.pos());
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
            a_.mov_imm(RAX, 0);
        else
            load_slot(d - 1, RAX);
        a_.store({kOut, kOutValue}, RAX);
        a_.mov_imm(RAX, 0);
        epilogue();
        dead_ = true;
        break;
    default: // floating-point opcodes never pass the validator
        fail_always(insn.offset, EvalStatus::StepLimit);
        dead_ = true;
        break;
    }
    return 0;
}

void Translator::emit_slow_paths() {
    for (const RefSlowPath& r : refs_) {
        a_.patch(r.fixup, a_.pos());
        call_helper(helpers_.read, r.saved, r.offset, [&] {
            if (r.const_addr)
                a_.mov_imm(RDX, *r.const_addr);
            else
                a_.mov(RDX, RAX);
            a_.mov_imm(RCX, r.size);
        });
        if (r.sign_bits) a_.movsx(RAX, r.sign_bits);
        a_.patch(a_.jmp(), r.resume);
    }
    // call_helper may have added failure exits above; they are emitted now.
    const std::size_t error_exit_fixups = fails_.size();
    std::vector<std::size_t> to_exit;
    for (std::size_t i = 0; i < error_exit_fixups; ++i) {
        const Fail& f = fails_[i];
        a_.patch(f.fixup, a_.pos());
        a_.store_imm32({kOut, kOutFaultOffset}, f.offset, false);
        if (f.fixed) {
            a_.store_imm32({kOut, kOutFaultAddress}, 0, true);
            a_.mov_imm(RAX, static_cast<std::uint32_t>(*f.fixed));
        } else {
            a_.mov32(RAX, RDX);
        }
        to_exit.push_back(a_.jmp());
    }
    for (std::size_t at : to_exit)
        a_.patch(at, a_.pos());
    epilogue();
}

std::vector<std::uint8_t> Translator::run() {
    const auto insns = p_.insns();
    std::vector<bool>& is_target = is_target_;
    is_target.assign(insns.size(), false);
    bool has_backward = false;
    for (std::uint32_t i = 0; i < insns.size(); ++i) {
        const Insn& in = insns[i];
        if (!in.reachable || (in.op != Op::Goto && in.op != Op::IfGoto)) continue;
        is_target[in.target] = true;
        has_backward |= in.target <= i;
    }

    // Prologue: save the callee-saved homes in use, make room for deep entries and the budget.
    const unsigned depth = p_.max_depth();
    for (unsigned i = kCallerSavedSlots; i < depth && i < kRegSlots; ++i)
        callee_saved_.push_back(kSlotRegs[i]);
    for (Reg r : callee_saved_)
        a_.push(r);
    mem_slots_ = depth > kRegSlots ? depth - kRegSlots : 0;
    frame_bytes_ = 8 * (mem_slots_ + (has_backward ? 1 : 0));
    const std::uint32_t after_pushes = 8 + 8 * static_cast<std::uint32_t>(callee_saved_.size());
    if (frame_bytes_ && (after_pushes + frame_bytes_) % 16) frame_bytes_ += 8;
    body_mod_ = static_cast<std::int32_t>((after_pushes + frame_bytes_) % 16);
    if (frame_bytes_) a_.alu_imm(SUB, RSP, static_cast<std::int32_t>(frame_bytes_));
    if (has_backward) {
        a_.mov_imm(RAX, p_.backward_jump_budget());
        a_.store(budget_home(), RAX);
    }

    labels_.assign(insns.size(), SIZE_MAX);
    dead_ = false;
    for (std::uint32_t i = 0; i < insns.size(); ++i) {
        const Insn& in = insns[i];
        if (!in.reachable) continue;
        if (is_target[i]) {
            if (!dead_) flush();
            labels_[i] = a_.pos();
            pending_ = -1;
            vs_.assign(in.depth, Slot{});
            dead_ = false;
        } else if (dead_) {
            continue;
        }
        i += translate(i);
    }
    for (const Jump& j : jumps_)
        a_.patch(j.fixup, labels_[j.target]);
    emit_slow_paths();
    return std::move(a_.code());
}

class X86_64Backend final : public bytecode::CompilerBackend {
  public:
    const char* name() const override { return "x86-64"; }
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
    static const X86_64Backend backend;
    return backend;
}

} // namespace tpagent::arch::x86_64

#if defined(__x86_64__)
const tpagent::bytecode::CompilerBackend& tpagent::arch::host_compiler_backend() {
    return tpagent::arch::x86_64::ax_backend();
}
#endif
