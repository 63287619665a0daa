#include "process/linux/software_breakpoints.hpp"

namespace tpagent::process {

Status SoftwareBreakpoints::insert(std::uint64_t addr) {
    if (auto it = sites_.find(addr); it != sites_.end()) {
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

Status SoftwareBreakpoints::remove(std::uint64_t addr) {
    auto it = sites_.find(addr);
    if (it == sites_.end()) return make_error(ErrorCode::NotFound, "no breakpoint at that address");
    if (--it->second.refs > 0) return ok_status();
    auto w = write_(addr, it->second.original);
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
        (void)write_(addr, site.original);
    sites_.clear();
    changed();
}

void SoftwareBreakpoints::unshadow(std::uint64_t addr, std::span<std::uint8_t> buf) const {
    std::uint64_t end = addr + buf.size();
    // Sites that may overlap start at most insn_.size()-1 bytes before addr.
    auto it = sites_.lower_bound(addr >= insn_.size() ? addr - insn_.size() + 1 : 0);
    for (; it != sites_.end() && it->first < end; ++it) {
        for (std::size_t i = 0; i < it->second.original.size(); ++i) {
            std::uint64_t a = it->first + i;
            if (a >= addr && a < end) buf[a - addr] = it->second.original[i];
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
