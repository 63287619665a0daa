// The children a traced Linux process forks: their copy of the code holds tpagent's breakpoints
// and jumps, which would kill them (SIGTRAP) or send them into a collector that is not theirs.
// Each is caught at its first stop and cleaned, then let go (as gdb does with detach-on-fork)
// or, for a gdb that asked for fork events, held stopped for it. A held child gdb takes becomes
// a LinuxProcess of its own; a vfork child taken so hands gdb's breakpoints in the memory it
// shared back to its parent when it stops sharing it.
#pragma once
#include "process/held_fork_children.hpp"
#include "process/linux/address_space.hpp"
#include "process/linux/followed_forks.hpp"
#include "process/linux/fork_children.hpp"
#include "process/linux/linux_thread.hpp"
#include "process/stop_event.hpp"
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sys/types.h>
#include <vector>

namespace tpagent::process {

class LinuxForkChildren final : public HeldForkChildren {
  public:
    // The children of process `parent`, whose memory is `memory`; `clean_child` puts back the
    // original code in a forked child's copy of the program: the breakpoints, and with `jumps`
    // the fast tracepoints' jumps.
    LinuxForkChildren(pid_t parent, AddressSpace& memory,
                      std::function<void(pid_t, bool jumps)> clean_child);

    bool held(pid_t pid) const override { return children_.held(pid); }
    std::vector<pid_t> list() const override { return children_.list(); }
    bool release(pid_t pid) override;
    bool kill(pid_t pid) override {
        prepared_.erase(pid);
        return children_.kill(pid);
    }
    std::unique_ptr<Target> take(pid_t pid = 0) override;
    void when_memory_unshared(std::function<void(BreakpointBytes)> hand_back) override {
        memory_unshared_ = std::move(hand_back);
    }
    void take_breakpoints(const BreakpointBytes& breakpoints) override {
        memory_.adopt_user_breakpoints(breakpoints);
    }
    bool follow(ForkFollowing following) override {
        followed_.start(std::move(following));
        return true;
    }
    void stop_following() override;
    std::vector<pid_t> followed() const override { return followed_.processes(); }
    // A child held or followed, or a thread of a followed one.
    bool claims(pid_t tid) const {
        return children_.held(tid) || prepared_.count(tid) != 0 || followed_.has_thread(tid);
    }
    // A wait status of a thread that is not the process's: true if a followed child's (handled).
    bool followed_event(pid_t tid, WaitStatus status) { return followed_.handle(tid, status); }

    // A child the program forked (the parent's fork event): its copy of the code loses every
    // breakpoint and jump, and it runs on untraced (gdb's detach-on-fork), or, while a trace
    // follows forks, it keeps the jumps and is followed. A vfork child
    // shares the parent's memory: the breakpoints are lifted until the parent's
    // PTRACE_EVENT_VFORK_DONE.
    void release_child(pid_t child, bool vfork);
    // As release_child, but the child stays stopped, held for gdb (fork-events): cleaned (its
    // jumps kept while a trace follows forks, until gdb lets it go or takes it), or for a vfork
    // child (sharing the parent's memory) left as it is until gdb lets it go.
    void hold_child(pid_t child, bool vfork);
    // A stop of `tid`, not a thread of the parent: true if it is a forked child's first stop,
    // ahead of its parent's fork event (kept for that).
    bool first_stop_early(pid_t tid);
    // A held child's end (it was killed meanwhile): true if it was held, and is no longer.
    bool ended(pid_t pid) {
        prepared_.erase(pid);
        return children_.take(pid).has_value();
    }
    // Lets every held child run on but those whose fork event has not reached gdb: one still
    // waiting in a thread (held back by another stop), chosen, or reported in non-stop.
    void release_reported(const LinuxThreads& threads, const std::optional<StopEvent>& chosen,
                          const std::deque<StopEvent>& reported);

    // This process is a vfork child gdb took: it shares its parent's memory until it execs or
    // exits, and gdb's breakpoints there are its own meanwhile.
    void share_parent_memory(const BreakpointBytes& breakpoints);
    bool in_parent_memory() const { return vfork_child_; }
    // It execs or exits: gdb's breakpoints in the memory go back to the parent.
    void unshare_memory();

  private:
    pid_t parent_;
    AddressSpace& memory_;
    std::function<void(pid_t, bool)> clean_child_;
    ForkChildren children_;
    FollowedForks followed_;
    // Held children a followed trace prepared (jumps kept): followed if gdb lets them go.
    std::set<pid_t> prepared_;
    // A vfork child (taken as a target by gdb): hands gdb's breakpoints to its parent.
    std::function<void(BreakpointBytes)> memory_unshared_;
    bool vfork_child_ = false; // shares its parent's memory until it execs or exits
};

} // namespace tpagent::process
