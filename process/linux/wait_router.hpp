// Wait statuses between the processes tpagent traces at once. waitpid(-1) hands out any
// tracee's status, so one process's wait may take another's: that status is kept for its owner,
// whose next wait takes it first. With one process traced, every status is that one's.
#pragma once
#include "process/linux/wait_status.hpp"
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace tpagent::process {

class WaitRouter {
  public:
    // A traced process, as the router asks about it.
    class Owner {
      public:
        virtual pid_t owner_pid() const = 0;
        // A thread it knows: its own, or one of a child it holds or follows.
        virtual bool owns(pid_t tid) const = 0;

      protected:
        ~Owner() = default;
    };

    // tpagent's one router (the event loop's thread alone uses it).
    static WaitRouter& instance();

    void enlist(const Owner& owner);
    // The statuses kept for it are dropped (it is gone, or let go).
    void leave(const Owner& owner);
    // The next status for `self`: one kept for it, else waitpid(-1, options) until one is its
    // own, another's being kept for that one. Returns as waitpid does: the thread, 0 (WNOHANG:
    // none now), or -1 with errno.
    pid_t wait(const Owner& self, WaitStatus& status, int options);
    // Whether statuses are kept for `owner`.
    bool holds(const Owner& owner) const;
    // Called with a traced process's pid when its end is seen, before it is reaped, while
    // other processes are traced: all-stop stops them there (a parent waiting for this child
    // would run on once it is reaped). Waits made meanwhile reap as usual.
    void before_process_end(std::function<void(pid_t)> hook) { before_end_ = std::move(hook); }

  private:
    // Whose status of `tid` is: a process that knows the thread, else the process of its tgid,
    // else (a forked child's first stop, ahead of its parent's fork event) its parent's owner;
    // the taker when none is.
    const Owner* owner_of(pid_t tid, const Owner& taker) const;

    std::optional<WaitStatus> take_kept(const Owner& self, pid_t& tid);

    std::vector<const Owner*> owners_;
    std::function<void(pid_t)> before_end_;
    bool announcing_ = false;   // before_end_ runs
    std::set<pid_t> announced_; // ends seen, not reaped yet
    std::map<const Owner*, std::deque<std::pair<pid_t, WaitStatus>>> kept_;
};

} // namespace tpagent::process
