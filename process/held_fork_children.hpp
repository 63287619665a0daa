// The children a fork event reported, which a process holds stopped for gdb (fork-events) until
// gdb lets them go, kills them or takes one as a target of its own; and, for a vfork child taken
// so, the hand-over of gdb's breakpoints in the memory it shares with its parent; and the
// children a trace follows (trace-follow-fork). This base holds none: a target that never holds
// or follows a child needs nothing more.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace tpagent::process {

class Target;

// What following forks needs from the trace (trace-follow-fork).
struct ForkFollowing {
    std::uint64_t process_mark = 0; // where the in-process agent's ProcessMark is
    // The ProcessMark's bytes for process pid, followed by the trace or not (its layout is the
    // agent's: inproc/shared_buffer.hpp).
    std::function<std::vector<std::uint8_t>(pid_t pid, bool followed)> mark;
    // The agent's copy of listed memory: a fault with the pc in [copy_begin, copy_end) resumes
    // at copy_fault (a page unmapped in the child since the listing), as in the parent.
    std::uint64_t copy_begin = 0, copy_end = 0, copy_fault = 0;
    // Whether a thread of process pid is inside a collector call now (it is stopped).
    std::function<bool(pid_t)> collecting;
    // A followed process ended, exec'd or was let go: none of its threads writes any more.
    std::function<void(pid_t)> left;
};

class HeldForkChildren {
  public:
    HeldForkChildren() = default;
    HeldForkChildren(const HeldForkChildren&) = delete;
    HeldForkChildren& operator=(const HeldForkChildren&) = delete;
    virtual ~HeldForkChildren() = default;

    // A child reported by a fork event and held for gdb.
    virtual bool held(pid_t /*pid*/) const { return false; }
    virtual std::vector<pid_t> list() const { return {}; }
    // Lets a held child run on untraced (gdb's detach-on-fork); false if there is none.
    virtual bool release(pid_t /*pid*/) { return false; }
    // Kills a held child (gdb's kill); false if there is none.
    virtual bool kill(pid_t /*pid*/) { return false; }
    // A child held for gdb, as a target of its own: gdb follows it (follow-fork-mode child,
    // or it detaches the parent of a child it kept), or addresses it (detach-on-fork off).
    // pid 0: the only one held. nullptr if there is none such. A vfork child shares the
    // parent's memory: tpagent's own breakpoints in it are lifted meanwhile.
    virtual std::unique_ptr<Target> take(pid_t /*pid*/ = 0) { return nullptr; }

    // gdb's breakpoints in memory, with the bytes each replaced.
    using BreakpointBytes = std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>>;
    // A vfork child's memory stops being its parent's (it exits or execs): `hand_back` gets
    // the breakpoints gdb put in that memory through the child first.
    // NOLINTNEXTLINE(performance-unnecessary-value-param): a sink; an override keeps it
    virtual void when_memory_unshared(std::function<void(BreakpointBytes)> /*hand_back*/) {}
    // Takes over breakpoints already in this process's memory (handed back by a vfork child).
    virtual void take_breakpoints(const BreakpointBytes& /*breakpoints*/) {}

    // From now on, a child forked (not vforked) and not kept by gdb stays traced by tpagent
    // with the fast tracepoints' jumps in its code: its hits go into the same trace. False if
    // this target cannot.
    // NOLINTNEXTLINE(performance-unnecessary-value-param): a sink; an override keeps it
    virtual bool follow(ForkFollowing /*following*/) { return false; }
    // Every followed child stopped, its code put back, let go; no more are followed.
    virtual void stop_following() {}
    // The processes followed now.
    virtual std::vector<pid_t> followed() const { return {}; }
};

} // namespace tpagent::process
