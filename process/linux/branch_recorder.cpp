#include "process/linux/branch_recorder.hpp"
#include <utility>

namespace tpagent::process {

void SoftwareBranchRecorder::taken(BranchRing& ring, std::uint64_t from, std::uint64_t to) {
    ring.push(from, to);
    ++steps_to_branch_;
    last_ = from;
    at_ = to;
}

void SoftwareBranchRecorder::moved_to(std::uint64_t pc) {
    at_ = pc;
    last_.reset();
    signalled_ = false;
}

void SoftwareBranchRecorder::observe(std::uint64_t pc, bool block_step, const Decode& decode,
                                     BranchRing& ring) {
    if (!at_) {
        at_ = pc;
        return;
    }
    if (std::exchange(signalled_, false) && pc != *at_) {
        // Into a signal handler, from the last instruction that ran (if any is known).
        if (last_)
            taken(ring, *last_, pc);
        else
            moved_to(pc);
        return;
    }
    if (pc == *at_) return; // nothing ran (or a jump to itself: indistinguishable)
    ++steps_;
    std::uint64_t a = *at_, from = a;
    for (int n = 0; n < (block_step ? kMaxWalk : 1); ++n) {
        from = a;
        auto insn = decode(a);
        if (!insn) break;
        const std::uint64_t next = a + insn->length;
        // A system call that does not return to the next instruction (sigreturn, exec) moved
        // the pc itself: the walk goes no further.
        if (insn->kind == arch::FlowKind::System && next != pc) break;
        const bool branch =
            insn->kind != arch::FlowKind::Sequential && insn->kind != arch::FlowKind::System;
        const bool taken_here =
            branch && (insn->kind != arch::FlowKind::Conditional || insn->target == pc);
        if (taken_here && next != pc) break;
        last_ = a;
        if (next == pc) {
            at_ = pc;
            return;
        }
        a = next;
    }
    // The branch, an instruction that could not be read, or the last one walked went to pc.
    taken(ring, from, pc);
}

} // namespace tpagent::process
