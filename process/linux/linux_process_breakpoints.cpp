// gdb's own breakpoints, and where a breakpoint or a jump of tpagent's may go (the trap sites
// as the fast sites see them included).
#include "process/linux/linux_process.hpp"
#include <algorithm>
#include <fmt/format.h>

namespace tpagent::process {

Status LinuxProcess::insert_user_breakpoint(std::uint64_t addr) {
    if (memory_->user_breakpoint_at(addr)) return ok_status();
    if (const auto fast = fast_sites_.covering(addr); fast && fast->site != addr)
        return make_error(ErrorCode::NotAllowed,
                          fmt::format("0x{:x} is inside the {} bytes of instructions the fast "
                                      "tracepoint at 0x{:x} runs from its pad: no thread runs "
                                      "them there",
                                      addr, fast->covered, fast->site));
    return memory_->insert_user_breakpoint(addr);
}

Status LinuxProcess::remove_user_breakpoint(std::uint64_t addr) {
    return memory_->remove_user_breakpoint(addr);
}

Status LinuxProcess::check_interruptible(std::uint64_t addr, bool stepped) {
    const std::uint64_t window = arch_.interruption_window();
    if (window == 0) return ok_status();
    // Within addr's own 4 KiB, which is mapped: a read across into a hole would fail.
    constexpr std::uint64_t kPage = 4096;
    const std::uint64_t page = addr & ~(kPage - 1);
    const std::uint64_t start = addr - std::min(window, addr - page);
    std::vector<std::uint8_t> code(addr - start + std::min(window, page + kPage - addr));
    auto got = read_memory(start, code); // breakpoints hidden: the program's own code
    if (!got) return got.error();
    const std::size_t at = addr - start;
    if (*got <= at) return ok_status(); // no code read from addr on: nothing to find
    const std::span<const std::uint8_t> read(code.data(), *got);
    const auto before = read.first(at), from = read.subspan(at);
    if (auto hazard = arch_.interruption_hazard(addr, before, from, stepped))
        return make_error(ErrorCode::NotAllowed, *hazard);
    return ok_status();
}

Status LinuxProcess::check_site_address(std::uint64_t addr, bool stepped) {
    if (const auto fast = fast_sites_.covering(addr))
        return make_error(ErrorCode::NotAllowed,
                          fmt::format("a fast tracepoint at 0x{:x} has replaced the instruction "
                                      "at 0x{:x}",
                                      fast->site, addr));
    return check_interruptible(addr, stepped);
}

bool LinuxProcess::FastSiteAccess::trap_site_at(std::uint64_t addr) const {
    return p_.trap_sites_.has(addr);
}

bool LinuxProcess::FastSiteAccess::trap_pads_in_use() const {
    return p_.trap_sites_.any_pad();
}

std::optional<std::uint64_t> LinuxProcess::FastSiteAccess::out_of_trap_pad(LinuxThread& t,
                                                                           std::uint64_t pc) {
    std::optional<std::uint64_t> back;
    for (const auto& [addr, site] : p_.trap_sites_.sites()) {
        if (auto at = arch::original_address(site.code, site.pad, addr, pc)) {
            back = at;
            if (*at == addr) t.collected_at = addr; // its hit was collected before the pad
        }
    }
    return back;
}

} // namespace tpagent::process
