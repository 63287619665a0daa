// Memory for pads and placed code in the program: mapped by an injected mmap, and reused
// from one trace run to the next once no thread can still be in the old code, so that many
// tstart/tstop cycles keep the program's mappings flat. Nothing is ever unmapped.
#include "process/linux/linux_process.hpp"
#include "process/linux/pad_allocator.hpp"
#include "base/proc_files.hpp"
#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/syscall.h>

namespace tpagent::process {

namespace {
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
// How much of a thread's stack is searched for return addresses into retired pads. A thread
// with more (or a stack pointer outside any mapping) keeps every retired page: nothing is
// reused while it is there.
constexpr std::uint64_t kMaxStackScan = 8 << 20;
constexpr std::size_t kScanChunk = 64 << 10;

std::uint64_t word_at(const std::uint8_t* p) {
    std::uint64_t w = 0;
    std::memcpy(&w, p, sizeof w);
    return w;
}
} // namespace

bool LinuxProcess::pads_in_use() const {
    return placed_code_live_ || moving_ || !fast_sites_.empty() || trap_sites_.any_pad();
}

// A retired run's code is safe to overwrite when no thread can reach it again: every thread
// is stopped (gdb is all-stop, and leave_pads stepped them out of pads and the collector),
// none is still in the collector (which may go on to placed code of any run), and no general
// register or word of its live stack ([sp, end of that mapping)) points into one of the run's
// pages. That covers a thread in a pad, the return address of a collector call, and the
// return address of a call the pad's relocated instructions made natively (the callee may be
// blocked anywhere in the program). A stale stack word only keeps its run's pages a while.
// Not seen: a signal handler running on an alternate stack (sigaltstack) that interrupted a
// pad, the collector or such a callee, whose return path is on the thread's other stack.
bool LinuxProcess::reclaim_pads() {
    if (running_ || stopping_all_) return false;
    const auto maps = read_maps(pid_);
    std::set<std::uint64_t> kept;
    auto see = [&](const std::uint8_t* words, std::size_t bytes) {
        for (std::size_t i = 0; i + 8 <= bytes; i += 8)
            if (auto run = pad_pages_.retired_run_at(word_at(words + i))) kept.insert(*run);
    };
    std::vector<std::uint8_t> chunk(kScanChunk);
    for (auto& [tid, t] : threads_) {
        if (!t.stopped || t.awaiting_first_stop()) return false;
        auto s = snapshot(tid, false);
        if (!s) return false;
        const std::uint64_t pc = arch_.pc(**s);
        if (agent_code_ && pc >= agent_code_->code_begin && pc < agent_code_->code_end)
            return false;
        see((*s)->gpr.data(), (*s)->gpr.size()); // the pc too, and a link register
        const std::uint64_t sp = arch_.sp(**s) & ~std::uint64_t{7};
        auto stack = std::find_if(maps.begin(), maps.end(), [&](const MappedRange& m) {
            return m.start <= sp && sp < m.end;
        });
        if (stack == maps.end() || stack->end - sp > kMaxStackScan) return false;
        for (std::uint64_t at = sp; at < stack->end; at += kScanChunk) {
            const std::size_t n = std::min<std::uint64_t>(kScanChunk, stack->end - at);
            std::size_t got = 0;
            if (auto r = memory_->read_raw(at, std::span(chunk).first(n), got); !r || got != n)
                return false;
            see(chunk.data(), n);
        }
    }
    const std::size_t freed = pad_pages_.free_retired_except(kept);
    spdlog::debug("pads: {} page(s) of earlier runs free for reuse, {} run(s) kept", freed,
                  kept.size());
    return freed > 0;
}

Result<std::uint64_t> LinuxProcess::allocate_pad(std::uint64_t near, std::size_t size) {
    size = (size + 15) & ~std::size_t{15};
    const std::uint64_t reach = arch_.pad_reach() - PadPages::kPageSize;
    // Nothing installed uses this run's code any more (a new run is placing its own): it is
    // dead, and its pages retire.
    if (!pads_in_use()) pad_pages_.retire_current();
    if (auto at = pad_pages_.take(near, size, reach)) return *at;
    if (pad_pages_.any_retired() && reclaim_pads())
        if (auto at = pad_pages_.take(near, size, reach)) return *at;

    const std::size_t length = (size + PadPages::kPageSize - 1) & ~(PadPages::kPageSize - 1);
    auto where = find_free_range(read_maps(pid_), near, length, reach, arch_.user_address_top());
    if (!where)
        return make_error(ErrorCode::Unsupported,
                          fmt::format("no free memory within reach of 0x{:x}", near));
    const pid_t tid = remote_calls_.thread();
    if (tid == 0)
        return make_error(ErrorCode::NotAllowed,
                          "no thread to map a pad page with (none but at a system call's entry)");
    const std::uint64_t args[] = {*where,
                                  length,
                                  PROT_READ | PROT_EXEC,
                                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                                  static_cast<std::uint64_t>(-1),
                                  0};
    auto mapped = remote_calls_.system_call(tid, SYS_mmap, args, "mmap in the program failed");
    if (!mapped) return mapped.error();
    const std::uint64_t base = *mapped;
    if (base != *where)
        return make_error(ErrorCode::SystemError, "mmap in the program ignored the address");
    pad_pages_.add(base, length, size);
    spdlog::debug("pad page at 0x{:x} for code at 0x{:x} ({} bytes of pads mapped)", base, near,
                  pad_pages_.mapped_bytes());
    return base;
}

// Placed code is only ever called by the collector, from the records of the run that placed
// it: it lives until that run's fast tracepoints are all removed (remove_all_fast_sites).
Result<std::uint64_t> LinuxProcess::place_code(std::uint64_t near,
                                               std::span<const std::uint8_t> code) {
    auto at = allocate_pad(near, code.size());
    if (!at) return at.error();
    placed_code_live_ = true;
    if (auto w = memory_->write_raw(*at, code); !w) return w.error();
    return *at;
}

} // namespace tpagent::process
