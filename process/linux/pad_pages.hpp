// The memory mapped in a program for pads and placed code, and which trace run's code each
// page holds. A run (a generation) takes room from its own pages, or claims a free one. When
// nothing installed uses its code any more, its pages retire; a retired run that no thread can
// still be running in or return into (the caller checks, see LinuxFastSites::reclaim_pads) frees
// them for later runs, so repeated tstarts keep reusing the same pages instead of mapping more.
// A run's pages retire and are freed together: a thread in one of its pads may go on to any
// of its placed code.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>

namespace tpagent::process {

class PadPages {
  public:
    static constexpr std::size_t kPageSize = 4096;

    // `size` bytes (a multiple of 16) whose whole extent is within `reach` of `near`, from a
    // page of the current run or a free page it claims; nullopt: map a new one (add).
    std::optional<std::uint64_t> take(std::uint64_t near, std::size_t size, std::uint64_t reach);
    // A new mapping of `mapped` bytes at `base`, whose first `used` bytes the current run took.
    void add(std::uint64_t base, std::size_t mapped, std::size_t used);
    // Nothing installed uses the current run's code any more: its pages retire.
    void retire_current();
    bool any_retired() const;
    // The retired run whose page holds `addr`, if any.
    std::optional<std::uint64_t> retired_run_at(std::uint64_t addr) const;
    // Frees the pages of every retired run not in `kept`; how many pages that freed.
    std::size_t free_retired_except(const std::set<std::uint64_t>& kept);
    // The run whose page holds `addr` is never freed (a jump to it could not be removed).
    void pin(std::uint64_t addr);

    bool contains(std::uint64_t addr) const;
    bool empty() const { return pages_.empty(); }
    std::size_t mapped_bytes() const;
    void clear() {
        pages_.clear();
        pinned_.clear();
    }

  private:
    static constexpr std::uint64_t kFree = 0;
    struct Page {
        std::size_t size = 0; // bytes mapped
        std::size_t used = 0;
        std::uint64_t run = kFree;
    };
    const std::pair<const std::uint64_t, Page>* page_at(std::uint64_t addr) const;

    std::map<std::uint64_t, Page> pages_; // by base address
    std::set<std::uint64_t> pinned_;      // runs
    std::uint64_t current_ = 1;
};

} // namespace tpagent::process
