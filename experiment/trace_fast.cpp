// Fast tracepoints, tpagent's side: configuring the in-process agent's shared region at
// QTStart, installing the jumps; hit counts and variables taken in from the region.
#include "experiment/trace_experiment.hpp"
#include "arch/compiler_backend.hpp"
#include "base/proc_maps.hpp"
#include "base/proc_files.hpp"
#include "bytecode/compiler.hpp"
#include "bytecode/interpreter.hpp"
#include "protocol/hex.hpp"
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

namespace tpagent::experiment {

namespace {

using namespace inproc;

// The library's copy routine (faults recovered) and code (threads stepped out of it), from the
// header and the mappings of the file that holds the collector.
process::Target::InprocAgentCode agent_code_of(pid_t pid,
                                               const std::shared_ptr<InprocRegion>& region) {
    const Header& lib = region->header();
    process::Target::InprocAgentCode code{lib.copy_begin, lib.copy_end, lib.copy_fault, 0, 0, {}};
    code.collector_frame = [weak = std::weak_ptr<InprocRegion>(region)](std::uint64_t sp) {
        const auto r = weak.lock();
        return r ? r->collector_frame(sp) : std::nullopt;
    };
    const auto maps = read_maps(pid);
    auto holder = std::find_if(maps.begin(), maps.end(), [&](const MappedRange& m) {
        return m.start <= lib.collector && lib.collector < m.end;
    });
    if (holder == maps.end() || holder->name.empty()) return code;
    code.code_begin = ~std::uint64_t{0};
    for (const auto& m : maps)
        if (m.name == holder->name) {
            code.code_begin = std::min(code.code_begin, m.start);
            code.code_end = std::max(code.code_end, m.end);
        }
    return code;
}

bool uses_printf(const bytecode::Program& p) {
    return std::any_of(p.insns().begin(), p.insns().end(),
                       [](const bytecode::Insn& i) { return i.op == bytecode::Op::Printf; });
}

// Fast tracepoints' records, written into a region being configured (after its registers are
// described), with their actions and expression code.
class RecordWriter {
  public:
    RecordWriter(InprocRegion& region, process::Target& inferior, std::uint64_t used = 0)
        : region_(region), area_(region, used), inferior_(inferior), helpers_(region.helpers()),
          core_(inproc::frame_register_bytes(region.header())) {
        helpers_.printf = 0; // never in the program
    }
    std::uint64_t used() const { return area_.used(); }

    // Records, where inproc::tracepoint_record finds them by index.
    Result<std::span<TracepointRecord>> records(std::size_t count) {
        return area_.take<TracepointRecord>(count, sizeof(TracepointRecord));
    }
    Status write(TracepointRecord& rec, const trace::TracepointDefinition& def);

  private:
    Result<ActionRecord> action(const trace::Action& action, std::uint64_t near);
    Result<ActionRecord> expression(const trace::Expression& e, std::uint64_t near);

    InprocRegion& region_;
    InprocConfigArea area_;
    process::Target& inferior_;
    bytecode::HelperAddresses helpers_;
    std::uint32_t core_;
};

Status RecordWriter::write(TracepointRecord& rec, const trace::TracepointDefinition& def) {
    rec.number = def.key.number;
    rec.enabled = 1;
    rec.address = def.key.address;
    rec.pass_count = def.pass_count;
    rec.pass_hits.store(0, std::memory_order_relaxed);
    rec.next = 0;
    if (def.condition) {
        auto condition = expression(*def.condition, def.key.address);
        if (!condition) return condition.error();
        rec.condition = *condition;
        rec.has_condition = 1;
    }
    std::size_t count = 0;
    for (const auto& string : def.actions)
        count += string.actions.size();
    auto actions = area_.take<ActionRecord>(count);
    if (!actions) return actions.error();
    rec.actions_offset = region_.offset_of(actions->data());
    rec.action_count = static_cast<std::uint32_t>(count);
    std::size_t k = 0;
    for (const auto& string : def.actions)
        for (const auto& action : string.actions) {
            auto a = this->action(action, def.key.address);
            if (!a) return a.error();
            (*actions)[k++] = *a;
        }
    const Header& h = region_.header();
    bool reads = reads_completed_register(h, std::span<const ActionRecord>(*actions)) ||
                 (def.condition && reads_completed_register(h, def.condition->program));
    for (const auto& string : def.actions)
        for (const auto& action : string.actions)
            if (const auto* e = std::get_if<trace::Expression>(&action))
                reads = reads || reads_completed_register(h, e->program);
    rec.complete_block = reads ? 1 : 0;
    const FastSavedState* state = region_.saved_state();
    rec.collects_state = 0;
    for (const auto& string : def.actions)
        for (const auto& action : string.actions)
            if (const auto* mask = std::get_if<trace::RegisterMask>(&action))
                if (state && state->wanted_by(*mask)) rec.collects_state = 1;
    rec.frame_bound =
        staged_frame_bound(*actions, core_ + (rec.collects_state ? h.saved_state_bytes : 0));
    if (rec.frame_bound > kMaxChunkBytes - kChunkHeaderBytes)
        return make_error(ErrorCode::TooLarge,
                          fmt::format("fast tracepoint {} collects up to {} bytes per hit; "
                                      "the in-process agent takes at most {}",
                                      def.key.number, rec.frame_bound,
                                      kMaxChunkBytes - kChunkHeaderBytes));
    return ok_status();
}

Result<ActionRecord> RecordWriter::action(const trace::Action& action, std::uint64_t near) {
    ActionRecord a{}; // kind 0: nothing to collect
    if (const auto* mask = std::get_if<trace::RegisterMask>(&action)) {
        if (!mask->bytes.empty()) a.kind = ActionKind::Registers;
    } else if (const auto* range = std::get_if<trace::MemoryRange>(&action)) {
        a.kind = ActionKind::Memory;
        a.base_register = range->base_register;
        a.offset = range->offset;
        a.length = range->length;
    } else if (const auto* e = std::get_if<trace::Expression>(&action)) {
        return expression(*e, near);
    }
    return a;
}

// Native code placed near the tracepoint when the compiler takes it and there is room in the
// program; else interpreted.
Result<ActionRecord> RecordWriter::expression(const trace::Expression& e, std::uint64_t near) {
    auto a = area_.expression(e.program);
    if (!a) return a;
    auto native = tpagent::arch::host_compiler_backend().translate(e.program, helpers_);
    if (native) {
        if (auto placed = inferior_.place_code(near, *native)) a->compiled = *placed;
    }
    if (!a->compiled)
        spdlog::debug("fast tracepoint expression interpreted: {}",
                      native ? "no room in the program" : native.error().text);
    return a;
}

// A g block of one of the program's threads, where it has every register that is the same
// in all of them (Architecture::FastBlockTail::constant_regnums); else empty.
std::vector<std::uint8_t> constant_registers(const arch::Architecture& arch,
                                             process::Target& inferior) {
    const auto constants = arch.fast_block_tail().constant_regnums;
    if (constants.empty()) return {};
    for (pid_t tid : inferior.thread_ids()) {
        std::vector<bool> available;
        auto g = inferior.read_registers(tid, available);
        if (!g) continue;
        const bool all = std::ranges::all_of(constants, [&](int r) {
            return r >= 0 && static_cast<std::size_t>(r) < available.size() &&
                   available[static_cast<std::size_t>(r)];
        });
        if (all) return *g;
        break;
    }
    spdlog::debug("fast frames: no stopped thread has the process's constant registers; "
                  "they are left out of this run's frames");
    return {};
}

} // namespace

Status TraceExperiment::check_fast(const trace::Tracepoint& tp) const {
    const auto& def = tp.definition;
    if (def.step_count > 0)
        return make_error(ErrorCode::Unsupported,
                          fmt::format("fast tracepoint {} has while-stepping, which fast "
                                      "tracepoints do not do: use a trap tracepoint (trace)",
                                      def.key.number));
    auto check_expr = [&](const trace::Expression& e) -> Status {
        if (uses_printf(e.program))
            return make_error(ErrorCode::Unsupported,
                              fmt::format("fast tracepoint {}: printf is not available in "
                                          "the program",
                                          def.key.number));
        return ok_status();
    };
    if (def.condition)
        if (auto s = check_expr(*def.condition); !s) return s;
    for (const auto& string : def.actions)
        for (const auto& action : string.actions) {
            if (const auto* e = std::get_if<trace::Expression>(&action))
                if (auto s = check_expr(*e); !s) return s;
        }
    return ok_status();
}

// The program's in-process agent: the one it has, else the library loaded into it now.
Result<std::unique_ptr<InprocRegion>> TraceExperiment::open_agent(process::Target& inferior) const {
    auto region = InprocRegion::open(inferior.pid());
    if (region || region.error().code != ErrorCode::NotFound || !agent_library_) return region;
    if (auto s = inferior.load_library(*agent_library_); !s)
        return make_error(s.error().code,
                          fmt::format("cannot load the in-process agent ({}) into the program: {}",
                                      *agent_library_, s.error().text));
    spdlog::info("in-process agent loaded into process {}: {}", inferior.pid(), *agent_library_);
    return InprocRegion::open(inferior.pid());
}

// Writes every enabled fast tracepoint into the region; nothing is installed yet.
Status TraceExperiment::prepare_fast(process::Target& inferior) {
    fast_records_.clear();
    fast_first_record_.clear();
    fast_full_core_.clear();
    fast_saved_state_.clear();
    fast_installed_ = false;
    if (!inproc_ || inproc_->pid() != inferior.pid()) {
        inproc_.reset();
        auto region = open_agent(inferior);
        if (!region) return region.error();
        inproc_ = std::move(*region);
    }
    inferior.set_inproc_agent_code(agent_code_of(inferior.pid(), inproc_));
    // The whole buffer: this run's frames, fast and trap alike, go into the region's chunks.
    inproc_->begin_configuration(buffer_.circular(), static_cast<std::int64_t>(buffer_.size()));
    if (auto core = inproc_->describe_registers(arch_, constant_registers(arch_, inferior)); !core)
        return core.error();
    // Trace state variables: current values (reset at start); the clock reads itself.
    inproc_->clear_variables();
    for (std::uint32_t n : variables_.numbers())
        inproc_->define_variable(n, variables_.get(n).value_or(0),
                                 static_cast<std::uint32_t>(variables_.reading(n)));
    inproc_->set_readable_ranges(InprocRegion::readable_ranges_of(inferior.pid()));

    std::vector<trace::Tracepoint*> fast;
    for (auto& [key, tp] : table_.all())
        if (tp.definition.enabled && tp.definition.kind == trace::TracepointKind::Fast &&
            !fast_by_trap_.count(key.address)) {
            fast.push_back(table_.find(key));
            table_.mark_in_program(key);
        }
    RecordWriter writer(*inproc_, inferior);
    auto records = writer.records(fast.size());
    if (!records) return records.error();
    std::uint64_t largest = 0;
    for (std::size_t i = 0; i < fast.size(); ++i) {
        TracepointRecord& rec = (*records)[i];
        if (auto s = writer.write(rec, fast[i]->definition); !s) return s;
        largest = std::max(largest, rec.frame_bound);
        fast_records_.push_back({fast[i], inproc::record_index(inproc_->local(), &rec), {}});
        chain_record(rec);
    }
    fast_config_used_ = writer.used();
    if (auto s = inproc_->configure_chunks(buffer_.size(), largest); !s) return s;
    // Mapped into the program now, while it is stopped: else each chunk's first writer maps it
    // (about 16 us a 64 KiB chunk here, 1-4 ns a hit over the first pass of a 10^6-hit run).
    if (auto m = inferior.map_now(inproc_->chunks_address(), inproc_->populated_bytes()); m)
        inproc_->set_mapped_in_program();
    else
        spdlog::debug("trace buffer left for the program to map: {}", m.error().text);
    fast_frames_ = std::make_unique<InprocFrames>(inproc_);
    buffer_.share(fast_frames_.get());
    return ok_status();
}

std::string TraceExperiment::fast_site_name(std::uint64_t addr) const {
    std::vector<std::uint32_t> numbers;
    for (const auto& [key, tp] : table_.all())
        if (key.address == addr && tp.definition.kind == trace::TracepointKind::Fast)
            numbers.push_back(key.number);
    if (numbers.empty()) return fmt::format("fast tracepoint at 0x{:x}", addr);
    return fmt::format("fast tracepoint{} {} at 0x{:x}", numbers.size() > 1 ? "s" : "",
                       fmt::join(numbers, ", "), addr);
}

Status TraceExperiment::install_fast(process::Target& inferior, std::uint64_t addr) {
    auto first = fast_first_record_.find(addr);
    if (first == fast_first_record_.end()) return ok_status();
    const Header& h = inproc_->header();
    auto s = inferior.add_fast_site(addr, h.collector, inproc_->remote(first->second),
                                    fast_pad_options(addr));
    if (!s)
        return make_error(s.error().code,
                          fmt::format("{}: {}", fast_site_name(addr), s.error().text));
    return s;
}

arch::FastPadOptions TraceExperiment::fast_pad_options(std::uint64_t addr) {
    arch::FastPadOptions options;
    options.save_vector_state = inproc_->header().general_registers_only == 0;
    auto first = fast_first_record_.find(addr);
    std::vector<TracepointRecord*> chain;
    for (std::uint64_t at = first == fast_first_record_.end() ? 0 : first->second; at;
         at = chain.back()->next)
        chain.push_back(inproc::at<TracepointRecord>(inproc_->local(), at));
    for (const TracepointRecord* rec : chain)
        options.stage_full_core =
            options.stage_full_core ||
            collects_registers(
                std::span(inproc::at<const ActionRecord>(inproc_->local(), rec->actions_offset),
                          rec->action_count));
    if (options.stage_full_core) {
        fast_full_core_.insert(addr);
        for (TracepointRecord* rec : chain)
            rec->complete_block = 0;
    }
    options.stage_vector_state =
        std::ranges::any_of(chain, [](const TracepointRecord* rec) { return rec->collects_state; });
    if (options.stage_vector_state) fast_saved_state_.insert(addr);
    return options;
}

bool TraceExperiment::chain_record(TracepointRecord& rec) {
    const std::uint64_t offset = inproc_->offset_of(&rec);
    auto first = fast_first_record_.find(rec.address);
    if (first == fast_first_record_.end()) {
        fast_first_record_[rec.address] = offset;
        return true;
    }
    auto* last = inproc::at<TracepointRecord>(inproc_->local(), first->second);
    while (last->next)
        last = inproc::at<TracepointRecord>(inproc_->local(), last->next);
    // Joining a pad that stages the whole core: nothing to fill in.
    if (fast_full_core_.count(rec.address)) rec.complete_block = 0;
    // Joining during a run a pad that saves no FP/vector state: it collects without it.
    if (fast_installed_ && !fast_saved_state_.count(rec.address)) rec.collects_state = 0;
    __atomic_store_n(&last->next, offset, __ATOMIC_RELEASE);
    return false;
}

Status TraceExperiment::add_fast_during_run(process::Target& inferior, trace::Tracepoint& tp) {
    const trace::TracepointKey key = tp.definition.key;
    if (!fast_running())
        return make_error(ErrorCode::NotAllowed, "the run has no fast tracepoints of its own");
    if (inferior.running()) return make_error(ErrorCode::NotAllowed, "the program is running");
    if (fast_by_trap_.count(key.address) || jump_blocked(inferior, key.address))
        return make_error(ErrorCode::NotAllowed, "a trap tracepoint or breakpoint is in the way");
    if (auto s = check_fast(tp); !s) return s;
    // Threads are stopped, and reach a record only through a jump or the chain of the
    // records at its address, both written last.
    RecordWriter writer(*inproc_, inferior, fast_config_used_);
    auto records = writer.records(1);
    if (!records) return records.error();
    TracepointRecord& rec = records->front();
    if (auto s = writer.write(rec, tp.definition); !s) return s;
    if (rec.frame_bound > inproc::chunk_payload(inproc_->header()))
        return make_error(ErrorCode::TooLarge, "its frames do not fit the run's chunks");
    fast_config_used_ = writer.used();
    if (chain_record(rec)) {
        if (auto s = install_fast(inferior, key.address); !s) {
            fast_first_record_.erase(key.address);
            return s;
        }
    }
    fast_records_.push_back({&tp, inproc::record_index(inproc_->local(), &rec), {}});
    table_.mark_in_program(key);
    spdlog::debug("fast tracepoint {} at 0x{:x} joins the run", key.number, key.address);
    return ok_status();
}

// QTStart with gdb relocating: the next site's pad, or, with none left, the trace runs.
Status TraceExperiment::next_gdb_site(process::Target& inferior) {
    gdb_move_.reset();
    if (gdb_sites_.empty()) {
        begin_run(true);
        return ok_status();
    }
    const std::uint64_t addr = gdb_sites_.front();
    const Header& h = inproc_->header();
    auto first = fast_first_record_.find(addr);
    Result<process::Target::InstructionMove> move =
        make_error(ErrorCode::NotFound, "no record for it in the in-process agent");
    if (first != fast_first_record_.end())
        move = inferior.begin_fast_site(addr, h.collector, inproc_->remote(first->second),
                                        fast_pad_options(addr));
    if (!move) {
        gdb_sites_.clear();
        uninstall_all(&inferior);
        return make_error(move.error().code,
                          fmt::format("{}: {}", fast_site_name(addr), move.error().text));
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
        return make_error(e.code, fmt::format("{}: {}", fast_site_name(addr), e.text));
    };
    if (!inferior || !inferior->alive())
        return fail(make_error(ErrorCode::NoProcess, "the process is gone"));
    if (!length)
        return fail(make_error(ErrorCode::Unsupported,
                               fmt::format("gdb could not relocate the instruction at 0x{:x} "
                                           "(qRelocInsn answered with an error)",
                                           from)));
    auto next = inferior->fast_site_moved(*length);
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
    if (inferior) inferior->abandon_fast_site();
    uninstall_all(inferior);
}

void TraceExperiment::pull_fast_counters() {
    if (!inproc_) return;
    for (FastRecord& f : fast_records_) {
        const auto now = inproc_->hit_totals(f.index);
        // Differences: a tracepoint that moved to a trap site during the run counts there too.
        f.tp->counters.hits += now.hits - f.counted.hits;
        f.tp->counters.bytes_used += now.bytes - f.counted.bytes;
        f.counted = now;
    }
}

void TraceExperiment::pull_fast_variables() {
    if (!inproc_) return;
    for (std::uint32_t n : variables_.numbers())
        if (const Variable* v = inproc_->variable(n); v && !v->reading)
            variables_.set(n, v->value.load(std::memory_order_relaxed));
}

void TraceExperiment::poll(process::Target* inferior) {
    if (fast_removal_pending_ && inferior && inferior->alive() && !inferior->running())
        remove_fast_sites(inferior);
    if (!fast_running()) return;
    pull_fast_counters();
    pull_fast_variables();
    const Header& h = inproc_->header();
    const auto why = static_cast<StopReason>(h.stop_reason.load(std::memory_order_acquire));
    switch (why) {
    case StopReason::None:
    case StopReason::Stopping: // the details are still being written
        return;
    case StopReason::BufferFull:
        stop_with({TraceStopReason::Kind::Full, {}, 0}, inferior);
        return;
    case StopReason::PassCount:
        stop_with(passcount_reached(h.stop_tracepoint), inferior);
        return;
    case StopReason::Error: {
        const auto status = static_cast<bytecode::EvalStatus>(h.stop_status);
        const std::string text =
            fmt::format("{} (0x{:x})", bytecode::to_string(status), h.stop_address);
        stop_with(trace_error(text, h.stop_tracepoint), inferior);
        return;
    }
    }
}

// The trace stops: collectors return at once from now on; their frames stay where they are.
void TraceExperiment::stop_fast(process::Target* inferior) {
    if (!inproc_ || !fast_installed_) return;
    inproc_->header().tracing.store(0, std::memory_order_release);
    pull_fast_counters();
    pull_fast_variables();
    fast_installed_ = false;
    fast_removal_pending_ = true;
    if (inferior && inferior->alive() && !inferior->running()) remove_fast_sites(inferior);
}

// Only while the program is stopped: a jump is never rewritten under a running thread. Until
// then the jumps stay and the collector returns at once.
void TraceExperiment::remove_fast_sites(process::Target* inferior) {
    inferior->remove_all_fast_sites();
    fast_removal_pending_ = false;
}

} // namespace tpagent::experiment
