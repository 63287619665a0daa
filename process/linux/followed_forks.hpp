// The children a trace follows (trace-follow-fork): forked while it runs, they keep the fast
// tracepoints' jumps and pads and the in-process agent their parent had, and their collectors
// write into the same shared buffer. tpagent keeps them traced, unseen by gdb: their events are
// handled here and they run on (their signals delivered), a fork of theirs is followed in turn,
// an exec lets one go (its image, with everything of tpagent's in it, is gone), and the end of
// following stops each, puts its code back and lets it go.
#pragma once
#include "process/held_fork_children.hpp"
#include "process/linux/wait_status.hpp"
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sys/types.h>
#include <vector>

namespace tpagent::process {

class FollowedForks {
  public:
    // `await`: waits for a child's first stop (unless it came early); `clean`: puts back the
    // code in a child's copy of the program: the breakpoints, and with `jumps` the fast
    // tracepoints' jumps too.
    FollowedForks(std::function<void(pid_t)> await, std::function<void(pid_t, bool)> clean);

    void start(ForkFollowing following) { following_ = std::move(following); }
    bool active() const { return following_.has_value(); }
    // Ends following: each followed process stopped (out of any collector), its code put
    // back, its agent told it is no longer traced, and let go.
    void stop();
    std::vector<pid_t> processes() const { return {processes_.begin(), processes_.end()}; }
    bool has_thread(pid_t tid) const { return threads_.count(tid) != 0 || processes_.count(tid); }

    // A child just forked (stopped at its birth, not a vfork child): its breakpoints go, its
    // mark says followed. False if the mark cannot be written (the caller lets it go).
    bool prepare(pid_t child);
    // A prepared child is followed from now on, and runs.
    void adopt(pid_t child);
    // The code of a prepared child that is not to be followed after all (gdb takes it) is put
    // back, and its mark says untraced.
    void unprepare(pid_t child);

    // A wait status of thread `tid`: true if it is a followed process's, handled here.
    bool handle(pid_t tid, WaitStatus status);

  private:
    struct Thread {
        pid_t process = 0;
        bool first_stop = false; // a new thread: its first stop (a SIGSTOP) is to come
    };
    void on_stop(pid_t tid, Thread& thread, WaitStatus status);
    // A fork, vfork or clone event of a followed thread, handled.
    void on_new_task(pid_t tid, pid_t process, int event);
    // The agent's ProcessMark in process pid: followed by the trace, or not (untraced).
    bool write_mark(pid_t pid, bool followed) const;
    // A fault of the agent's copy in a followed thread: its pc moved to the copy's way out.
    bool recover_copy_fault(pid_t tid) const;
    // Stops every thread of the process; false if it ended meanwhile. `signals`: those that
    // came instead of the stop, for the detach to deliver.
    bool stop_threads(pid_t process, std::map<pid_t, int>& signals, bool& exec_seen);
    void resume_threads(pid_t process);
    void let_go(pid_t process);
    void forget(pid_t process);
    std::vector<pid_t> threads_of(pid_t process) const;

    std::function<void(pid_t)> await_;
    std::function<void(pid_t, bool)> clean_;
    std::optional<ForkFollowing> following_;
    std::map<pid_t, Thread> threads_;
    std::set<pid_t> processes_;
};

} // namespace tpagent::process
