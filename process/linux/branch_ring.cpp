#include "process/linux/branch_ring.hpp"
#include <algorithm>
#include <utility>

namespace tpagent::process {

BranchRing::BranchRing(std::size_t size_bytes)
    : capacity_(std::max<std::size_t>(1, size_bytes / kRecordBytes)) {}

void BranchRing::push(std::uint64_t from, std::uint64_t to) {
    if (ring_.size() < capacity_)
        ring_.push_back({from, to});
    else
        ring_[head_ % capacity_] = {from, to};
    ++head_;
}

Result<std::vector<BranchBlock>> BranchRing::read(BranchTraceRead kind, std::uint64_t pc) {
    // A refused delta changes nothing: gdb's next read (new, then all) still sees it all.
    if (kind == BranchTraceRead::Delta && (lost_ || head_ - last_read_ > capacity_))
        return make_error(ErrorCode::NotAllowed, "Overflow.");
    const std::uint64_t since = std::exchange(last_read_, head_);
    const bool lost = std::exchange(lost_, false);
    if (kind == BranchTraceRead::New && since == head_ && !lost) return std::vector<BranchBlock>{};
    std::uint64_t oldest = std::max(first_, head_ - std::min<std::uint64_t>(head_, capacity_));
    if (kind == BranchTraceRead::Delta) oldest = since;
    std::vector<BranchBlock> blocks;
    blocks.reserve(head_ - oldest + 1);
    BranchBlock block{0, pc};
    for (std::uint64_t i = head_; i > oldest; --i) {
        const Branch& b = ring_[(i - 1) % capacity_];
        block.begin = b.to;
        blocks.push_back(block);
        block.end = b.from;
    }
    // The oldest block's start is not known: a delta read leaves it 0 for gdb to fill in with
    // its last pc; any other read drops it.
    if (kind == BranchTraceRead::Delta) blocks.push_back({0, block.end});
    return blocks;
}

} // namespace tpagent::process
