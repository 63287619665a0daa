// A traced process's forked children (see linux_fork_children.hpp).
#include "process/linux/linux_fork_children.hpp"
#include "base/proc_files.hpp"
#include "process/linux/linux_process.hpp"
#include <cstdlib>
#include <set>
#include <string>
#include <utility>

namespace tpagent::process {

LinuxForkChildren::LinuxForkChildren(pid_t parent, AddressSpace& memory,
                                     std::function<void(pid_t, bool)> clean_child)
    : parent_(parent), memory_(memory), clean_child_(std::move(clean_child)),
      followed_([this](pid_t child) { children_.await(child); }, clean_child_) {}

void LinuxForkChildren::release_child(pid_t child, bool vfork) {
    if (!vfork && followed_.active()) {
        if (followed_.prepare(child))
            followed_.adopt(child);
        else
            ForkChildren::detach(child);
        return;
    }
    children_.await(child);
    if (vfork)
        memory_.lift_for_vfork();
    else
        clean_child_(child, true);
    ForkChildren::detach(child);
}

void LinuxForkChildren::hold_child(pid_t child, bool vfork) {
    if (!vfork && followed_.active()) {
        if (followed_.prepare(child)) prepared_.insert(child);
        children_.hold(child, vfork);
        return;
    }
    children_.await(child);
    if (!vfork) clean_child_(child, true);
    children_.hold(child, vfork);
}

bool LinuxForkChildren::release(pid_t pid) {
    if (prepared_.erase(pid) && children_.take(pid)) {
        followed_.adopt(pid); // gdb let it go: the trace follows it
        return true;
    }
    return children_.release(pid, memory_);
}

void LinuxForkChildren::stop_following() {
    for (pid_t child : prepared_)
        followed_.unprepare(child); // still held for gdb: clean now
    prepared_.clear();
    followed_.stop();
}

bool LinuxForkChildren::first_stop_early(pid_t tid) {
    // A thread of the program has its tgid; a forked child leads a process of its own.
    const std::string tgid = status_field(tid, "Tgid");
    if (tgid.empty() || std::strtol(tgid.c_str(), nullptr, 10) != tid || tid == parent_)
        return false;
    children_.seen_early(tid);
    return true;
}

void LinuxForkChildren::release_reported(const LinuxThreads& threads,
                                         const std::optional<StopEvent>& chosen,
                                         const std::deque<StopEvent>& reported) {
    // A fork event still waiting in a thread (held back by another stop) has not reached
    // gdb: its child stays held for it.
    std::set<pid_t> unreported;
    for (const auto& [tid, t] : threads)
        if (t.pending && t.pending->fork_child) unreported.insert(*t.pending->fork_child);
    if (chosen && chosen->fork_child) unreported.insert(*chosen->fork_child);
    for (const StopEvent& ev : reported)
        if (ev.fork_child) unreported.insert(*ev.fork_child);
    for (pid_t child : children_.list())
        if (!unreported.count(child) && prepared_.count(child)) release(child);
    children_.release_all_but(unreported, memory_);
}

std::unique_ptr<Target> LinuxForkChildren::take(pid_t pid) {
    if (pid == 0 && children_.size() != 1) return nullptr;
    const pid_t child = pid == 0 ? children_.list().front() : pid;
    const std::optional<bool> vfork = children_.take(child);
    if (!vfork) return nullptr;
    if (prepared_.erase(child)) followed_.unprepare(child); // gdb's now, not the trace's
    // A vfork child runs in this process's memory: gdb's breakpoints there are its now (gdb
    // sees one program space), and tpagent's own are lifted meanwhile.
    BreakpointBytes shared;
    const bool shared_memory = *vfork;
    if (shared_memory) {
        shared = memory_.give_up_user_breakpoints();
        memory_.lift_for_vfork();
    }
    std::unique_ptr<LinuxProcess> inf = LinuxProcess::forked_child(child);
    if (shared_memory) inf->fork_children().share_parent_memory(shared);
    return inf;
}

void LinuxForkChildren::share_parent_memory(const BreakpointBytes& breakpoints) {
    take_breakpoints(breakpoints);
    vfork_child_ = true;
}

void LinuxForkChildren::unshare_memory() {
    if (!memory_unshared_ || !std::exchange(vfork_child_, false)) return;
    // Still in the parent's memory, whose they are now.
    BreakpointBytes given = memory_.give_up_user_breakpoints();
    std::exchange(memory_unshared_, nullptr)(std::move(given));
}

} // namespace tpagent::process
