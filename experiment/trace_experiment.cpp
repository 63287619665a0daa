#include "experiment/trace_experiment.hpp"
#include "trace/tracepoint_codec.hpp"
#include "protocol/hex.hpp"
#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

namespace tpagent::experiment {

using namespace protocol;

namespace {
std::int64_t now_us() {
    using namespace std::chrono;
    return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}
// $trace_timestamp_ns: monotonic nanoseconds, so collections can be timed finely.
std::int64_t monotonic_ns() {
    using namespace std::chrono;
    return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
}
} // namespace

TraceExperiment::TraceExperiment(const arch::Architecture& arch)
    : arch_(arch), table_(static_cast<unsigned>(arch.registers().size())),
      variables_(now_us, monotonic_ns), buffer_(arch.g_size()), builder_(buffer_.make_builder()),
      fast_(arch, table_, variables_, buffer_, probed_markers_) {}

void TraceExperiment::attach_to(process::Target& inferior) {
    inferior.trap_sites().set_handlers(
        [this, &inferior](pid_t tid, std::uint64_t addr) { return on_hit(inferior, tid, addr); },
        [this, &inferior](pid_t tid, std::uint64_t addr) { on_step(inferior, tid, addr); });
    // The in-process agent of the old image, its pads and jumps went with it: a new one
    // (the preload survives exec) is looked for at the next tstart.
    inferior.set_exec_handler([this] {
        fast_.forget_image();
        inproc_breakpoints_.forget_image();
        // The markers and semaphores were the old image's: nothing to lower in the new one.
        raised_semaphores_.clear();
        probed_markers_.clear();
    });
}

Status TraceExperiment::carry_breakpoint(process::Target& inferior, std::uint64_t addr,
                                         const process::BreakpointCode& code) {
    attach_to(inferior);
    return inproc_breakpoints_.carry(inferior, addr, code);
}

void TraceExperiment::init() {
    // gdb sends QTinit before a new tstart (a run going on was stopped first). Unlike
    // gdbserver's, it keeps the last run's frames until the next run starts (a tstart that
    // fails leaves them to look at); with none to keep, the in-process buffer's pages go back
    // to the program now.
    fast_.forget_records();
    table_.clear();
    variables_.clear();
    if (buffer_.frame_count() == 0) discard_frames();
}

void TraceExperiment::discard_frames() {
    if (running_) return;
    buffer_.clear();
    fast_.discard_frames();
}

void TraceExperiment::let_go(pid_t pid) {
    if (running_ || !fast_.agent_of(pid)) return;
    discard_frames();
    fast_.close_agent();
}

bool TraceExperiment::any_enabled_at(std::uint64_t addr) const {
    for (const auto& [key, tp] : table_.all())
        if (key.address == addr && tp.definition.enabled) return true;
    return false;
}

Status TraceExperiment::install(process::Target& inferior, std::uint64_t addr) {
    // The site of an enabled static tracepoint probes the marker there (at tstart, when one
    // is added or enabled during a run).
    for (const auto& [key, tp] : table_.all())
        if (key.address == addr && tp.definition.enabled &&
            tp.definition.kind == trace::TracepointKind::Static)
            if (auto probed = probe_marker(inferior, tp); !probed) return probed;
    auto s = inferior.trap_sites().add(addr);
    if (!s)
        return make_error(s.error().code,
                          fmt::format("tracepoint at 0x{:x}: {}", addr, s.error().text));
    return s;
}

void TraceExperiment::uninstall_all(process::Target* inferior) {
    if (inferior && inferior->alive()) {
        inferior->fork_children().stop_following(); // (their code from the jumps known now)
        inferior->trap_sites().remove_all();
        if (!inferior->running()) inferior->fast_sites().remove_all();
    }
    lower_semaphores(inferior);
}

Status TraceExperiment::define(trace::TracepointPacket packet, process::Target* inferior) {
    // A new tracepoint's first packet: the one gdb left unfinished before it is complete.
    if (std::holds_alternative<Result<trace::TracepointHeader>>(packet)) complete_pending(inferior);
    auto outcome = table_.define(std::move(packet));
    if (!outcome) return outcome.error();
    return on_defined(*outcome, inferior);
}

void TraceExperiment::complete_pending(process::Target* inferior) {
    // Nobody waits for a reply about it any more: a failure is only logged.
    auto done = table_.complete_pending();
    Status s = !done ? Status(done.error()) : *done ? on_defined(**done, inferior) : ok_status();
    if (!s) spdlog::warn("unfinished tracepoint definition: {}", s.error().text);
}

Status TraceExperiment::add_source(Result<trace::SourcePacket> packet, process::Target* inferior) {
    complete_pending(inferior);
    if (!packet) return packet.error();
    table_.add_source(std::move(*packet));
    return ok_status();
}

Status TraceExperiment::on_defined(const trace::TracepointTable::DefineOutcome& outcome,
                                   process::Target* inferior) {
    // InstallInTrace: a tracepoint completed during a run goes in at once.
    using D = trace::TracepointTable::Defined;
    if (running_ && inferior && (outcome.what == D::Added || outcome.what == D::Replaced)) {
        auto* tp = table_.find(outcome.key);
        const std::uint64_t addr = outcome.key.address;
        // A fast tracepoint joining the run gets a jump of its own, or (the run has no
        // in-process agent, a trap tracepoint is in the way, a replaced definition) a trap
        // site (where a jump is already, that one gives way to the trap site).
        if (tp && FastTracepoints::in_pad(*tp)) {
            std::string why = "its definition replaced one during the run";
            if (tp->definition.kind == trace::TracepointKind::Static && tp->definition.enabled)
                if (auto p = probe_marker(*inferior, *tp); !p) return p;
            if (outcome.what == D::Added && tp->definition.enabled) {
                auto s = fast_.add_during_run(*inferior, *tp);
                if (s) return s;
                spdlog::debug("fast tracepoint {} at 0x{:x}, defined during the run: {}; "
                              "collected through a trap",
                              outcome.key.number, addr, s.error().text);
                why = "defined during the run: " + s.error().text;
            }
            fast_.collect_by_trap(addr, std::move(why));
        }
        if (any_enabled_at(addr)) return install_during_run(*inferior, addr);
    }
    return ok_status();
}

Status TraceExperiment::install_during_run(process::Target& inferior, std::uint64_t addr) {
    auto s = install(inferior, addr);
    if (s || !inferior.alive()) return s;
    auto moved = trap_instead_of_jump(inferior, addr);
    if (!moved || !*moved) return moved ? s : moved.error();
    return install(inferior, addr); // a no-op where the jump was at addr itself
}

Result<bool> TraceExperiment::trap_instead_of_jump(process::Target& inferior, std::uint64_t addr) {
    // A fast tracepoint's jump covers the address: it gives way to a trap site at its own
    // address, which collects it from now on.
    const auto covering = inferior.fast_sites().covering(addr);
    if (!covering) return false;
    const std::uint64_t fast = covering->site;
    spdlog::debug("fast tracepoint at 0x{:x}: collected through a trap from now on", fast);
    inferior.fast_sites().remove(fast);
    fast_.collect_by_trap(fast, fmt::format("a tracepoint defined during the run at 0x{:x} is "
                                            "inside its jump",
                                            addr));
    for (const auto& [other, otp] : table_.all())
        if (other.address == fast) table_.unmark_in_program(other);
    if (auto t = install(inferior, fast); !t) return t.error();
    return true;
}

Status TraceExperiment::set_enabled(const trace::TracepointKey& key, bool enabled,
                                    process::Target* inferior) {
    if (auto s = table_.set_enabled(key, enabled); !s) return s;
    if (!running_ || !inferior || !inferior->alive()) return ok_status();
    // A fast tracepoint stays installed; its record says whether it collects.
    if (fast_.set_enabled(key, enabled)) return ok_status();
    if (any_enabled_at(key.address)) return install(*inferior, key.address);
    inferior->trap_sites().remove(key.address);
    return ok_status();
}

void TraceExperiment::set_notes(const protocol::TraceNotes& notes) {
    if (notes.user) user_ = *notes.user;
    if (notes.notes) notes_ = *notes.notes;
    if (notes.tstop) {
        stop_notes_ = *notes.tstop;
        // gdb sends `tstop NOTE`'s note after QTStop: it belongs to that stop too.
        if (!running_ && stop_reason_.kind == TraceStopReason::Kind::Stop)
            stop_reason_.text = *notes.tstop;
    }
}

Status TraceExperiment::set_buffer(const trace::BufferSetting& setting) {
    if (running_) return make_error(ErrorCode::NotAllowed, "the trace is running");
    if (const auto* size = std::get_if<trace::BufferSizeSetting>(&setting))
        return buffer_.set_size(size->size);
    buffer_.set_circular(std::get<trace::BufferCircularSetting>(setting).circular);
    return ok_status();
}

Status TraceExperiment::start(process::Target* inferior, bool gdb_relocates) {
    abandon_relocation(inferior);
    if (!inferior || !inferior->alive())
        return make_error(ErrorCode::NoProcess, "no process to trace");
    complete_pending(inferior);
    if (recording_) buffer_.set_circular(true);
    buffer_.set_transit(recording_);
    dropped_trap_frames_ = 0;
    buffer_.clear();
    table_.reset_counters();
    variables_.reset_values();
    stepping_.clear();
    stop_after_steps_.reset();
    attach_to(*inferior);
    fast_.remove_pending_now(*inferior);
    table_.set_running(false); // forgets a failed start's fast tracepoints in the program
    fast_.choose_trap_sites(*inferior);
    bool any_fast = false, only_static = true;
    for (const auto& [key, tp] : table_.all()) {
        if (!tp.definition.enabled || !FastTracepoints::in_pad(tp)) continue;
        const bool is_fast = tp.definition.kind == trace::TracepointKind::Fast;
        if (is_fast)
            if (auto s = FastTracepoints::check(tp); !s) return s;
        if (fast_.by_trap(key.address)) {
            spdlog::debug("tracepoint {} at 0x{:x}: collected through a trap: {}", key.number,
                          key.address, fast_.trap_reasons().at(key.address));
            continue;
        }
        any_fast = true;
        only_static = only_static && !is_fast;
        // A static tracepoint's record holds its marker's arguments: probed first.
        if (!is_fast)
            if (auto p = probe_marker(*inferior, tp); !p) return p;
    }
    if (any_fast) {
        auto s = fast_.prepare(*inferior);
        if (!s && !only_static) return s;
        if (!s) {
            // Static tracepoints alone do not need the in-process agent: traps collect them.
            for (const auto& [key, tp] : table_.all())
                if (tp.definition.enabled && FastTracepoints::in_pad(tp) &&
                    !fast_.by_trap(key.address))
                    fast_.collect_by_trap(key.address, s.error().text);
            any_fast = false;
        }
    }
    if (!any_fast) discard_frames(); // (a trap-only run: an earlier fast run's buffer goes)
    for (const auto& [key, tp] : table_.all()) {
        if (!tp.definition.enabled) continue;
        const bool fast = FastTracepoints::in_pad(tp) && !fast_.by_trap(key.address);
        if (fast && gdb_relocates) { // after the others, one exchange with gdb at a time
            if (std::find(gdb_sites_.begin(), gdb_sites_.end(), key.address) == gdb_sites_.end())
                gdb_sites_.push_back(key.address);
            continue;
        }
        auto s = fast ? fast_.install(*inferior, key.address) : install(*inferior, key.address);
        if (!s) {
            uninstall_all(inferior);
            return s;
        }
    }
    if (!gdb_sites_.empty()) return next_gdb_site(*inferior);
    begin_run(*inferior, any_fast);
    return ok_status();
}

void TraceExperiment::begin_run(process::Target& inferior, bool any_fast) {
    if (any_fast) {
        fast_.begin_run();
        fast_.start_following(inferior);
    }
    table_.set_running(true);
    running_ = true;
    ever_started_ = true;
    ++runs_;
    stop_reason_ = {};
    start_time_ = now_us();
    stop_time_ = 0;
}

// QTStart with gdb relocating: the next site's pad, or, with none left, the trace runs.
Status TraceExperiment::next_gdb_site(process::Target& inferior) {
    gdb_move_.reset();
    if (gdb_sites_.empty()) {
        begin_run(inferior, true);
        return ok_status();
    }
    auto move = fast_.begin_install(inferior, gdb_sites_.front());
    if (!move) {
        gdb_sites_.clear();
        uninstall_all(&inferior);
        return move.error();
    }
    gdb_move_ = *move;
    return ok_status();
}

Status TraceExperiment::relocated(process::Target* inferior, std::optional<std::uint64_t> length) {
    if (!gdb_move_) return make_error(ErrorCode::NotAllowed, "no instruction relocation pending");
    const std::uint64_t addr = gdb_sites_.front();
    const std::uint64_t from = gdb_move_->from;
    auto fail = [&](const Error& e) -> Status {
        abandon_relocation(inferior);
        return make_error(e.code, fmt::format("{}: {}", fast_.site_name(addr), e.text));
    };
    if (!inferior || !inferior->alive())
        return fail(make_error(ErrorCode::NoProcess, "the process is gone"));
    if (!length)
        return fail(make_error(ErrorCode::Unsupported,
                               fmt::format("gdb could not relocate the instruction at 0x{:x} "
                                           "(qRelocInsn answered with an error)",
                                           from)));
    auto next = inferior->fast_sites().moved(*length);
    if (!next) return fail(next.error());
    if (*next) {
        gdb_move_ = **next;
        return ok_status();
    }
    gdb_sites_.erase(gdb_sites_.begin());
    return next_gdb_site(*inferior);
}

void TraceExperiment::abandon_relocation(process::Target* inferior) {
    if (!gdb_move_ && gdb_sites_.empty()) return;
    gdb_move_.reset();
    gdb_sites_.clear();
    if (inferior) inferior->fast_sites().abandon();
    uninstall_all(inferior);
}

void TraceExperiment::poll(process::Target* inferior) {
    fast_.remove_pending(inferior);
    if (!fast_running()) return;
    fast_.pull();
    if (auto why = fast_.agent_stop_reason()) stop_with(std::move(*why), inferior);
}

void TraceExperiment::stop_with(TraceStopReason reason, process::Target* inferior) {
    if (!running_) return;
    fast_.stop(inferior); // first: its last frames go in while the trace still runs
    uninstall_all(inferior);
    running_ = false;
    table_.set_running(false);
    stop_reason_ = std::move(reason);
    stop_time_ = now_us();
    stepping_.clear();
    stop_after_steps_.reset();
    spdlog::debug("trace stopped: {}", protocol::encode_stop_reason(stop_reason_));
}

void TraceExperiment::stop(process::Target* inferior) {
    stop_with({TraceStopReason::Kind::Stop, stop_notes_, 0}, inferior);
}

void TraceExperiment::stop_for(TraceStopReason reason, process::Target* inferior) {
    stop_with(std::move(reason), inferior);
}

protocol::TraceStatus TraceExperiment::trace_status() const {
    protocol::TraceStatus s;
    s.running = running_;
    s.reason = stop_reason_;
    s.frames = buffer_.frame_count();
    s.created = buffer_.frames_created();
    s.free = buffer_.bytes_free();
    s.size = buffer_.size();
    s.circular = buffer_.circular();
    s.disconnected = disconnected_tracing_;
    s.start_time = start_time_;
    s.stop_time = stop_time_;
    s.user = user_;
    s.notes = notes_;
    return s;
}

std::string TraceExperiment::status_reply() const {
    protocol::TraceStatus s = trace_status();
    for (const std::string* note : {&recording_note_, &snapshot_note_})
        if (!note->empty()) s.notes += (s.notes.empty() ? "" : "; ") + *note;
    return protocol::encode_trace_status(s);
}

std::vector<std::string> TraceExperiment::fast_tracepoint_lines(process::Target* inferior,
                                                                bool only_traps) const {
    std::vector<std::string> lines;
    for (const auto& [key, tp] : table_.all()) {
        if (!tp.definition.enabled || !FastTracepoints::in_pad(tp)) continue;
        const char* kind = tp.definition.kind == trace::TracepointKind::Static ? "Static" : "Fast";
        const auto& traps = fast_.trap_reasons();
        if (auto it = traps.find(key.address); it != traps.end()) {
            lines.push_back(fmt::format("{} tracepoint {} at 0x{:x} is collected through a "
                                        "trap (trap speed): {}.",
                                        kind, key.number, key.address, it->second));
            continue;
        }
        if (only_traps) continue;
        const auto covering =
            inferior && running_ ? inferior->fast_sites().covering(key.address) : std::nullopt;
        const std::string through =
            covering && covering->slot
                ? fmt::format(" through a short jump to 0x{:x}", covering->slot)
                : std::string();
        std::string collector;
        if (covering) {
            const auto why = fast_.collected_by_agent(key.address);
            collector =
                why ? fmt::format(" The in-process agent's collector collects it: {}.", *why)
                    : std::string(" Its pad writes its frames itself.");
        }
        lines.push_back(covering ? fmt::format("{} tracepoint {} at 0x{:x} jumps to its pad{} "
                                               "({} bytes of instructions displaced).{}",
                                               kind, key.number, key.address, through,
                                               covering->covered, collector)
                                 : fmt::format("{} tracepoint {} at 0x{:x} is not installed.", kind,
                                               key.number, key.address));
    }
    if (inferior && running_ && fast_.follow_forks()) {
        const std::vector<pid_t> followed = inferior->fork_children().followed();
        if (!only_traps)
            lines.push_back(followed.empty()
                                ? std::string("Children forked during the run are followed: "
                                              "none runs now.")
                                : fmt::format("Children forked during the run are followed: "
                                              "{} run now ({}).",
                                              followed.size(), fmt::join(followed, ", ")));
    }
    if (auto use = inferior ? inferior->fast_sites().agent_stack_use() : std::nullopt) {
        if (!only_traps)
            lines.push_back(fmt::format("Pads run on agent stacks (a Go program): {} of {} "
                                        "taken by threads.",
                                        use->taken, use->capacity));
        if (use->hits_without)
            lines.push_back(fmt::format("{} hit(s) not collected: their threads found no agent "
                                        "stack left.",
                                        use->hits_without));
    }
    return lines;
}

} // namespace tpagent::experiment
