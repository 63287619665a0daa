#include "process/linux/pad_pages.hpp"
#include <algorithm>

namespace tpagent::process {

namespace {
// The farthest byte of [at, at + size) from near is within reach.
bool in_reach(std::uint64_t at, std::size_t size, std::uint64_t near, std::uint64_t reach) {
    return (at > near ? at + size - near : near - at) < reach;
}
} // namespace

std::optional<std::uint64_t> PadPages::take(std::uint64_t near, std::size_t size,
                                            std::uint64_t reach) {
    Page* free_page = nullptr;
    std::uint64_t free_base = 0;
    for (auto& [base, page] : pages_) {
        if (page.run == current_ && page.size - page.used >= size &&
            in_reach(base + page.used, size, near, reach)) {
            const std::uint64_t at = base + page.used;
            page.used += size;
            return at;
        }
        if (!free_page && page.run == kFree && page.size >= size &&
            in_reach(base, size, near, reach)) {
            free_page = &page;
            free_base = base;
        }
    }
    if (!free_page) return std::nullopt;
    free_page->run = current_;
    free_page->used = size;
    return free_base;
}

void PadPages::add(std::uint64_t base, std::size_t mapped, std::size_t used) {
    pages_[base] = Page{mapped, used, current_};
}

void PadPages::retire_current() {
    // A run that took no page has nothing to retire: the next one is the same number.
    if (std::any_of(pages_.begin(), pages_.end(),
                    [&](const auto& p) { return p.second.run == current_; }))
        ++current_;
}

bool PadPages::any_retired() const {
    return std::any_of(pages_.begin(), pages_.end(), [&](const auto& p) {
        return p.second.run != kFree && p.second.run != current_;
    });
}

const std::pair<const std::uint64_t, PadPages::Page>* PadPages::page_at(std::uint64_t addr) const {
    auto it = pages_.upper_bound(addr);
    if (it == pages_.begin()) return nullptr;
    --it;
    return addr - it->first < it->second.size ? &*it : nullptr;
}

std::optional<std::uint64_t> PadPages::retired_run_at(std::uint64_t addr) const {
    const auto* p = page_at(addr);
    if (!p || p->second.run == kFree || p->second.run == current_) return std::nullopt;
    return p->second.run;
}

std::size_t PadPages::free_retired_except(const std::set<std::uint64_t>& kept) {
    std::size_t freed = 0;
    for (auto& [base, page] : pages_) {
        if (page.run == kFree || page.run == current_ || kept.count(page.run) ||
            pinned_.count(page.run))
            continue;
        page.run = kFree;
        page.used = 0;
        ++freed;
    }
    return freed;
}

void PadPages::pin(std::uint64_t addr) {
    if (const auto* p = page_at(addr); p && p->second.run != kFree) pinned_.insert(p->second.run);
}

bool PadPages::contains(std::uint64_t addr) const {
    return page_at(addr) != nullptr;
}

std::size_t PadPages::mapped_bytes() const {
    std::size_t total = 0;
    for (const auto& [base, page] : pages_)
        total += page.size;
    return total;
}

} // namespace tpagent::process
