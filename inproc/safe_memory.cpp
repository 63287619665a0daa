// Reading the program's memory from a collector without ever faulting: ranges tpagent listed
// as readable (from /proc/PID/maps) are copied directly, by a copy whose faults tpagent
// recovers (a range may have been unmapped since it was listed); anything else goes through
// process_vm_readv on ourselves, which fails instead of faulting.
#include "inproc/inproc.hpp"
#include <sys/syscall.h>
#include <sys/uio.h>

namespace tpagent::inproc {

namespace {

// Whether [addr, addr+len) lies inside one listed range; false while tpagent rewrites them. (In
// a followed child the listing is the parent's: tpagent, its tracer too, recovers a fault.)
bool listed_readable(std::uint64_t addr, std::size_t len) {
    Header* h = header_of(g_shared_buffer);
    const std::uint64_t seq = h->ranges_sequence.load(std::memory_order_acquire);
    if (seq & 1) return false;
    if (in_last_range(seq, addr, len)) return true;
    const auto* ranges = at<const ReadableRange>(g_shared_buffer, kRangesOffset);
    const std::uint32_t n = h->range_count < kMaxRanges ? h->range_count : kMaxRanges;
    std::uint32_t lo = 0, hi = n;
    while (lo < hi) { // ranges are sorted and disjoint: the first one ending above addr
        const std::uint32_t mid = lo + (hi - lo) / 2;
        if (ranges[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo >= n) return false;
    const ReadableRange found = ranges[lo];
    std::atomic_thread_fence(std::memory_order_acquire);
    if (h->ranges_sequence.load(std::memory_order_relaxed) != seq) return false;
    if (!covers(found.start, found.end, addr, len)) return false;
    if (ThreadState* t = this_thread()) t->last_range = {seq, found.start, found.end};
    return true;
}

} // namespace

std::size_t safe_read(void* dst, std::uint64_t addr, std::size_t len) {
    if (len == 0) return 0;
    if (addr + len < addr) len = 0 - addr; // stop at the top of the address space
    if (listed_readable(addr, len))
        return tpagent_fault_recovering_copy(dst, reinterpret_cast<const void*>(addr), len);
    iovec local{dst, len};
    iovec remote{reinterpret_cast<void*>(addr), len};
    const long self = tpagent_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
    const long got = tpagent_syscall(SYS_process_vm_readv, self, reinterpret_cast<long>(&local), 1,
                                     reinterpret_cast<long>(&remote), 1, 0);
    return got > 0 ? static_cast<std::size_t>(got) : 0;
}

} // namespace tpagent::inproc
