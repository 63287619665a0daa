// One thread of a traced Linux process: what tpagent has it doing, and the facts about it that
// hold whatever it does (cached registers, an event held back, gdb's last resume request).
#pragma once
#include "arch/arch.hpp"
#include "process/stop_event.hpp"
#include <cstdint>
#include <map>
#include <sys/types.h>
#include <optional>
#include <variant>

namespace tpagent::process {

// What tpagent is doing with a thread beyond gdb's plain continue or step. One at a time: each
// of these resumes the thread its own way, so no two can be under way together.
namespace thread_activity {
// Runs or steps as gdb asked, nothing of tpagent's under way.
struct Plain {};
// Single-stepping the relocated instruction in the pad of the trap site at `site` (gdb's step
// from that site); the pc goes back to the program's code when the step is done.
struct SteppingThroughPad {
    std::uint64_t site = 0;
};
// Stepping over a lifted breakpoint: a trap site's with no pad (its instruction could not be
// relocated), or gdb's passed by PassingBreakpoint; `resumes`: the thread was to run on after
// the step, not to stop.
struct SteppingOverSite {
    std::uint64_t addr = 0;
    bool resumes = false;
};
// Stopped at gdb's breakpoint at `addr` whose hit is not gdb's (its condition did not hold, or
// its commands ran): the next resume steps over it, lifted (SteppingOverSite), unseen by gdb.
struct PassingBreakpoint {
    std::uint64_t addr = 0;
};
// gdb's single step over a fast tracepoint's jump at `site`: stepping on through its pad (and
// the collector) until the displaced instruction has run, then back to program addresses.
struct SteppingFastJump {
    std::uint64_t site = 0;
    bool in_copy = false; // reached the relocated instruction
    std::uint64_t steps = 0;
};
// Running on under the software branch recorder one branch (or instruction) at a time: each
// step is tpagent's, not gdb's.
struct RecordStepping {};
// Running under the software branch recorder to the breakpoint it placed at the next branch.
struct RunningToBlockEnd {
    std::uint64_t trap = 0;
};
} // namespace thread_activity

using ThreadActivity =
    std::variant<thread_activity::Plain, thread_activity::SteppingThroughPad,
                 thread_activity::SteppingOverSite, thread_activity::PassingBreakpoint,
                 thread_activity::SteppingFastJump, thread_activity::RecordStepping,
                 thread_activity::RunningToBlockEnd>;

// The SIGSTOP a thread has on its way: none, one tpagent sent (to stop it), or a new clone's
// first stop. Never two: tpagent sends none to a thread whose first stop is still to come.
enum class OwedSigstop { None, Ours, First };

// While-stepping: a tracepoint whose hit asked for `left` more single steps to be collected.
struct WhileStepping {
    std::uint64_t site = 0;
    std::uint64_t left = 0;
};

// The kernel's side of a thread: running (continued or single-stepping) or in a ptrace stop,
// which keeps how the thread was last resumed (a SIGTRAP then may be that step's).
class KernelRunState {
  public:
    bool stopped() const { return state_ == State::Stopped || state_ == State::StoppedAfterStep; }
    // The last resume was a single step (PTRACE_SINGLESTEP), whether or not it has stopped since.
    bool stepping() const { return state_ == State::Stepping || state_ == State::StoppedAfterStep; }
    void resumed(bool step) { state_ = step ? State::Stepping : State::Running; }
    void took_stop() { state_ = stepping() ? State::StoppedAfterStep : State::Stopped; }

  private:
    enum class State : std::uint8_t { Stopped, StoppedAfterStep, Running, Stepping };
    State state_ = State::Stopped;
};

// gdb's side: whether gdb has the thread running, as far as gdb knows.
enum class GdbRequest : std::uint8_t {
    Stopped,   // its stop was reported (or is being), or gdb never resumed it
    Running,   // gdb resumed it (see LinuxThread::last_resume); tpagent may stop it meanwhile
    StopAsked, // non-stop: running, and gdb asked it to stop (vCont;t), the stop not yet reported
};

// gdb's last resume request for a thread (vCont): a step, and the range it steps on through.
struct GdbResume {
    bool step = false;
    std::uint64_t range_start = 0, range_end = 0; // vCont;r (empty: none)

    // A range step that goes on at `pc` without telling gdb.
    bool steps_on_at(std::uint64_t pc) const { return step && pc >= range_start && pc < range_end; }
};

struct LinuxThread {
    // A thread's run state is three values, one per side, each changed by that side alone:
    // the kernel's (`kernel`), tpagent's (`activity`) and gdb's (`gdb`).
    KernelRunState kernel;
    // Which SIGSTOP it still has to take.
    OwedSigstop owed_sigstop = OwedSigstop::None;
    bool sigstop_on_way() const { return owed_sigstop != OwedSigstop::None; }
    bool awaiting_first_stop() const { return owed_sigstop == OwedSigstop::First; }
    // A SIGSTOP tpagent sent was taken while it ran the thread itself (an injected call, say).
    void took_own_sigstop() {
        if (owed_sigstop == OwedSigstop::Ours) owed_sigstop = OwedSigstop::None;
    }

    // tpagent's side: what the thread's last resume set it doing (see thread_activity).
    ThreadActivity activity;
    template <class State> State* doing() { return std::get_if<State>(&activity); }
    template <class State> const State* doing() const { return std::get_if<State>(&activity); }
    template <class State> bool is_doing() const { return std::holds_alternative<State>(activity); }
    // Done with `State` if that is what the thread was doing.
    template <class State> void end() {
        if (is_doing<State>()) activity = thread_activity::Plain{};
    }
    std::optional<WhileStepping> while_stepping;
    // The trap site at the pc whose hit was collected already (the thread stopped there after
    // its breakpoint); any other stop at a site has not run it yet. Forgotten at each resume.
    std::optional<std::uint64_t> collected_at;

    // gdb's side.
    GdbRequest gdb = GdbRequest::Stopped;
    GdbResume last_resume;
    bool wants_run() const { return gdb != GdbRequest::Stopped; }
    bool stop_requested() const { return gdb == GdbRequest::StopAsked; }
    // gdb resumes it; a stop it asked for meanwhile still stands.
    void gdb_resumed() {
        if (gdb == GdbRequest::Stopped) gdb = GdbRequest::Running;
    }
    // The stop gdb asked for is no longer to be reported as such (true if there was one).
    bool take_stop_request() {
        if (gdb != GdbRequest::StopAsked) return false;
        gdb = GdbRequest::Running;
        return true;
    }
    void forget_stop_request() { take_stop_request(); }
    std::optional<StopEvent> pending; // reportable event held back while another is reported

    // The number of the system call whose entry stop was seen last (QCatchSyscalls), to name
    // its return; forgotten when the thread is resumed otherwise than to that return.
    std::optional<long> in_syscall;
    // Stopped at a system call's entry: the call runs when the thread is resumed, so its pc is
    // no place to step from or to borrow for an injected call.
    bool at_syscall_entry = false;

    std::optional<arch::RegisterSnapshot> regs;
    bool regs_full = false; // regs holds the vector/FP state too, not just the gpr
};

// A process's threads, by thread id.
using LinuxThreads = std::map<pid_t, LinuxThread>;

inline bool all_stopped(const LinuxThreads& threads) {
    for (const auto& [tid, t] : threads)
        if (!t.kernel.stopped()) return false;
    return true;
}
inline bool others_running(const LinuxThreads& threads, pid_t tid) {
    for (const auto& [other, t] : threads)
        if (other != tid && !t.kernel.stopped()) return true;
    return false;
}
inline bool any_wants_run(const LinuxThreads& threads) {
    for (const auto& [tid, t] : threads)
        if (t.wants_run()) return true;
    return false;
}
// The thread that speaks for process `pid`: its leader while it lives, else another; 0 with
// none.
inline pid_t lead_thread(const LinuxThreads& threads, pid_t pid) {
    return threads.count(pid) ? pid : threads.empty() ? 0 : threads.begin()->first;
}

} // namespace tpagent::process
