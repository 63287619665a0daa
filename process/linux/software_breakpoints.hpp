// Software breakpoints: the breakpoint instruction written into the inferior, with the original
// bytes kept so that memory reads show (and writes update) the program's own code.
#pragma once
#include "base/result.hpp"
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <vector>

namespace tpagent::process {

class SoftwareBreakpoints {
  public:
    using RawRead = std::function<Status(std::uint64_t, std::span<std::uint8_t>)>;
    using RawWrite = std::function<Status(std::uint64_t, std::span<const std::uint8_t>)>;

    SoftwareBreakpoints(std::span<const std::uint8_t> insn, RawRead read, RawWrite write)
        : insn_(insn.begin(), insn.end()), read_(std::move(read)), write_(std::move(write)) {}

    // Reference counted: gdb and the tracepoint engine may both want one at an address. One
    // whose instruction is no longer in memory (the code under it was replaced) is written
    // again over the new code; removed, it leaves the new code alone.
    Status insert(std::uint64_t addr);
    // The breakpoint at `addr` inserted again by the same owner (no new reference): back into
    // memory if the code under it was replaced.
    Status reinsert(std::uint64_t addr);
    Status remove(std::uint64_t addr);
    bool inserted_at(std::uint64_t addr) const { return sites_.count(addr) != 0; }
    // True where the breakpoint at `addr` replaced a breakpoint instruction: the program's
    // own (a permanent breakpoint, in gdb's words).
    bool over_own_breakpoint(std::uint64_t addr) const {
        auto it = sites_.find(addr);
        return it != sites_.end() && std::ranges::equal(it->second.original, insn_);
    }
    // A thread steps over the breakpoint at `addr`: the original instruction is back in memory
    // until every such step has been lowered again (other threads pass it unseen meanwhile).
    Status lift(std::uint64_t addr);
    Status lower(std::uint64_t addr);
    // A breakpoint already in memory (written through another process sharing it), with the
    // bytes it replaced.
    void adopt(std::uint64_t addr, std::span<const std::uint8_t> original);
    // Gives up one reference to the breakpoint at `addr` without touching memory (another
    // process sharing the memory takes it over).
    void disown(std::uint64_t addr);
    // Takes every breakpoint out of memory (before detach or exec).
    void remove_all();
    // Forgets them without touching memory (the process image is gone).
    void forget_all() {
        sites_.clear();
        changed();
    }

    // Called after each change of what is in memory or of the saved bytes (a new breakpoint:
    // before it is written), for the code guard's table.
    void on_change(std::function<void()> f) { changed_ = std::move(f); }
    // Every breakpoint: its address, the bytes it replaced, whether it is in memory (not lifted).
    template <typename F> void for_each_site(F&& f) const {
        for (const auto& [addr, site] : sites_)
            f(addr, std::span<const std::uint8_t>(site.original), site.lifted == 0);
    }
    // Every breakpoint's address and the bytes it replaced.
    template <typename F> void for_each_original(F&& f) const {
        for (const auto& [addr, site] : sites_)
            f(addr, std::span<const std::uint8_t>(site.original));
    }
    // Replace breakpoint bytes in `buf` (read from `addr`) with the saved originals.
    void unshadow(std::uint64_t addr, std::span<std::uint8_t> buf) const;
    // For a write of `data` at `addr`: records the new originals under breakpoints and returns
    // what must really be written (breakpoint bytes kept in place).
    std::vector<std::uint8_t> shadow_write(std::uint64_t addr, std::span<const std::uint8_t> data);

  private:
    struct Site {
        std::vector<std::uint8_t> original;
        int refs = 0;
        int lifted = 0;
    };
    bool in_memory(std::uint64_t addr, const Site& site) const;
    Status refresh(std::uint64_t addr, Site& site);
    std::vector<std::uint8_t> insn_;
    RawRead read_;
    RawWrite write_;
    std::map<std::uint64_t, Site> sites_;
    std::function<void()> changed_;
    void changed() const {
        if (changed_) changed_();
    }
};

} // namespace tpagent::process
