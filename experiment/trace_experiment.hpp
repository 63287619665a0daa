// The trace experiment: tracepoint table, trace state variables, frame buffer and run status.
// It belongs to the server, not to a gdb connection, so a trace keeps running after gdb leaves
// (disconnected tracing) and the next gdb finds it.
#pragma once
#include "process/target.hpp"
#include "experiment/fast_tracepoints.hpp"
#include "experiment/inproc_breakpoints.hpp"
#include "trace/trace_frame_buffer.hpp"
#include "trace/trace_state_variables.hpp"
#include "trace/tracepoint_codec.hpp"
#include "trace/tracepoint_table.hpp"
#include "arch/arch.hpp"
#include "base/result.hpp"
#include "protocol/requests.hpp"
#include "protocol/trace_status.hpp"
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tpagent::experiment {

using protocol::TraceStopReason;

// Why a trace stopped, as the experiment says it.
inline TraceStopReason trace_error(std::string text, std::uint64_t tracepoint) {
    return {TraceStopReason::Kind::Error, std::move(text), tracepoint};
}
inline TraceStopReason passcount_reached(std::uint64_t tracepoint) {
    return {TraceStopReason::Kind::PassCount, {}, tracepoint};
}

class TraceExperiment {
  public:
    explicit TraceExperiment(const arch::Architecture& arch);

    trace::TracepointTable& table() { return table_; }
    trace::TraceStateVariables& variables() { return variables_; }
    trace::TraceFrameBuffer& buffer() { return buffer_; }
    bool running() const { return running_; }
    // Runs started so far: a recorder sees a new one even between two of its polls.
    std::uint64_t runs() const { return runs_; }
    // Runs are recorded (--record): the buffer is transit, circular whatever gdb set, and a
    // run with fast tracepoints reuses only recorded chunks.
    void set_recording(bool on) {
        recording_ = on;
        fast_.set_recording(on);
    }
    // Recording: what moves the buffer's frames into the files at once, for a frame that
    // finds the buffer full.
    void set_make_room(std::function<void()> make_room) { make_room_ = std::move(make_room); }
    // Called after a trap tracepoint's hit was collected, the hitting thread still stopped
    // there (a snapshot's trigger): the tracepoint's number.
    void set_on_trap_hit(std::function<void(std::uint32_t)> on_hit) {
        on_trap_hit_ = std::move(on_hit);
    }
    std::uint64_t dropped_trap_frames() const { return dropped_trap_frames_; }

    // Packets. `inferior` may be null (no process): then nothing is installed.
    void init(); // QTinit
    // QTDP. A first packet, parsed or not, completes the definition gdb left unfinished.
    Status define(trace::TracepointPacket packet, process::Target* inferior);
    // QTDPsrc. It completes the definition gdb left unfinished, parsed or not.
    Status add_source(Result<trace::SourcePacket> packet, process::Target* inferior);
    // A fast tracepoint's jump covering `addr` gives way to a trap site (the tracepoint is
    // collected through it from then on), e.g. for gdb's breakpoint inside the jump; false
    // when no jump covers `addr`.
    Result<bool> trap_instead_of_jump(process::Target& inferior, std::uint64_t addr);
    // gdb's conditional breakpoints evaluated in the program (through the same agent).
    InprocBreakpoints& inproc_breakpoints() { return inproc_breakpoints_; }
    // `monitor set inline-collection`: pads made from now on (FastTracepoints).
    void set_inline_collection(bool on) { fast_.set_inline_collection(on); }
    // `monitor set trace-follow-fork` (and --trace-follow-fork): from the next run on, children
    // forked during a run are traced too (FastTracepoints::set_follow_forks).
    void set_follow_forks(bool on) { fast_.set_follow_forks(on); }
    bool follow_forks() const { return fast_.follow_forks(); }
    // InprocBreakpoints::carry, with this experiment told of the program's exec from then on
    // (which takes the agent and the breakpoint's code with the old image).
    Status carry_breakpoint(process::Target& inferior, std::uint64_t addr,
                            const process::BreakpointCode& code);
    // QTEnable / QTDisable.
    Status set_enabled(const trace::TracepointKey& key, bool enabled, process::Target* inferior);
    void set_notes(const protocol::TraceNotes& notes);      // QTNotes
    Status set_buffer(const trace::BufferSetting& setting); // QTBuffer:size|circular
    void set_disconnected_tracing(bool on) { disconnected_tracing_ = on; }
    bool disconnected_tracing() const { return disconnected_tracing_; }
    // The in-process agent loaded into a program that does not have it when a fast
    // tracepoint needs it (nullopt: never, --no-inject).
    void set_agent_library(std::optional<std::string> path) {
        fast_.set_agent_library(std::move(path));
    }
    // The same, as the self-mapped image (preferred: no loader, no lock of the program's).
    void set_agent_image(std::optional<std::string> path) {
        fast_.set_agent_image(std::move(path));
    }
    // QTStart. With `gdb_relocates`, gdb relocates fast tracepoints' displaced instructions:
    // start() then returns with the first of its requests pending (relocation_request()) and
    // the trace runs once relocated() has had the answer to the last one.
    Status start(process::Target* inferior, bool gdb_relocates = false);
    // The instruction gdb is to relocate next (qRelocInsn:FROM;TO); nullopt when none is.
    std::optional<process::FastSites::InstructionMove> relocation_request() const {
        return gdb_move_;
    }
    // How each enabled fast tracepoint is collected (after start): a line per tracepoint, by
    // number. `only_traps`: just those collected through a trap, with why.
    std::vector<std::string> fast_tracepoint_lines(process::Target* inferior,
                                                   bool only_traps) const;
    // gdb's answer: the bytes it wrote at TO, or nullopt when it could not. An error leaves
    // the trace not started and nothing installed.
    Status relocated(process::Target* inferior, std::optional<std::uint64_t> length);
    // A QTStart left waiting for gdb (gdb went away): everything installed so far goes.
    void abandon_relocation(process::Target* inferior);
    void stop(process::Target* inferior); // QTStop
    // The frames go, and the pages of the in-process buffer they were in go back to the
    // program (not during a run).
    void discard_frames();
    // tpagent lets process `pid` go (a detach, no run going on): its frames are discarded and
    // its in-process buffer given back.
    void let_go(pid_t pid);
    // gdb went away without disconnected tracing, or the process ended.
    void stop_for(TraceStopReason reason, process::Target* inferior);
    std::string status_reply() const; // qTStatus
    // The status without the recording's note (a recorded file gives its own).
    protocol::TraceStatus trace_status() const;

    // Fast tracepoints: takes in hit counts and variables and stops the trace if the
    // in-process agent stopped collecting (buffer full, pass count, error). Cheap; frames stay
    // where the program wrote them. `inferior`, when given and stopped, also lets pads left in
    // place by a stop during a run be removed.
    void poll(process::Target* inferior);
    bool fast_running() const { return running_ && fast_.installed(); }
    // The fast frames collected so far into the buffer's view, and nothing else (no stop for
    // the agent's reasons, no pads removed): safe inside a trap hit's handling.
    void pull_fast_frames() {
        if (fast_running()) fast_.pull();
    }
    std::uint64_t dropped_fast_frames() const { return fast_.dropped_frames(); }
    // What tstatus's notes say of the recording (--record), after gdb's own notes.
    void set_recording_note(std::string note) { recording_note_ = std::move(note); }
    const std::string& recording_note() const { return recording_note_; }
    // And what they say of the snapshots written, after that.
    void set_snapshot_note(std::string note) { snapshot_note_ = std::move(note); }

    // The inferior's site handlers: a thread reached tracepoint address `addr`.
    process::TrapSites::SiteHit on_hit(process::Target& inferior, pid_t tid, std::uint64_t addr);
    void on_step(process::Target& inferior, pid_t tid, std::uint64_t addr);
    // Binds the site handlers of a (new) inferior to this experiment.
    void attach_to(process::Target& inferior);

  private:
    Status install(process::Target& inferior, std::uint64_t addr);
    void complete_pending(process::Target* inferior); // keeps what gdb left unfinished
    Status on_defined(const trace::TracepointTable::DefineOutcome& outcome,
                      process::Target* inferior);
    // During a run: a trap site for `addr`, taking the place of a fast tracepoint's jump that
    // covers it (that tracepoint is then collected through the trap site too).
    Status install_during_run(process::Target& inferior, std::uint64_t addr);
    void uninstall_all(process::Target* inferior);
    bool any_enabled_at(std::uint64_t addr) const;
    // Runs one tracepoint's actions into a frame; false if the trace had to stop.
    bool collect(process::Target& inferior, pid_t tid, trace::Tracepoint& tp,
                 const std::vector<trace::ActionString>& actions, bool step);
    void stop_with(TraceStopReason reason, process::Target* inferior);
    // The last step of start(): the trace runs (and follows forks, if asked).
    void begin_run(process::Target& inferior, bool any_fast);
    // QTStart with gdb relocating: the next fast tracepoint's pad, or, with none left, the
    // trace runs.
    Status next_gdb_site(process::Target& inferior);
    // trace_collector.cpp: a static tracepoint's site (install) probes the SDT marker at its
    // address (an error when there is none) and raises the marker's semaphore for the run;
    // uninstall_all lowers them.
    Status probe_marker(process::Target& inferior, const trace::Tracepoint& tp);
    void lower_semaphores(process::Target* inferior);
    // `$_sdata` for a hit at the marker probed at `addr`: its arguments as text.
    std::vector<std::uint8_t>
    static_data(std::uint64_t addr,
                const std::function<bool(int regnum, std::uint64_t* value)>& read_register,
                process::Target& inferior) const;

    const arch::Architecture& arch_;
    trace::TracepointTable table_;
    trace::TraceStateVariables variables_;
    trace::TraceFrameBuffer buffer_;
    trace::FrameBuilder builder_;
    bool running_ = false;
    std::uint64_t runs_ = 0;
    bool recording_ = false;
    std::string recording_note_;
    std::string snapshot_note_;
    std::function<void()> make_room_;
    std::function<void(std::uint32_t)> on_trap_hit_;
    std::uint64_t dropped_trap_frames_ = 0; // this run's, recording
    bool ever_started_ = false;
    bool disconnected_tracing_ = false;
    TraceStopReason stop_reason_;
    std::string user_, notes_, stop_notes_;
    std::int64_t start_time_ = 0, stop_time_ = 0; // microseconds since the epoch
    // Thread -> the tracepoint it steps for (while-stepping) and the steps still to collect.
    struct Stepping {
        trace::TracepointKey key;
        std::uint64_t left = 0;
    };
    std::map<pid_t, Stepping> stepping_;
    // A pass count reached by a hit with while-stepping: the trace stops once its steps are
    // collected (as gdbserver), no other hit collecting meanwhile.
    std::optional<TraceStopReason> stop_after_steps_;
    // Fast tracepoints: the in-process agent's records, jumps and frames.
    FastTracepoints fast_;
    InprocBreakpoints inproc_breakpoints_{fast_};
    // QTStart with gdb relocating: fast tracepoint addresses still to install (the first is
    // being relocated), and the request gdb has.
    std::vector<std::uint64_t> gdb_sites_;
    std::optional<process::FastSites::InstructionMove> gdb_move_;
    // Static tracepoints: address -> the marker probed there this run; the semaphores raised
    // (one entry per raise).
    std::map<std::uint64_t, process::StaticMarker> probed_markers_;
    std::vector<std::uint64_t> raised_semaphores_;
};

} // namespace tpagent::experiment
