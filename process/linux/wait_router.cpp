// Wait statuses between traced processes (see wait_router.hpp).
#include "process/linux/wait_router.hpp"
#include "base/proc_files.hpp"
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sys/wait.h>
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

std::optional<WaitStatus> WaitRouter::take_kept(const Owner& self, pid_t& tid) {
    auto it = kept_.find(&self);
    if (it == kept_.end() || it->second.empty()) return std::nullopt;
    const auto [kept_tid, kept] = it->second.front();
    it->second.pop_front();
    tid = kept_tid;
    return kept;
}

pid_t WaitRouter::wait(const Owner& self, WaitStatus& status, int options) {
    pid_t tid = 0;
    if (auto kept = take_kept(self, tid)) {
        status = *kept;
        return tid;
    }
    for (;;) {
        pid_t which = -1;
        if (owners_.size() > 1 && before_end_ && !announcing_) {
            // A process's end is looked at before it is reaped: once reaped, a parent waiting
            // for it runs on, maybe to its own end, before the others are stopped.
            siginfo_t info{};
            if (waitid(P_ALL, 0, &info,
                       WEXITED | WSTOPPED | __WALL | WNOWAIT | (options & WNOHANG)) != 0)
                return -1;
            if (info.si_pid == 0) return 0; // (WNOHANG: none now)
            which = info.si_pid;
            const bool ends = info.si_code == CLD_EXITED || info.si_code == CLD_KILLED ||
                              info.si_code == CLD_DUMPED;
            if (ends && announced_.insert(which).second &&
                std::any_of(owners_.begin(), owners_.end(),
                            [which](const Owner* o) { return o->owner_pid() == which; })) {
                announcing_ = true;
                before_end_(which);
                announcing_ = false;
                // (Its waits there may have taken this status, or one of ours.)
                if (auto kept = take_kept(self, tid)) {
                    status = *kept;
                    return tid;
                }
                continue;
            }
        }
        tid = wait_thread(which, status, which == -1 ? options : (options | __WALL) & ~WNOHANG);
        if (tid <= 0) {
            if (which == -1 || errno != ECHILD) return tid;
            continue; // (taken meanwhile by a wait of the process ending: kept for its owner)
        }
        if (status.ended()) announced_.erase(tid);
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
