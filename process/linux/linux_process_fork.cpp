// Children the program forks: tpagent traces neither them nor their tracepoints, but their
// copy of the code holds tpagent's breakpoints and jumps, which would kill them (SIGTRAP) or
// send them into a collector that is not theirs. Each is caught at its first stop, cleaned
// and detached, as gdb does with detach-on-fork.
#include "base/proc_files.hpp"
#include "process/linux/linux_process.hpp"
#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tpagent::process {

bool LinuxProcess::is_new_process(pid_t tid) const {
    // A thread of the program has its tgid; a forked child leads a process of its own.
    const std::string tgid = status_field(tid, "Tgid");
    if (tgid.empty()) return false;
    return std::strtol(tgid.c_str(), nullptr, 10) == tid && tid != pid_;
}

void LinuxProcess::clean_child(pid_t child) {
    const int mem = ::open(fmt::format("/proc/{}/mem", child).c_str(), O_RDWR | O_CLOEXEC);
    auto put = [&](std::uint64_t addr, std::span<const std::uint8_t> bytes) {
        if (mem < 0 || ::pwrite(mem, bytes.data(), bytes.size(), static_cast<off_t>(addr)) !=
                           static_cast<ssize_t>(bytes.size()))
            spdlog::warn("forked child {}: cannot restore the code at 0x{:x}", child, addr);
    };
    // Breakpoints first: one on a fast tracepoint's jump saved a byte of the jump, which
    // the jump's own original bytes then replace.
    memory_->breakpoints().for_each_original(put);
    fast_sites_.for_each_patch([&](std::uint64_t addr, std::span<const std::uint8_t> original,
                                   std::span<const std::uint8_t>) { put(addr, original); });
    if (mem >= 0) ::close(mem);
}

void LinuxProcess::release_child(pid_t child, bool vfork) {
    fork_children_.await(child);
    if (vfork)
        memory_->lift_for_vfork();
    else
        clean_child(child);
    ForkChildren::detach(child);
}

void LinuxProcess::hold_child(pid_t child, bool vfork) {
    fork_children_.await(child);
    if (!vfork) clean_child(child);
    fork_children_.hold(child, vfork);
}

bool LinuxProcess::release_fork_child(pid_t pid) {
    return fork_children_.release(pid, *memory_);
}

void LinuxProcess::release_held_children() {
    // A fork event still waiting in a thread (held back by another stop) has not reached
    // gdb: its child stays held for it.
    std::set<pid_t> unreported;
    for (const auto& [tid, t] : threads_)
        if (t.pending && t.pending->fork_child) unreported.insert(*t.pending->fork_child);
    if (chosen_ && chosen_->fork_child) unreported.insert(*chosen_->fork_child);
    for (const StopEvent& ev : reported_)
        if (ev.fork_child) unreported.insert(*ev.fork_child);
    fork_children_.release_all_but(unreported, *memory_);
}

bool LinuxProcess::kill_fork_child(pid_t pid) {
    return fork_children_.kill(pid);
}

std::unique_ptr<Target> LinuxProcess::take_fork_child(pid_t pid) {
    if (pid == 0 && fork_children_.size() != 1) return nullptr;
    const pid_t child = pid == 0 ? fork_children_.list().front() : pid;
    const std::optional<bool> vfork = fork_children_.take(child);
    if (!vfork) return nullptr;
    // A vfork child runs in this process's memory: gdb's breakpoints there are its now (gdb
    // sees one program space), and tpagent's own are lifted meanwhile.
    BreakpointBytes shared;
    const bool shared_memory = *vfork;
    if (shared_memory) {
        shared = memory_->give_up_user_breakpoints();
        memory_->lift_for_vfork();
    }
    // Traced since its birth, with the parent's ptrace options, and stopped. Taken as
    // attached: it shares its parent's process group and terminal, neither of them its own
    // (Ctrl-C goes to it alone).
    std::unique_ptr<LinuxProcess> inf(new LinuxProcess(child, true));
    inf->add_thread(child, false);
    inf->finish_setup();
    inf->take_breakpoints(shared);
    inf->vfork_child_ = shared_memory;
    return inf;
}

void LinuxProcess::take_breakpoints(const BreakpointBytes& breakpoints) {
    memory_->adopt_user_breakpoints(breakpoints);
}

void LinuxProcess::unshare_memory() {
    if (!memory_unshared_ || !std::exchange(vfork_child_, false)) return;
    // Still in the parent's memory, whose they are now.
    BreakpointBytes given = memory_->give_up_user_breakpoints();
    std::exchange(memory_unshared_, nullptr)(std::move(given));
}

} // namespace tpagent::process
