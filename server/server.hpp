// The process as a whole: options, the event loop, the listener, the current gdb session and the
// inferior. Decides what happens when gdb goes away and when tpagent exits.
#pragma once
#include "base/asio.hpp"
#include "process/linux/child_events.hpp"
#include "process/target.hpp"
#include "server/options.hpp"
#include "server/session.hpp"
#include "experiment/trace_experiment.hpp"
#include "experiment/trace_recorder.hpp"
#include "experiment/trace_snapshots.hpp"
#include "server/transport.hpp"
#include "server/record_stream.hpp"
#include <memory>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace tpagent::server {

// What gdb needs to place a program's symbols, taken when the program goes on without gdb: the
// process may be gone when the next gdb asks.
struct ProgramImage {
    pid_t pid = 0;
    std::string executable; // /proc/PID/exe
    std::string auxv;      // /proc/PID/auxv, less the vDSO's entry (the vDSO goes with the process)
    std::string libraries; // the qXfer:libraries-svr4 document
    // Its executable mappings of files: their bytes are the files' (gdb reads code to analyse
    // prologues, and places tracepoints by it).
    struct CodeMapping {
        std::uint64_t start = 0, end = 0, offset = 0;
        ino_t inode = 0;
        std::string path;
    };
    std::vector<CodeMapping> code;
};
// Reads the code of an image's mappings from their files, as far as one mapping goes; 0 bytes
// outside them, or when the file is no longer the one mapped.
std::size_t read_code(const ProgramImage& image, std::uint64_t addr, std::span<std::uint8_t> out);

// A program that ended while it ran on without gdb (disconnected tracing). Its trace stays for
// the next gdb, which is shown a stopped thread of it to select trace frames on (outside them:
// no registers but a zero pc, no memory but its code); resuming it reports how it ended.
struct ExitedProgram {
    process::StopEvent end; // Exited or Killed; end.pid is the process it was
    bool was_attached = false;
    std::optional<ProgramImage> image;
};

// QEnvironmentHexEncoded / QEnvironmentUnset / QEnvironmentReset: changes to tpagent's own
// environment for the programs started from now on.
class EnvironmentChanges {
  public:
    void set(const std::string& name, std::string value) { changes_[name] = std::move(value); }
    void unset(const std::string& name) { changes_[name] = std::nullopt; }
    void reset() { changes_.clear(); }
    // NAME -> value, nullopt = unset.
    const std::map<std::string, std::optional<std::string>>& changes() const { return changes_; }

  private:
    std::map<std::string, std::optional<std::string>> changes_;
};

// How programs are started and attached to: Linux processes over ptrace, or fakes in tests.
struct TargetFactory {
    std::function<Result<std::unique_ptr<process::Target>>(const process::LaunchSpec&)> launch;
    std::function<Result<std::unique_ptr<process::Target>>(pid_t)> attach;
};
TargetFactory linux_targets();

class Server {
  public:
    Server(boost::asio::io_context& io, ServerOptions options,
           TargetFactory targets = linux_targets());
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;
    // Starts the program or attaches, binds, and runs the event loop. Returns the exit status.
    int run();

    const ServerOptions& options() const { return options_; }
    process::Target* inferior() { return inferior_.get(); }
    experiment::TraceExperiment& experiment() { return experiment_; }
    boost::asio::io_context& io() { return io_; }

    Status start_program(const std::vector<std::string>& program);
    // gdb's `run` in another inferior (vRun, multiprocess): a new process beside those gdb
    // has, served unless a trace runs in the served one (held then). Its pid.
    Result<pid_t> start_beside(const std::vector<std::string>& program);
    Status attach_to(pid_t pid);
    // gdb's `attach` in another inferior (vAttach, multiprocess): as start_beside.
    Status attach_beside(pid_t pid);
    // A forked child, traced and stopped, becomes the program served.
    void adopt(std::unique_ptr<process::Target> child);
    // The served program goes (killed, detached, or gone by itself); a held process, if any,
    // is served in its place.
    Status kill_inferior();
    Status detach_inferior();
    void forget_inferior();
    // Every process gdb knows, served or held, killed (a new program starts).
    void kill_all();

    // Processes gdb holds stopped while another one is served: a vfork parent whose child
    // gdb follows, a forked child gdb kept (detach-on-fork off). Only the served one runs
    // (gdb's schedule-multiple off): gdb resuming a held one serves it instead.
    process::Target* held_process(pid_t pid);
    const std::vector<std::unique_ptr<process::Target>>& held_processes() const { return held_; }
    // A child the served program forked, held for gdb, as a process of its own (still held);
    // nullptr if `pid` is no such child.
    process::Target* hold_fork_child(pid_t pid);
    // gdb resumes the held process `pid`: it is served from now on, the served one held; while
    // a trace runs, the trace's program stays served (the held one runs beside it).
    Status serve(pid_t pid);
    // Every live process gdb knows: the served one first, then the held ones.
    std::vector<process::Target*> processes();
    // The live process `pid` among them; nullptr if none is.
    process::Target* find_process(pid_t pid);
    // All-stop: an event of `reporting` goes to gdb, so every other process stops; an event
    // one of them had meanwhile is kept for gdb's next resume (stashed_event).
    void stop_others(const process::Target* reporting);
    // gdb's Ctrl-C: the served program is interrupted, or, when it is stopped and a held one
    // runs (a trace keeps it served), that one.
    void interrupt();
    // Whether a process other than `except` runs.
    bool any_running(const process::Target* except);
    // Whether process `pid` ended and gdb has not heard of it yet.
    bool ended_unreported(pid_t pid) const {
        auto it = stashed_.find(pid);
        return it != stashed_.end() && it->second.kind != process::StopEvent::Kind::Signal;
    }
    // The processes with such an event (stop_others), and one of them taken to be reported.
    std::vector<pid_t> stashed_processes() const;
    // An event of process `pid` that gdb has not heard of yet, taken to be reported now.
    std::optional<process::StopEvent> take_stashed_event(pid_t pid);
    bool detach_held(pid_t pid);
    bool kill_held(pid_t pid);
    // The program that ended while gdb was away, until a gdb resumes, kills or detaches it, or
    // starts another.
    const ExitedProgram* exited_program() const { return exited_ ? &*exited_ : nullptr; }
    void forget_exited_program() { exited_.reset(); }
    void request_exit() { exit_requested_ = true; }
    // How gdb's connection ended: closed by gdb (its `disconnect`, its exit or death), or lost
    // (reset, or found dead by keepalive probes: a link down, a host gone).
    enum class ConnectionEnd { Closed, Lost };
    void session_closed(Session& s, ConnectionEnd end = ConnectionEnd::Closed);
    // Fast tracepoints fill the buffer with no event tpagent would see: while a fast trace
    // runs, a timer looks every few ms (armed here after a packet started one; it stops by
    // itself when the trace does).
    void watch_fast_trace();
    // --record: a run begun since the last look gets its files, and a timer moves its frames
    // into them; a run that ended has its last frames recorded and its file ended
    // (server/recording.cpp). Called after each packet and by the timer.
    void watch_recording();
    // `monitor record [DIR [size N] [files N] [min-free N] | off]`: the answer, or why not.
    Result<std::string> record_command(std::string_view args);
    // Snapshots (server/snapshots.cpp): the buffer's frames into a new file now, `why` naming
    // the trigger in the file's note; a trigger tracepoint's new hits are looked for by a
    // timer while a run goes on (armed here after each packet).
    Result<experiment::Snapshot> take_snapshot(std::string_view why);
    void watch_snapshot_trigger();
    // `monitor snapshot [dir DIR [files N] | trigger N [count K] | trigger off | show]`.
    Result<std::string> snapshot_command(std::string_view args);
    // gdb leaves while a trace runs with disconnected tracing on: the trace goes on, and
    // tpagent waits for the next gdb. The program runs on with `resume` (`detach`, a lost
    // connection, or gdb left threads running), else stays stopped (gdb closed the connection
    // on a stopped program: gdbserver's way).
    bool keep_tracing_without_gdb(bool resume);
    // gdb detaches leaving breakpoints whose commands persist (`set disconnected-dprintf`,
    // RSP `Z0` cmds): the program runs on with them, as with a disconnected trace.
    bool keep_commands_without_gdb();
    void set_disable_randomization(bool on) { options_.disable_randomization = on; }
    // The program (and arguments) started last, which R starts again.
    const std::vector<std::string>& last_program() const { return last_program_; }

    // What gdb asks of every program, kept for the programs started (or adopted) from now on;
    // the handlers that set them give them to the served program themselves.
    // QPassSignals (host numbers).
    void set_pass_signals(std::set<int> signals) { pass_signals_ = std::move(signals); }
    // QCatchSyscalls (nullopt: none caught; an empty set: every call).
    void set_catch_syscalls(std::optional<std::set<int>> syscalls) {
        catch_syscalls_ = std::move(syscalls);
    }
    // What gdb's qSupported (and QThreadEvents) asked to hear of.
    const process::Target::EventReports& event_reports() const { return event_reports_; }
    void set_event_reports(const process::Target::EventReports& r) { event_reports_ = r; }
    // QNonStop.
    bool non_stop() const { return non_stop_; }
    void set_non_stop(bool on) { non_stop_ = on; }
    // Gives the program what gdb asked of every program (the four above).
    void apply_gdb_settings(process::Target& program);
    // Agent-style dprintfs that run in the program (server/agent_lines.cpp): their lines are
    // printed, as those tpagent runs itself are, by a timer while the program may print more
    // (armed here after a breakpoint is carried into it), and before each event and each line
    // tpagent prints itself, so that they come in order.
    void watch_agent_lines();

    // `monitor set btrace-method`: how the software branch recorder runs a recorded thread.
    process::BranchStepMethod branch_step_method() const { return branch_step_method_; }
    void set_branch_step_method(process::BranchStepMethod m) { branch_step_method_ = m; }
    // `monitor set libthread-db-search-path`: tpagent reads thread-local storage without
    // libthread_db, but a path where none can be found turns qGetTLSAddr off, as in gdbserver.
    bool thread_db_reachable() const { return thread_db_reachable_; }
    void set_thread_db_reachable(bool reachable) { thread_db_reachable_ = reachable; }
    EnvironmentChanges& environment() { return environment_; }

    // Hands out what the program has to report (SIGCHLD came, or a packet let events out).
    void pump_events();
    bool stdio_transport() const;

  private:
    // What can fail before any program exists: COMM, --save-dir, the listener.
    Status prepare();
    Status start_first_program();
    void accept_next();
    void wait_for_children();
    void on_inferior_event(const process::StopEvent& ev);
    // The served program ended: a trace running in it stops, saying why.
    void end_trace_with(const process::StopEvent& end);
    // An event of a held process that gdb resumed (schedule-multiple, non-stop).
    void on_held_event(pid_t pid, const process::StopEvent& ev);
    // Events of processes other than the one reported (all-stop), one per process, oldest
    // first: each goes to gdb at a resume that includes its process.
    std::map<pid_t, process::StopEvent> stashed_;
    bool stopping_others_ = false;
    // Keeps `ev` for gdb's next resume: a process's first event, or its end, which says more.
    void stash(const process::StopEvent& ev);
    // All-stop over several processes, an event of `from` (nullptr: a process gone): true if
    // it does not go to gdb now (no thread resumed in it while another process runs; kept,
    // gdb having been told of another event); else the other processes stop first.
    bool held_back(const process::Target* from, const process::StopEvent& ev);
    void deliver_signal(const process::StopEvent& ev);
    bool may_reopen() const;
    void remember_image();
    // The program runs on with no gdb (every thread resumed): false if it cannot.
    bool run_without_gdb();
    void keep_exited_program(const process::StopEvent& end, bool was_attached, bool traced);
    void save_trace_automatically(pid_t pid);
    void shutdown();

    boost::asio::io_context& io_;
    ServerOptions options_;
    TargetFactory targets_;
    std::unique_ptr<Listener> listener_;
    std::unique_ptr<Session> session_;
    std::unique_ptr<process::Target> inferior_;
    std::vector<std::unique_ptr<process::Target>> held_;
    // The served program is gone: the first held process takes its place.
    void serve_next_held();
    // The process just started or attached is served, `served` (the one served before it)
    // held; while a trace runs in `served`, the other way round.
    void keep_beside(std::unique_ptr<process::Target> served);
    std::vector<std::unique_ptr<process::Target>>::iterator find_held(pid_t pid);
    void detach_all_held();
    std::vector<std::string> last_program_;
    process::ChildEvents child_events_;
    boost::asio::steady_timer trace_poll_timer_;
    bool trace_poll_armed_ = false;
    boost::asio::steady_timer record_timer_;
    bool record_poll_armed_ = false;
    boost::asio::steady_timer agent_lines_timer_;
    bool agent_lines_armed_ = false;
    // The lines the program printed so far; whether it may print more.
    bool take_agent_lines();
    // Where breakpoint commands (agent-style dprintf) print: where gdbserver's do.
    void write_command_output(std::string_view text) const;
    std::optional<experiment::TraceRecorder> recorder_;
    std::uint64_t recorded_run_ = 0; // the run recorder_ records (TraceExperiment::runs)
    // --record-host: the stream the recorder writes into, for the whole of tpagent's life.
    std::shared_ptr<RecordStream> record_stream_;
    bool recording_on() const;
    static constexpr std::chrono::seconds kStreamWaitTime{10};
    void stop_after_stream(std::chrono::steady_clock::time_point progress_at, std::uint64_t kept);
    std::string recording_place() const; // the folder, or the stream and its host
    void end_recording();
    void seal_cut_recording();
    void note_recording();
    // A tracepoint whose hits write snapshots, `count` of them a run at most.
    struct SnapshotTrigger {
        std::uint64_t tracepoint = 0;
        std::uint64_t count = 1;
        std::uint64_t run = 0;     // the run the two below are of (TraceExperiment::runs)
        std::uint64_t hits = 0;    // its hits when last looked at
        std::uint64_t written = 0; // snapshots it wrote in that run
    };
    std::optional<experiment::TraceSnapshots> snapshots_;
    std::optional<SnapshotTrigger> snapshot_trigger_;
    boost::asio::steady_timer snapshot_timer_;
    bool snapshot_poll_armed_ = false;
    boost::asio::signal_set snapshot_signal_; // SIGUSR1: a snapshot now
    void wait_for_snapshot_signal();
    void check_snapshot_trigger();
    void note_snapshots();
    std::string snapshot_settings() const;
    experiment::TraceExperiment experiment_;
    bool exit_requested_ = false;
    std::optional<process::StopEvent> unreported_; // what happened while no gdb was connected
    bool running_without_gdb_ = false;             // the program runs on for a disconnected trace
    std::optional<ProgramImage> image_;            // of that program
    std::optional<ExitedProgram> exited_;
    bool exited_shown_ = false; // a gdb has connected since that program ended
    int exit_status_ = 0;
    std::set<int> pass_signals_;
    std::optional<std::set<int>> catch_syscalls_;
    process::Target::EventReports event_reports_;
    bool non_stop_ = false;
    process::BranchStepMethod branch_step_method_ = process::BranchStepMethod::BlockEnds;
    bool thread_db_reachable_ = true;
    EnvironmentChanges environment_;
};

} // namespace tpagent::server
