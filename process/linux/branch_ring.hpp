// A thread's taken branches, newest kept: the store behind both branch-trace backends (the
// software recorder pushes what its steps find, the perf BTS reader what the CPU wrote), and
// their reading as gdb's blocks, the way a BTS ring is read (GDB manual, "Branch Trace Format";
// a block ends at the next branch's source, the newest at the current pc).
#pragma once
#include "base/result.hpp"
#include "process/branch_trace.hpp"
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tpagent::process {

class BranchRing {
  public:
    static constexpr std::size_t kRecordBytes = 16; // from + to
    // Room for size_bytes / kRecordBytes branches (at least one); memory grows with use.
    explicit BranchRing(std::size_t size_bytes);

    void push(std::uint64_t from, std::uint64_t to);
    // Branches were lost (a hardware ring overran): the next delta read is refused, and the
    // branches from before the gap are not joined to those after it.
    void note_lost() {
        lost_ = true;
        first_ = head_;
    }

    std::size_t capacity() const { return capacity_; }
    std::uint64_t recorded() const { return head_; } // branches pushed in all

    // gdb's blocks, newest first; `pc` is where the thread is now. Every read starts the next
    // delta. A delta that cannot be told (older branches overwritten since the last read) is
    // an error: gdb then reads everything.
    Result<std::vector<BranchBlock>> read(BranchTraceRead kind, std::uint64_t pc);

  private:
    struct Branch {
        std::uint64_t from, to;
    };
    std::size_t capacity_;
    std::vector<Branch> ring_;
    std::uint64_t head_ = 0;      // branches pushed; the newest is at (head_ - 1) % capacity_
    std::uint64_t last_read_ = 0; // head_ at the last read
    std::uint64_t first_ = 0;     // the oldest branch after the last loss
    bool lost_ = false;
};

} // namespace tpagent::process
