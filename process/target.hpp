// What tpagent asks of a traced program: run control, registers, memory, breakpoints and the
// sites tracepoints are made of. process/linux/LinuxProcess is the real one (ptrace); the server's
// tests drive their handlers against fakes. All-stop: when one thread has something to report,
// every other thread is stopped before the event is handed out (non-stop: see set_non_stop).
#pragma once
#include "arch/arch.hpp"
#include "base/result.hpp"
#include "process/branch_tracing.hpp"
#include "process/debug_points.hpp"
#include "process/fast_sites.hpp"
#include "process/held_fork_children.hpp"
#include "process/static_marker.hpp"
#include "process/stop_event.hpp"
#include "process/thread_registers.hpp"
#include "process/trap_sites.hpp"
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <sys/types.h>
#include <vector>

namespace tpagent::process {

struct LaunchSpec {
    std::vector<std::string> program; // PROG ARGS...
    std::vector<std::string> wrapper; // run through this, which must exec PROG
    bool disable_randomization = true;
    bool stdio_is_protocol = false; // keep the program off our stdin/stdout
    std::string preload;            // a library to add to LD_PRELOAD
    // gdb's `set/unset environment` (QEnvironment*): NAME -> value, nullopt = unset.
    std::map<std::string, std::optional<std::string>> environment;
};

// What one thread is asked to do by a resume request.
struct ThreadResume {
    pid_t tid = 0;
    bool step = false;
    int signal = 0; // host signal to deliver
    // Range stepping: steps on while the pc stays in [range_start, range_end) (empty: none).
    std::uint64_t range_start = 0, range_end = 0;
};

class Target {
  public:
    virtual ~Target() = default;

    virtual pid_t pid() const = 0;
    virtual bool was_attached() const = 0;
    virtual bool alive() const = 0;
    virtual bool running() const = 0;
    virtual const std::string& executable() const = 0;
    // The SDT markers of the executable and the libraries mapped now, by address.
    virtual std::vector<StaticMarker> static_markers() const { return {}; }

    virtual std::vector<pid_t> thread_ids() const = 0;
    virtual bool has_thread(pid_t tid) const = 0;
    virtual std::string thread_name(pid_t tid) const = 0;

    // Registers of a stopped thread (see ThreadRegisters).
    virtual ThreadRegisters& registers() = 0;

    // Memory as the program's own: everything tpagent patched in (breakpoint instructions,
    // fast-tracepoint jumps) is hidden from reads and kept by writes, which change what the
    // patches stand for (a write into a fast tracepoint's instructions rebuilds its pad).
    // Reads return how many bytes were readable from the start (0 bytes readable is an error).
    virtual Result<std::size_t> read_memory(std::uint64_t addr, std::span<std::uint8_t> out) = 0;
    virtual Status write_memory(std::uint64_t addr, std::span<const std::uint8_t> data) = 0;
    // The address of a thread's thread-local variable (gdb's qGetTLSAddr): `offset` into the
    // TLS block, for that thread, of the module whose link map is at `link_map`.
    virtual Result<std::uint64_t> thread_local_address(pid_t tid, std::uint64_t offset,
                                                       std::uint64_t link_map) = 0;
    // The shared libraries as gdb's qXfer:libraries-svr4 document; nullopt where the program
    // has no DT_DEBUG to find them by (gdb then reads them itself).
    virtual std::optional<std::string> library_list() { return std::nullopt; }
    // How many bytes from `addr` (at most `length`) lie in the read-only image of the
    // executable or a shared library as mapped now (code, read-only data: memory that does not
    // change while mapped, process/linux/read_only_image.hpp); 0 when `addr` is in none. A
    // trace frame shows that memory from the live program.
    virtual std::uint64_t read_only_image_extent(std::uint64_t /*addr*/, std::uint64_t /*length*/) {
        return 0;
    }

    // gdb's own breakpoints and watchpoints (see process/debug_points.hpp).
    virtual DebugPoints& debug_points() = 0;

    // Displaced-execution sites (trap tracepoints), see process/trap_sites.hpp.
    virtual TrapSites& trap_sites() = 0;

    // Fast tracepoints (jumps to pads that call the in-process collector).
    virtual FastSites& fast_sites() = 0;
    // Maps [addr, addr + length) of a shared mapping of the program into its page tables now
    // (all threads stopped), so that its threads do not fault page by page on their first
    // writes. A target that cannot leaves them to fault.
    virtual Status map_now(std::uint64_t /*addr*/, std::uint64_t /*length*/) {
        return make_error(ErrorCode::Unsupported, "not supported by this target");
    }
    // Loads a shared library into the program (its own dlopen; all threads stopped).
    virtual Status load_library(const std::string& /*path*/) {
        return make_error(ErrorCode::Unsupported, "not supported by this target");
    }
    // Places the in-process agent's self-mapped image (libtpagent-inproc-image.so) in the
    // program and starts it, without the program's loader or C library (all threads stopped).
    virtual Status place_agent_image(const std::string& /*path*/) {
        return make_error(ErrorCode::Unsupported, "not supported by this target");
    }

    // Starts the threads named in `actions`; the rest stay stopped. If a thread already has an
    // event waiting, nothing is resumed and that event is returned at once.
    virtual Result<std::optional<StopEvent>> resume(const std::vector<ThreadResume>& actions) = 0;
    // Called when SIGCHLD arrived: reaps wait statuses; returns an event once all threads stopped.
    virtual std::optional<StopEvent> poll() = 0;
    // Resumes every thread (gdb gone, a trace keeps running).
    virtual Status resume_all() = 0;

    // Non-stop mode (QNonStop:1): an event stops its own thread only and is handed out by
    // poll() while the others run on; resume() starts the threads named and never reports at
    // once (an event held for one of them comes from the next poll()). Leaving non-stop mode
    // stops every thread.
    virtual Status set_non_stop(bool on) {
        if (!on) return ok_status();
        return make_error(ErrorCode::Unsupported, "non-stop mode is not supported");
    }
    // Whether gdb is to see the thread as stopped: its stop was reported (or is being), or it
    // was never resumed.
    virtual bool thread_stopped(pid_t /*tid*/) const { return !running(); }
    // vCont;t (non-stop): each thread named that runs stops, and reports signal 0.
    virtual void stop_threads(const std::vector<pid_t>& /*tids*/) {}
    // Non-stop: stops the running threads for an operation that needs every thread stopped
    // (patching code, injected calls, detaching), and lets them go on after it; an event that
    // came meanwhile is reported instead. Calls nest.
    virtual Status pause_all() { return ok_status(); }
    virtual void unpause_all() {}
    // Stops every thread now, waiting for them (a gdb connects to a running program). The event
    // is a stop with signal 0 on the main thread, or the process's exit if it ended meanwhile.
    virtual std::optional<StopEvent> stop_all_now() = 0;
    // Ctrl-C from gdb: makes the process stop with SIGINT (when it runs next, if it has just
    // stopped).
    virtual void interrupt() = 0;
    // Signals (host numbers) delivered to the program without stopping (QPassSignals).
    virtual void set_pass_signals(std::set<int> signals) = 0;
    // QCatchSyscalls: stop at the entry and return of these system calls (every one if the
    // set is empty; none if nullopt).
    // NOLINTNEXTLINE(performance-unnecessary-value-param): a sink; an override keeps it
    virtual void set_catch_syscalls(std::optional<std::set<int>> /*syscalls*/) {}
    // The events gdb asked for in qSupported, beyond stops and exits.
    struct EventReports {
        // exec-events: an execve stops the program with an event naming the new program
        // (else it runs on into the new program, tpagent forgetting the old one's state).
        bool exec = false;
        // no-resumed: when the last thread gdb resumed exits and the others stay stopped
        // (scheduler-locking), an event says so (else gdb would wait for ever).
        bool no_resumed = false;
        // fork-events: a fork stops the parent with an event naming the child, which is
        // held stopped (its copy of the code cleaned) until gdb detaches it or follows it.
        bool fork = false;
        // vfork-events: as fork, the child held (sharing the parent's memory, so left as it
        // is); the parent's vfork-done is reported too.
        bool vfork = false;
        // QThreadEvents (non-stop only): a new thread reports its creation and waits for
        // gdb; a thread's exit is reported.
        bool threads = false;
    };
    virtual void set_event_reports(EventReports /*reports*/) {}
    // The children fork events reported, held stopped for gdb (none by default).
    virtual HeldForkChildren& fork_children() {
        static HeldForkChildren none;
        return none;
    }

    // Called when the process execs: the old image, and everything placed in it, is gone.
    virtual void set_exec_handler(std::function<void()> handler) = 0;

    // Branch trace (record btrace), per thread (process/branch_tracing.hpp). The default
    // records nothing: every call fails.
    virtual BranchTracing& branch_tracing() {
        static BranchTracing none;
        return none;
    }

    virtual Status kill() = 0;
    virtual Status detach() = 0;
};

} // namespace tpagent::process
