#include "process/linux/software_breakpoints.hpp"

namespace tpagent::process {

// Whether the site's breakpoint instruction is still in memory. The code under a breakpoint
// can be replaced without tpagent writing it: a library unloaded and another mapped at its
// address (gdb sends no z0 for the breakpoints of a library it sees unloaded), code a program
// writes itself. gdbserver checks its breakpoints the same way (mem-break.c's
// validate_inserted_breakpoint).
bool SoftwareBreakpoints::in_memory(std::uint64_t addr, const Site& site) const {
    if (site.lifted > 0) return false;
    std::vector<std::uint8_t> now(insn_.size());
    return read_(addr, now) && now == insn_;
}

Status SoftwareBreakpoints::insert(std::uint64_t addr) {
    if (auto it = sites_.find(addr); it != sites_.end()) {
        if (auto r = refresh(addr, it->second); !r) return r;
        ++it->second.refs;
        return ok_status();
    }
    Site site;
    site.original.resize(insn_.size());
    if (auto r = read_(addr, site.original); !r) return r;
    site.refs = 1;
    sites_.emplace(addr, std::move(site));
    changed(); // known before it is in memory
    if (auto w = write_(addr, insn_); !w) {
        sites_.erase(addr);
        changed();
        return w;
    }
    return ok_status();
}

void SoftwareBreakpoints::adopt(std::uint64_t addr, std::span<const std::uint8_t> original) {
    auto [it, added] = sites_.try_emplace(addr);
    if (added) it->second.original.assign(original.begin(), original.end());
    ++it->second.refs;
    changed();
}

void SoftwareBreakpoints::disown(std::uint64_t addr) {
    auto it = sites_.find(addr);
    if (it == sites_.end()) return;
    if (--it->second.refs == 0) sites_.erase(it);
    changed();
}

// A breakpoint whose instruction is gone from memory (the code was replaced under it) takes
// the bytes there now as the program's, and goes in again.
Status SoftwareBreakpoints::refresh(std::uint64_t addr, Site& site) {
    if (site.lifted > 0) return ok_status();
    std::vector<std::uint8_t> now(insn_.size());
    if (auto r = read_(addr, now); !r) return r;
    if (now == insn_) return ok_status(); // still in place
    site.original = std::move(now);
    changed(); // known before it is in memory
    return write_(addr, insn_);
}

Status SoftwareBreakpoints::reinsert(std::uint64_t addr) {
    auto it = sites_.find(addr);
    if (it == sites_.end()) return make_error(ErrorCode::NotFound, "no breakpoint at that address");
    return refresh(addr, it->second);
}

Status SoftwareBreakpoints::remove(std::uint64_t addr) {
    auto it = sites_.find(addr);
    if (it == sites_.end()) return make_error(ErrorCode::NotFound, "no breakpoint at that address");
    if (--it->second.refs > 0) return ok_status();
    // Lifted, the original is in memory already; replaced, the code there is not the one
    // the saved bytes came from.
    Status w = ok_status();
    if (in_memory(addr, it->second)) w = write_(addr, it->second.original);
    sites_.erase(it);
    changed();
    return w;
}

Status SoftwareBreakpoints::lift(std::uint64_t addr) {
    auto it = sites_.find(addr);
    if (it == sites_.end()) return make_error(ErrorCode::NotFound, "no breakpoint at that address");
    if (it->second.lifted++ > 0) return ok_status();
    auto w = write_(addr, it->second.original);
    changed();
    return w;
}

Status SoftwareBreakpoints::lower(std::uint64_t addr) {
    auto it = sites_.find(addr);
    if (it == sites_.end() || it->second.lifted == 0) return ok_status(); // removed meanwhile
    if (--it->second.lifted > 0) return ok_status();
    changed(); // known before it is in memory
    return write_(addr, insn_);
}

void SoftwareBreakpoints::remove_all() {
    // Before detach: a page that cannot be written any more has nothing left to restore.
    for (auto& [addr, site] : sites_)
        if (in_memory(addr, site)) (void)write_(addr, site.original);
    sites_.clear();
    changed();
}

void SoftwareBreakpoints::unshadow(std::uint64_t addr, std::span<std::uint8_t> buf) const {
    std::uint64_t end = addr + buf.size();
    // Sites that may overlap start at most insn_.size()-1 bytes before addr.
    auto it = sites_.lower_bound(addr >= insn_.size() ? addr - insn_.size() + 1 : 0);
    for (; it != sites_.end() && it->first < end; ++it) {
        // Only where the instruction's byte is there: not at a lifted site (the original is),
        // nor where the code was replaced (see in_memory).
        for (std::size_t i = 0; i < it->second.original.size(); ++i) {
            std::uint64_t a = it->first + i;
            if (a >= addr && a < end && buf[a - addr] == insn_[i])
                buf[a - addr] = it->second.original[i];
        }
    }
}

std::vector<std::uint8_t> SoftwareBreakpoints::shadow_write(std::uint64_t addr,
                                                            std::span<const std::uint8_t> data) {
    std::vector<std::uint8_t> out(data.begin(), data.end());
    std::uint64_t end = addr + data.size();
    bool under_a_breakpoint = false;
    auto it = sites_.lower_bound(addr >= insn_.size() ? addr - insn_.size() + 1 : 0);
    for (; it != sites_.end() && it->first < end; ++it) {
        for (std::size_t i = 0; i < it->second.original.size(); ++i) {
            std::uint64_t a = it->first + i;
            if (a >= addr && a < end) {
                it->second.original[i] = data[a - addr];
                out[a - addr] = insn_[i];
                under_a_breakpoint = true;
            }
        }
    }
    if (under_a_breakpoint) changed(); // a write elsewhere leaves the guard's table as it is
    return out;
}

} // namespace tpagent::process
