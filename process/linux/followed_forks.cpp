// The children a trace follows (see followed_forks.hpp).
#include "process/linux/followed_forks.hpp"
#include "arch/arch.hpp"
#include "base/proc_files.hpp"
#include "process/linux/fork_children.hpp"
#include "process/target.hpp" // (held_fork_children.hpp needs it whole)
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace tpagent::process {

namespace {

void resume(pid_t tid, int sig) {
    if (ptrace(PTRACE_CONT, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig))) != 0)
        spdlog::debug("followed thread {}: cannot resume: {}", tid, std::strerror(errno));
}

long tgkill(pid_t tgid, pid_t tid, int sig) {
    return syscall(SYS_tgkill, tgid, tid, sig);
}

// 100 µs apart: 10 s for the threads of a followed process to stop.
constexpr int kStopWaitRounds = 100000;

bool is_stop_signal(int sig) {
    return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

pid_t process_of(pid_t tid) {
    const std::string tgid = status_field(tid, "Tgid");
    return tgid.empty() ? 0 : static_cast<pid_t>(std::strtol(tgid.c_str(), nullptr, 10));
}

} // namespace

FollowedForks::FollowedForks(std::function<void(pid_t)> await,
                             std::function<void(pid_t, bool)> clean)
    : await_(std::move(await)), clean_(std::move(clean)) {}

bool FollowedForks::write_mark(pid_t pid, bool followed) const {
    if (!following_ || following_->process_mark == 0 || !following_->mark) return false;
    const std::vector<std::uint8_t> mark = following_->mark(pid, followed);
    const int mem = ::open(fmt::format("/proc/{}/mem", pid).c_str(), O_RDWR | O_CLOEXEC);
    if (mem < 0) return false;
    const bool ok =
        ::pwrite(mem, mark.data(), mark.size(), static_cast<off_t>(following_->process_mark)) ==
        static_cast<ssize_t>(mark.size());
    ::close(mem);
    return ok;
}

bool FollowedForks::prepare(pid_t child) {
    if (!following_) return false;
    await_(child);
    clean_(child, false);
    if (write_mark(child, true)) return true;
    spdlog::warn("forked child {}: the trace cannot follow it (its agent's mark cannot be "
                 "written); it runs on untraced",
                 child);
    clean_(child, true);
    return false;
}

void FollowedForks::adopt(pid_t child) {
    processes_.insert(child);
    threads_[child] = Thread{child, false};
    spdlog::debug("forked child {}: followed by the trace", child);
    resume(child, 0);
}

void FollowedForks::unprepare(pid_t child) {
    clean_(child, true);
    write_mark(child, false);
}

std::vector<pid_t> FollowedForks::threads_of(pid_t process) const {
    std::vector<pid_t> tids;
    for (const auto& [tid, t] : threads_)
        if (t.process == process) tids.push_back(tid);
    return tids;
}

void FollowedForks::forget(pid_t process) {
    for (pid_t tid : threads_of(process))
        threads_.erase(tid);
    if (processes_.erase(process) && following_ && following_->left) following_->left(process);
}

bool FollowedForks::handle(pid_t tid, WaitStatus status) {
    auto it = threads_.find(tid);
    if (it == threads_.end()) {
        // A new thread's first stop can come before its creator's clone event. (An ended
        // thread can no longer be looked up: one never seen is not ours to know.)
        if (processes_.empty() || !status.stopped()) return false;
        const pid_t process = process_of(tid);
        if (!processes_.count(process)) return false;
        it = threads_.emplace(tid, Thread{process, true}).first;
    }
    const pid_t process = it->second.process;
    if (status.ended()) {
        threads_.erase(it);
        // The leader's end comes last, after every other thread's.
        if (tid == process) forget(process);
        return true;
    }
    if (status.stopped()) on_stop(tid, it->second, status);
    return true;
}

void FollowedForks::on_new_task(pid_t tid, pid_t process, int event) {
    unsigned long msg = 0;
    if (ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &msg) != 0 || msg == 0) return;
    const auto task = static_cast<pid_t>(msg);
    if (event == PTRACE_EVENT_CLONE) {
        threads_.emplace(task, Thread{process, true}); // (known already if its stop came first)
        return;
    }
    // A vfork child runs in this process's memory (jumps and all) until it execs or exits,
    // as this process's thread: let go as it is.
    if (event == PTRACE_EVENT_VFORK) {
        await_(task);
        ForkChildren::detach(task);
        return;
    }
    if (prepare(task))
        adopt(task);
    else
        ForkChildren::detach(task);
}

void FollowedForks::on_stop(pid_t tid, Thread& thread, WaitStatus status) {
    const int sig = status.stop_signal();
    const int event = status.ptrace_event();
    const pid_t process = thread.process;
    if (event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK) {
        on_new_task(tid, process, event);
        resume(tid, 0);
        return;
    }
    if (event == PTRACE_EVENT_EXEC) {
        // The image with the jumps, pads and agent is gone: the process leaves the trace.
        spdlog::debug("followed process {} exec'd: let go", process);
        if (ptrace(PTRACE_DETACH, tid, nullptr, nullptr) != 0)
            spdlog::warn("followed process {}: cannot detach: {}", process, std::strerror(errno));
        forget(process);
        return;
    }
    if (event != 0 || (sig & 0x80) != 0) { // vfork-done, a system-call stop: not for us
        resume(tid, 0);
        return;
    }
    if (sig == SIGSTOP && thread.first_stop) {
        thread.first_stop = false;
        resume(tid, 0);
        return;
    }
    if ((sig == SIGSEGV || sig == SIGBUS) && recover_copy_fault(tid)) {
        resume(tid, 0);
        return;
    }
    // A group stop (no signal to deliver) runs on: nobody is there to continue it.
    siginfo_t info{};
    if (is_stop_signal(sig) && ptrace(PTRACE_GETSIGINFO, tid, nullptr, &info) != 0 &&
        errno == EINVAL) {
        resume(tid, 0);
        return;
    }
    resume(tid, sig); // the program's own signal
}

bool FollowedForks::recover_copy_fault(pid_t tid) const {
    if (!following_ || following_->copy_fault == 0) return false;
    const arch::Architecture& arch = arch::host_architecture();
    arch::RegisterSnapshot regs;
    if (!arch.read_general_registers(tid, regs)) return false;
    const std::uint64_t pc = arch.pc(regs);
    if (pc < following_->copy_begin || pc >= following_->copy_end) return false;
    arch.set_pc(regs, following_->copy_fault);
    if (!arch.write_general_registers(tid, regs)) return false;
    spdlog::debug("followed thread {}: collector read unmapped memory at pc 0x{:x}: recovered", tid,
                  pc);
    return true;
}

bool FollowedForks::stop_threads(pid_t process, std::map<pid_t, int>& signals, bool& exec_seen) {
    std::set<pid_t> owed;
    // A new thread's first stop (a SIGSTOP, perhaps reported already) is its stop: another
    // SIGSTOP sent now would outlive the detach and stop the program.
    for (pid_t tid : threads_of(process))
        if (threads_.at(tid).first_stop || tgkill(process, tid, SIGSTOP) == 0) owed.insert(tid);
    // Each owed thread's next status, whichever comes first: a wait for the leader alone
    // would never end while another thread's end is still ours to reap (the kernel reports the
    // leader's end last). Bounded: a thread that never stops (stuck in the kernel) is given up.
    int idle_rounds = 0;
    while (!owed.empty()) {
        pid_t tid = 0;
        WaitStatus status;
        for (pid_t candidate : owed) {
            const pid_t got = wait_thread(candidate, status, __WALL | WNOHANG);
            if (got == 0) continue;
            tid = candidate;
            if (got != candidate) status = WaitStatus::killed(SIGKILL); // gone: no status
            break;
        }
        if (tid == 0) {
            if (++idle_rounds > kStopWaitRounds) {
                spdlog::warn("followed process {}: {} thread(s) did not stop", process,
                             owed.size());
                for (pid_t t : owed)
                    threads_.erase(t);
                break;
            }
            const timespec pause{0, 100000};
            nanosleep(&pause, nullptr);
            continue;
        }
        idle_rounds = 0;
        if (status.ended()) {
            owed.erase(tid);
            threads_.erase(tid);
            if (tid == process) {
                forget(process);
                return false;
            }
            continue;
        }
        if (!status.stopped()) continue;
        const int sig = status.stop_signal();
        const int event = status.ptrace_event();
        if (event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK ||
            event == PTRACE_EVENT_VFORK) {
            const std::size_t before = threads_.size();
            // (While stopping, a forked child is not followed: it is let go clean.)
            if (event == PTRACE_EVENT_FORK) {
                unsigned long child = 0;
                if (ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &child) == 0 && child > 0) {
                    await_(static_cast<pid_t>(child));
                    clean_(static_cast<pid_t>(child), true);
                    ForkChildren::detach(static_cast<pid_t>(child));
                }
            } else {
                on_new_task(tid, process, event);
            }
            // A new thread's first stop is its stop.
            if (threads_.size() > before)
                for (pid_t t : threads_of(process))
                    if (threads_.at(t).first_stop) owed.insert(t);
            resume(tid, 0);
            continue;
        }
        if (event == PTRACE_EVENT_EXEC) {
            // The other threads are gone; the SIGSTOP sent to one of them may be too.
            exec_seen = true;
            for (pid_t t : threads_of(process))
                if (t != tid) threads_.erase(t);
            owed = {tid};
            tgkill(process, tid, SIGSTOP);
            resume(tid, 0);
            continue;
        }
        if (event != 0 || (sig & 0x80) != 0) {
            resume(tid, 0);
            continue;
        }
        if (sig == SIGSTOP) {
            if (auto t = threads_.find(tid); t != threads_.end()) t->second.first_stop = false;
            owed.erase(tid);
            continue;
        }
        if (!((sig == SIGSEGV || sig == SIGBUS) && recover_copy_fault(tid)))
            signals[tid] = sig; // delivered when it is let go
        resume(tid, 0);
    }
    return true;
}

void FollowedForks::resume_threads(pid_t process) {
    for (pid_t tid : threads_of(process))
        resume(tid, 0);
}

void FollowedForks::let_go(pid_t process) {
    std::map<pid_t, int> signals;
    bool exec_seen = false;
    // Out of the collector first: a frame half written when the jumps go is a frame lost, and
    // its thread would write it into a chunk a later run may use.
    constexpr int kRounds = 200;
    for (int round = 0;; ++round) {
        if (!stop_threads(process, signals, exec_seen)) return; // it ended
        if (exec_seen || !following_->collecting || !following_->collecting(process) ||
            round == kRounds)
            break;
        resume_threads(process);
        const timespec pause{0, 1000000};
        nanosleep(&pause, nullptr);
    }
    if (!exec_seen) {
        clean_(process, true);
        write_mark(process, false);
    }
    for (pid_t tid : threads_of(process)) {
        const auto sig = signals.count(tid) ? signals[tid] : 0;
        if (ptrace(PTRACE_DETACH, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig))) !=
            0)
            spdlog::debug("followed thread {}: cannot detach: {}", tid, std::strerror(errno));
    }
    spdlog::debug("followed process {}: code restored, let go", process);
    forget(process);
}

void FollowedForks::stop() {
    if (!following_) return;
    while (!processes_.empty())
        let_go(*processes_.begin());
    following_.reset();
}

} // namespace tpagent::process
