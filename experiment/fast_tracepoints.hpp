// A trace run's fast tracepoints, tpagent's side: the in-process agent's shared buffer
// configured at QTStart (records, variables, the buffer's chunks), the jumps installed, a fast
// tracepoint joining a run, the stop, hit counts and variables taken in from the shared buffer, and
// the pads taken out once the program is stopped.
#pragma once
#include "experiment/shared_buffer_reader.hpp"
#include "experiment/shared_buffer.hpp"
#include "process/static_marker.hpp"
#include "process/target.hpp"
#include "trace/trace_frame_buffer.hpp"
#include "trace/trace_state_variables.hpp"
#include "trace/tracepoint_table.hpp"
#include "arch/arch.hpp"
#include "base/result.hpp"
#include "protocol/trace_status.hpp"
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tpagent::experiment {

class FastTracepoints {
  public:
    // `markers`: the SDT markers static tracepoints probe this run, by address (a static
    // tracepoint runs from a pad too, and its `$_sdata` is collected in the program).
    FastTracepoints(const arch::Architecture& arch, trace::TracepointTable& table,
                    trace::TraceStateVariables& variables, trace::TraceFrameBuffer& buffer,
                    const std::map<std::uint64_t, process::StaticMarker>& markers)
        : arch_(arch), table_(table), variables_(variables), buffer_(buffer), markers_(markers) {}
    // Whether a tracepoint of this kind runs from a pad (fast and static ones), unless a trap
    // has to collect it (by_trap).
    static bool in_pad(const trace::Tracepoint& tp) {
        return tp.definition.kind == trace::TracepointKind::Fast ||
               tp.definition.kind == trace::TracepointKind::Static;
    }

    // The in-process agent placed into a program that does not have it (nullopt: never): the
    // self-mapped image where there is one, else the library through the program's dlopen.
    void set_agent_library(std::optional<std::string> path) { agent_library_ = std::move(path); }
    void set_agent_image(std::optional<std::string> path) { agent_image_ = std::move(path); }
    // Recording (TraceRecorder): the shared buffer is transit, its chunks reused only once
    // recorded.
    void set_recording(bool on) { recording_ = on; }
    // Pads made from now on write their tracepoint's frame themselves where they can (on by
    // default; inline_collection.hpp).
    void set_inline_collection(bool on) { inline_collection_ = on; }
    // Why the pad at an address calls the agent's collector for its only record (nothing
    // for a pad that writes its frames itself, or one several records share).
    std::optional<std::string> collected_by_agent(std::uint64_t addr) const {
        auto it = collected_by_.find(addr);
        return it == collected_by_.end() ? std::nullopt : std::optional(it->second);
    }
    // The jumps are in and the collectors collect.
    bool installed() const { return shared_ != nullptr && installed_; }
    // Hits this run whose frame found no room (no chunk to write to), or nested in a hit.
    std::uint64_t dropped_frames() const {
        return shared_ ? shared_->header().dropped_frames.load(std::memory_order_relaxed) : 0;
    }
    // What fast tracepoints cannot do (while-stepping, printf).
    static Status check(const trace::Tracepoint& tp);

    // Fast tracepoint addresses collected through a trap site this run instead of a jump, and
    // why: no jump can go there (FastSites::jump_span), a trap tracepoint or gdb breakpoint is
    // inside the jump's bytes, or it was added during the run and could not have one.
    void choose_trap_sites(process::Target& inferior);
    bool by_trap(std::uint64_t addr) const { return by_trap_.count(addr) != 0; }
    void collect_by_trap(std::uint64_t addr, std::string why) {
        by_trap_.emplace(addr, std::move(why));
    }
    const std::map<std::uint64_t, std::string>& trap_reasons() const { return by_trap_; }
    // Why a fast tracepoint at `addr` cannot have a jump now, or nullopt.
    std::optional<std::string> trap_reason(process::Target& inferior, std::uint64_t addr) const;

    // The in-process agent of `inferior`, for gdb's breakpoints evaluated in the program:
    // opened (placed or loaded first if need be) and its registers described if no run has.
    Result<std::shared_ptr<SharedBuffer>> agent_for_breakpoints(process::Target& inferior);

    // QTStart: writes every enabled fast tracepoint not collected by a trap into the shared buffer
    // (the agent loaded first if need be); nothing is installed yet.
    Status prepare(process::Target& inferior);
    // The jump at `addr` to its pad (nothing when no record is there).
    Status install(process::Target& inferior, std::uint64_t addr);
    // The same, gdb relocating the instruction: the first instruction move for gdb.
    Result<process::FastSites::InstructionMove> begin_install(process::Target& inferior,
                                                              std::uint64_t addr);
    // Every jump is in: the collectors collect from now on.
    void begin_run();
    // trace-follow-fork: children the program forks during a run keep the jumps, and their
    // collectors write into this trace (off by default: a forked child runs on untraced).
    void set_follow_forks(bool on) { follow_forks_ = on; }
    bool follow_forks() const { return follow_forks_; }
    // At the run's start: `inferior` follows its forks from now on, if asked and the agent
    // collects there.
    void start_following(process::Target& inferior);
    // InstallInTrace: a fast tracepoint defined during a run gets a record and a jump of its
    // own; an error leaves it to a trap site.
    Status add_during_run(process::Target& inferior, trace::Tracepoint& tp);
    // A QTEnable/QTDisable of a tracepoint the agent holds a record of: false when none.
    bool set_enabled(const trace::TracepointKey& key, bool enabled);

    // Hit counts and variables taken in from the shared buffer.
    void pull();
    // Why the agent stopped collecting (buffer full, pass count, error); nullopt while it
    // collects.
    std::optional<protocol::TraceStopReason> agent_stop_reason() const;
    // The trace stops: collectors return at once from now on; their frames stay where they
    // are, and the jumps go once the program is stopped.
    void stop(process::Target* inferior);
    // Jumps left in place by a stop while the program ran go now, if it is stopped.
    void remove_pending(process::Target* inferior);
    // The same, the program known to be stopped (QTStart).
    void remove_pending_now(process::Target& inferior);

    // QTinit: the records' tracepoints go.
    void forget_records() { records_.clear(); }
    // The program exec'd: its agent, pads and jumps went with the old image.
    void forget_image();
    // The frames of the last run with fast tracepoints go, and the buffer's pages back to the
    // program.
    void discard_frames();
    // Whether the agent in use is process `pid`'s, and letting it go (after discard_frames).
    bool agent_of(pid_t pid) const { return shared_ && shared_->pid() == pid; }
    // The agent in use (agent_of tells whose), or null.
    SharedBuffer* agent() const { return shared_.get(); }
    void close_agent() { shared_.reset(); }
    // "fast tracepoint N at 0xADDR" (all the numbers there, when several): errors name them.
    std::string site_name(std::uint64_t addr) const;

  private:
    Result<std::unique_ptr<SharedBuffer>> open_agent(process::Target& inferior) const;
    // shared_: the agent of `inferior`, opened if need be, its code told to run control.
    Status use_agent_of(process::Target& inferior);
    // Where the pads stage each register, in the shared buffer's header.
    Status describe_registers(process::Target& inferior);
    void pull_counters();
    // Links a written record after the others at its address (what the pad passes is the
    // first); true when it is the first there, whose jump is still to install.
    bool chain_record(inproc::TracepointRecord& rec);
    // How the pad at addr is built, from the records chained there: one that collects `$regs`
    // has the pad stage the whole core, and then no record there has the collector fill it in.
    arch::FastPadOptions pad_options(process::Target& inferior, std::uint64_t addr);

    const arch::Architecture& arch_;
    trace::TracepointTable& table_;
    trace::TraceStateVariables& variables_;
    trace::TraceFrameBuffer& buffer_;
    // The shared buffer, its record index -> tracepoint, the first record at each address
    // (what the pad passes), and pads still to take out.
    std::shared_ptr<SharedBuffer> shared_;
    std::optional<std::string> agent_library_;
    std::optional<std::string> agent_image_;
    bool recording_ = false;
    bool inline_collection_ = true;
    bool follow_forks_ = false;
    std::map<std::uint64_t, std::string> collected_by_; // collected_by_agent()
    struct Record {
        trace::Tracepoint* tp = nullptr; // a node of the table, stable until QTinit
        std::uint32_t index = 0;         // its TracepointRecord's
        SharedBuffer::HitTotals counted; // its hits and bytes counted into tp so far
    };
    std::vector<Record> records_;
    std::uint64_t config_used_ = 0; // bytes of the shared buffer's configuration taken
    // The buffer's frames in the last run with fast tracepoints (it may outlive shared_: exec).
    std::unique_ptr<SharedBufferReader> frames_;
    std::map<std::uint64_t, std::uint64_t> first_record_; // address -> shared buffer offset
    std::set<std::uint64_t> full_core_;   // addresses whose pads stage the whole core
    std::set<std::uint64_t> saved_state_; // addresses whose pads save FP/vector state
    bool installed_ = false;
    bool removal_pending_ = false;
    std::map<std::uint64_t, std::string> by_trap_; // address -> why
    const std::map<std::uint64_t, process::StaticMarker>& markers_;
    // The marker arguments of a static tracepoint's record (none for others).
    std::span<const arch::SdtArgument> marker_of(const trace::Tracepoint& tp) const;
};

} // namespace tpagent::experiment
