// Why the inferior stopped, as the stop reply will describe it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>

namespace tpagent::process {

struct StopEvent {
    // Thread `tid` of process `pid` stopped by signal `sig` (0: a stop of tpagent's or gdb's).
    static StopEvent signal_stop(pid_t pid, pid_t tid, int sig) {
        StopEvent ev;
        ev.pid = pid;
        ev.tid = tid;
        ev.signal = sig;
        return ev;
    }

    enum class Kind {
        Signal, // thread stopped with a signal (SIGTRAP for breakpoints and steps)
        Exited, // process exited normally: exit_code
        Killed, // process died from a signal: signal
    };
    Kind kind = Kind::Signal;
    pid_t pid = 0;
    pid_t tid = 0;
    int signal = 0; // host signal number
    int exit_code = 0;
    bool swbreak = false;
    bool hwbreak = false;
    std::optional<std::uint64_t> watch_addr;
    int watch_type = 0; // 2 watch, 3 rwatch, 4 awatch
    // A caught system call (QCatchSyscalls): its number, at its entry or its return.
    struct Syscall {
        bool entry = true;
        long number = 0;
    };
    std::optional<Syscall> syscall;
    // The process ran execve: the new program's absolute path (reported when gdb asked).
    std::optional<std::string> exec_path;
    // Every thread gdb resumed has exited, and the others are stopped (gdb asked for
    // no-resumed): no thread and no signal to report.
    bool no_resumed = false;
    // The process forked (fork-events) or vforked (vfork-events): the child's pid, held for gdb.
    std::optional<pid_t> fork_child;
    bool vfork = false;
    // The vfork child has exec'd or exited: the parent runs in its own memory again.
    bool vfork_done = false;
    // QThreadEvents (non-stop): the thread was just created and waits for gdb to resume it,
    // or (Kind::Signal, signal 0) it exited with exit_code and is gone.
    bool thread_created = false;
    bool thread_exited = false;
    // A single step gdb asked for ended, and nothing else happened there. All-stop: held back
    // while another thread's event went to gdb, it answers a request gdb has since replaced,
    // and is dropped at the next resume (gdb took it for a random SIGTRAP,
    // gdb.threads/pending-step.exp).
    bool step_done = false;
};

} // namespace tpagent::process
