#include "arch/jit_front_end.hpp"
#include "bytecode/constant_folding.hpp"
#include "bytecode/semantics.hpp"
#include <cstdint>

namespace tpagent::arch::jit {

using bytecode::EvalStatus;
using bytecode::Insn;
using bytecode::Op;
namespace sem = bytecode::sem;

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

bool is_divrem(Op op) {
    return op == Op::DivSigned || op == Op::DivUnsigned || op == Op::RemSigned ||
           op == Op::RemUnsigned;
}

Status check_helpers(const bytecode::Program& program, const bytecode::HelperAddresses& helpers,
                     const bytecode::FormatAddresses& formats) {
    if (!formats.empty() && formats.size() != program.formats().size())
        return make_error(ErrorCode::NotAllowed,
                          "printf formats placed for another program than this one");
    if (!helpers.printf)
        for (const Insn& in : program.insns())
            if (in.reachable && in.op == Op::Printf)
                return make_error(ErrorCode::Unsupported,
                                  "printf is not available to this compiled code");
    return ok_status();
}

unsigned FrontEnd::mem_slots(unsigned reg_homes) const {
    const unsigned max_depth = program_.max_depth();
    return max_depth > reg_homes ? max_depth - reg_homes : 0;
}

bool FrontEnd::fusible(std::uint32_t index, std::uint32_t n) const {
    const auto insns = program_.insns();
    for (std::uint32_t k = 1; k <= n; ++k)
        if (index + k >= insns.size() || !insns[index + k].reachable || is_target_[index + k])
            return false;
    return true;
}

void FrontEnd::flush() {
    settle();
    for (unsigned i = 0; i < depth(); ++i)
        materialize(i);
}

void FrontEnd::jump_to(std::uint32_t target, std::uint32_t offset, std::uint32_t index) {
    if (target <= index) emit_spend_budget(offset); // backward: one unit of the loop budget
    jumps_.push_back({emit_jump(), target});
}

void FrontEnd::binary(const Insn& insn) {
    const unsigned d = depth();
    const Slot a = vs_[d - 2], b = vs_[d - 1];
    if (a.is_const && b.is_const) {
        const std::uint64_t r = bytecode::fold_binary(insn.op, a.k, b.k);
        vs_.pop_back();
        vs_.back() = Slot{true, r};
        return;
    }
    emit_binary(insn.op);
    vs_.pop_back();
    store_entry(d - 2, kScratch0);
}

void FrontEnd::divrem(const Insn& insn) {
    const unsigned d = depth();
    const Slot a = vs_[d - 2], b = vs_[d - 1];
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
    emit_divrem(insn);
    vs_.pop_back();
    store_entry(d - 2, kScratch0);
}

void FrontEnd::unary(const Insn& insn) {
    Slot& top = vs_.back();
    if (top.is_const) {
        top.k = insn.op == Op::LogNot ? top.k == 0 : ~top.k;
        return;
    }
    emit_not(insn.op);
    store_entry(depth() - 1, kScratch0);
}

void FrontEnd::extend(const Insn& insn) {
    Slot& top = vs_.back();
    const std::uint64_t n = insn.imm;
    if (top.is_const) {
        top.k = insn.op == Op::Ext ? sem::sign_extend(top.k, n) : sem::zero_extend(top.k, n);
        return;
    }
    if (n >= 64) return;
    if (n == 0) { // ext 0 and zero_ext 0 alike give 0
        top = Slot{true, 0};
        return;
    }
    emit_extend(insn.op, static_cast<unsigned>(n));
    store_entry(depth() - 1, kScratch0);
}

// Swap and rot: the entries read into scratch registers, then written back permuted.
void FrontEnd::permute(const Insn& insn) {
    const unsigned count = insn.op == Op::Swap ? 2 : 3;
    const unsigned base = depth() - count;
    Slot before[3];
    for (unsigned j = 0; j < count; ++j) {
        before[j] = vs_[base + j];
        if (!before[j].is_const) load_entry(base + j, j);
    }
    // swap: a b => b a; rot: a b c => c a b
    const unsigned swap_order[2] = {1, 0}, rot_order[3] = {2, 0, 1};
    const unsigned* order = insn.op == Op::Swap ? swap_order : rot_order;
    for (unsigned j = 0; j < count; ++j) {
        const unsigned src = order[j];
        if (before[src].is_const)
            vs_[base + j] = before[src];
        else
            store_entry(base + j, src);
    }
}

void FrontEnd::helper_call(const Insn& insn) {
    const unsigned d = depth();
    const HelperArg imm{HelperArg::Kind::Immediate, insn.imm};
    const HelperArg top{HelperArg::Kind::Entry, d - 1};
    switch (insn.op) {
    case Op::Reg:
        if (insn.imm < staged_.size()) {
            const bytecode::StagedRegister& staged = staged_[insn.imm];
            if (staged.size == 1 || staged.size == 2 || staged.size == 4 || staged.size == 8) {
                emit_load_staged(staged);
                push(kScratch0);
                break;
            }
        }
        [[fallthrough]];
    case Op::Getv:
    case Op::Tracev: {
        const std::uint64_t helper = insn.op == Op::Reg    ? helpers_.reg
                                     : insn.op == Op::Getv ? helpers_.getv
                                                           : helpers_.tracev;
        emit_call({helper, imm, {}, d, insn.offset, true});
        break;
    }
    case Op::Setv:
        emit_call({helpers_.setv, imm, top, d, insn.offset, false});
        break;
    case Op::Trace:
    case Op::Tracenz:
        emit_call({insn.op == Op::Trace ? helpers_.trace : helpers_.tracenz,
                   {HelperArg::Kind::Entry, d - 2},
                   top,
                   d - 2,
                   insn.offset,
                   false});
        vs_.resize(d - 2);
        break;
    default: // TraceQuick, Trace16
        emit_call({helpers_.trace, top, imm, d, insn.offset, false});
        break;
    }
}

void FrontEnd::if_goto(const Insn& insn, std::uint32_t index) {
    const unsigned d = depth();
    const Slot cond = vs_[d - 1];
    if (cond.is_const) {
        vs_.pop_back();
        if (cond.k != 0) {
            flush();
            jump_to(insn.target, insn.offset, index);
            dead_ = true;
        }
        return;
    }
    flush(); // the condition, no constant, stays as it is
    if (insn.target > index) {
        jumps_.push_back({emit_branch_if(d - 1, true), insn.target});
    } else {
        const BranchSite skip = emit_branch_if(d - 1, false);
        jump_to(insn.target, insn.offset, index);
        patch_here(skip);
    }
    vs_.pop_back();
}

std::uint32_t FrontEnd::translate(std::uint32_t index) {
    const Insn& insn = program_.insns()[index];
    before_insn(insn);
    if (const std::optional<std::uint32_t> covered = translate_fused(index)) return *covered;
    if (is_binary(insn.op)) {
        binary(insn);
        return 0;
    }
    if (is_divrem(insn.op)) {
        divrem(insn);
        return 0;
    }
    const unsigned d = depth();
    switch (insn.op) {
    case Op::LogNot:
    case Op::BitNot:
        unary(insn);
        break;
    case Op::Ext:
    case Op::ZeroExt:
        extend(insn);
        break;
    case Op::Ref8:
    case Op::Ref16:
    case Op::Ref32:
    case Op::Ref64:
        emit_ref(insn);
        store_entry(d - 1, kScratch0);
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
            load_entry(from, kScratch0);
            push(kScratch0);
        }
        break;
    }
    case Op::Pop:
        vs_.pop_back();
        break;
    case Op::Swap:
    case Op::Rot:
        permute(insn);
        break;
    case Op::Reg:
    case Op::Getv:
    case Op::Tracev:
    case Op::Setv:
    case Op::Trace:
    case Op::Tracenz:
    case Op::TraceQuick:
    case Op::Trace16:
        helper_call(insn);
        break;
    case Op::Printf:
        emit_printf(insn);
        vs_.resize(d - 2 - insn.target);
        break;
    case Op::IfGoto:
        if_goto(insn, index);
        break;
    case Op::Goto:
        flush();
        jump_to(insn.target, insn.offset, index);
        dead_ = true;
        break;
    case Op::End:
        if (vs_.empty()) vs_.push_back(Slot{true, 0}); // an empty stack's value is 0
        emit_return();
        dead_ = true;
        break;
    default: // floating-point opcodes never pass the validator
        fail_always(insn.offset, EvalStatus::StepLimit);
        dead_ = true;
        break;
    }
    return 0;
}

// Each exit puts its status and offset where the shared tail expects them and jumps there.
void FrontEnd::emit_fail_exits() {
    std::vector<BranchSite> to_tail;
    for (const FailExit& fail : fails_) {
        patch_here(fail.site);
        emit_fail_status(fail);
        to_tail.push_back(emit_jump());
    }
    for (const BranchSite& site : to_tail)
        patch_here(site);
    emit_fail_tail(!to_tail.empty());
}

std::vector<std::uint8_t> FrontEnd::run() {
    const auto insns = program_.insns();
    is_target_.assign(insns.size(), false);
    bool has_backward = false;
    for (std::uint32_t i = 0; i < insns.size(); ++i) {
        const Insn& in = insns[i];
        if (!in.reachable || (in.op != Op::Goto && in.op != Op::IfGoto)) continue;
        is_target_[in.target] = true;
        has_backward |= in.target <= i;
    }
    emit_prologue(has_backward);

    labels_.assign(insns.size(), SIZE_MAX);
    dead_ = false;
    for (std::uint32_t i = 0; i < insns.size(); ++i) {
        const Insn& in = insns[i];
        if (!in.reachable) continue;
        if (is_target_[i]) {
            if (!dead_) flush();
            labels_[i] = code_size();
            at_label();
            vs_.assign(in.depth, Slot{});
            dead_ = false;
        } else if (dead_) {
            continue;
        }
        i += translate(i);
    }
    for (const Jump& j : jumps_)
        patch(j.site, labels_[j.target]);
    emit_slow_paths();
    emit_fail_exits();
    return take_code();
}

} // namespace tpagent::arch::jit
