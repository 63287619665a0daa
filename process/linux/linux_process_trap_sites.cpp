// Displaced-execution sites: breakpoints whose original instructions run from pads in the
// inferior (mapped by LinuxFastSites::allocate_pad), and what the fast sites ask of them.
#include "process/linux/linux_process.hpp"
#include <algorithm>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

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

Result<LinuxProcess::Site> LinuxProcess::place_displaced(std::uint64_t addr,
                                                         std::span<const std::uint8_t> code) {
    // Relocate once for a provisional address to learn the size, then for the real pad.
    auto probe = arch_.relocate(code, addr, addr, 1);
    if (!probe) return probe.error();
    auto pad = fast_sites_.allocate_pad(addr, probe->code.size() + 32);
    if (!pad) return pad.error();
    auto reloc = arch_.relocate(code, addr, *pad, 1);
    if (!reloc) return reloc.error();
    if (auto w = memory_->write_raw(*pad, reloc->code); !w) return w.error();
    return Site{*pad, std::move(*reloc)};
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

Status LinuxProcess::add_site(std::uint64_t addr) {
    if (sites_.count(addr)) return ok_status();
    if (const auto fast = fast_sites_.covering(addr))
        return make_error(ErrorCode::NotAllowed,
                          fmt::format("a fast tracepoint at 0x{:x} has replaced the instruction "
                                      "at 0x{:x}",
                                      fast->site, addr));
    if (auto s = check_interruptible(addr); !s) return s;
    std::vector<std::uint8_t> code(arch_.max_instruction_bytes() * 2);
    auto got = read_memory(addr, code); // breakpoint bytes hidden: the program's own code
    if (!got) return got.error();
    code.resize(*got);
    auto pad = place_displaced(addr, code);
    if (!pad) {
        // Stepped over in place instead: exact for one thread; a thread that reaches the
        // address while another steps over it passes it unseen.
        if (auto s = check_interruptible(addr, true); !s) return s;
        spdlog::debug("trap tracepoint at 0x{:x}: {}; stepping over it in place", addr,
                      pad.error().text);
        pad = Site{};
    }
    if (auto b = memory_->breakpoints().insert(addr); !b) return b;
    sites_[addr] = std::move(*pad);
    recently_removed_sites_.erase(addr);
    publish_code_patches();
    return ok_status();
}

void LinuxProcess::remove_site(std::uint64_t addr) {
    if (!sites_.erase(addr)) return;
    // Removal cannot be refused; a breakpoint that stays is still a site's to the trap
    // handler (recently_removed_sites_), which passes threads over it.
    if (auto r = memory_->breakpoints().remove(addr); !r)
        spdlog::warn("trap tracepoint at 0x{:x}: {}", addr, r.error().text);
    recently_removed_sites_.insert(addr);
}

void LinuxProcess::remove_all_sites() {
    while (!sites_.empty())
        remove_site(sites_.begin()->first);
}

} // namespace tpagent::process

namespace tpagent::process {

bool LinuxProcess::FastSiteAccess::trap_site_at(std::uint64_t addr) const {
    return p_.sites_.count(addr) != 0;
}

bool LinuxProcess::FastSiteAccess::trap_pads_in_use() const {
    return std::any_of(p_.sites_.begin(), p_.sites_.end(),
                       [](const auto& s) { return s.second.pad; });
}

std::optional<std::uint64_t> LinuxProcess::FastSiteAccess::out_of_trap_pad(LinuxThread& t,
                                                                           std::uint64_t pc) {
    std::optional<std::uint64_t> back;
    for (const auto& [addr, site] : p_.sites_) {
        if (auto at = arch::original_address(site.code, site.pad, addr, pc)) {
            back = at;
            if (*at == addr) t.collected_at = addr; // its hit was collected before the pad
        }
    }
    return back;
}

} // namespace tpagent::process
