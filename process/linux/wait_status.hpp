// What waitpid said about a traced thread, as a value: the raw status word decoded once, so
// that callers ask what happened instead of testing bits.
#pragma once
#include <csignal>
#include <sys/types.h>
#include <sys/wait.h>

namespace tpagent::process {

class WaitStatus {
  public:
    enum class Kind {
        Exited,      // exit_code()
        Killed,      // by fatal_signal()
        SignalStop,  // signal-delivery stop (or a group stop) with stop_signal()
        PtraceEvent, // PTRACE_EVENT_* stop: ptrace_event()
        SyscallStop, // PTRACE_O_TRACESYSGOOD system-call entry or return
        Continued,   // WIFCONTINUED: nothing for a tracer
    };

    constexpr WaitStatus() = default;
    constexpr explicit WaitStatus(int raw) : raw_(raw) {}
    // Statuses made up, as waitpid would give them (tests; a status to hand on).
    static constexpr WaitStatus exited(int code) { return WaitStatus((code & 0xff) << 8); }
    static constexpr WaitStatus killed(int sig) { return WaitStatus(sig & 0x7f); }
    static constexpr WaitStatus stopped(int sig, int event = 0) {
        return WaitStatus((event << 16) | ((sig & 0xff) << 8) | 0x7f);
    }

    constexpr Kind kind() const {
        const int low = raw_ & 0x7f;
        if (low == 0) return Kind::Exited;
        if (low != 0x7f) return Kind::Killed;
        if ((raw_ & 0xff) != 0x7f) return Kind::Continued;
        if (ptrace_event() != 0) return Kind::PtraceEvent;
        if (stop_signal() == (SIGTRAP | 0x80)) return Kind::SyscallStop;
        return Kind::SignalStop;
    }
    constexpr bool exited() const { return kind() == Kind::Exited; }
    constexpr bool killed() const { return kind() == Kind::Killed; }
    // The thread is gone (exited or killed).
    constexpr bool ended() const { return exited() || killed(); }
    // In a ptrace stop of any kind: signal, event or system call.
    constexpr bool stopped() const { return (raw_ & 0xff) == 0x7f; }

    constexpr int exit_code() const { return (raw_ >> 8) & 0xff; }
    constexpr int fatal_signal() const { return raw_ & 0x7f; }
    // The stop's signal as waitpid reports it (SIGTRAP | 0x80 for a system-call stop).
    constexpr int stop_signal() const { return (raw_ >> 8) & 0xff; }
    // The PTRACE_EVENT_* of an event stop; 0 for any other stop.
    constexpr int ptrace_event() const { return (raw_ >> 16) & 0xff; }

    constexpr int raw() const { return raw_; }

  private:
    int raw_ = 0;
};

// waitpid(which, ..., options), its status as a WaitStatus.
inline pid_t wait_thread(pid_t which, WaitStatus& status, int options) {
    int raw = 0;
    const pid_t got = ::waitpid(which, &raw, options);
    status = WaitStatus(raw);
    return got;
}

} // namespace tpagent::process
