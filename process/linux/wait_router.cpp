// Wait statuses between traced processes (see wait_router.hpp).
#include "process/linux/wait_router.hpp"
#include "base/proc_files.hpp"
#include <algorithm>
#include <cstdlib>
#include <spdlog/spdlog.h>

namespace tpagent::process {

WaitRouter& WaitRouter::instance() {
    static WaitRouter router;
    return router;
}

void WaitRouter::enlist(const Owner& owner) {
    if (std::find(owners_.begin(), owners_.end(), &owner) == owners_.end())
        owners_.push_back(&owner);
}

void WaitRouter::leave(const Owner& owner) {
    owners_.erase(std::remove(owners_.begin(), owners_.end(), &owner), owners_.end());
    kept_.erase(&owner);
}

bool WaitRouter::holds(const Owner& owner) const {
    auto it = kept_.find(&owner);
    return it != kept_.end() && !it->second.empty();
}

pid_t WaitRouter::wait(const Owner& self, WaitStatus& status, int options) {
    if (auto it = kept_.find(&self); it != kept_.end() && !it->second.empty()) {
        const auto [tid, kept] = it->second.front();
        it->second.pop_front();
        status = kept;
        return tid;
    }
    for (;;) {
        const pid_t tid = wait_thread(-1, status, options);
        if (tid <= 0) return tid;
        const Owner* owner = owner_of(tid, self);
        if (owner == &self) return tid;
        spdlog::debug("wait status {:#x} of thread {}: kept for process {}", status.raw(), tid,
                      owner->owner_pid());
        kept_[owner].emplace_back(tid, status);
    }
}

const WaitRouter::Owner* WaitRouter::owner_of(pid_t tid, const Owner& taker) const {
    if (owners_.size() <= 1) return &taker;
    if (taker.owns(tid)) return &taker;
    for (const Owner* o : owners_)
        if (o->owns(tid)) return o;
    // Not known yet: a new thread, or a new process (its parent's event still to come). Its
    // /proc entry stays while it is stopped or a zombie.
    const long tgid = std::strtol(status_field(tid, "Tgid").c_str(), nullptr, 10);
    for (const Owner* o : owners_)
        if (tgid > 0 && o->owner_pid() == tgid) return o;
    if (tgid == tid) {
        const long parent = std::strtol(status_field(tid, "PPid").c_str(), nullptr, 10);
        for (const Owner* o : owners_)
            if (parent > 0 && (o->owner_pid() == parent || o->owns(static_cast<pid_t>(parent))))
                return o;
    }
    return &taker;
}

} // namespace tpagent::process
