// Fast tracepoints, tpagent's side: configuring the in-process agent's shared buffer at
// QTStart, installing the jumps; hit counts and variables taken in from the shared buffer.
#include "experiment/fast_tracepoints.hpp"
#include "experiment/record_writer.hpp"
#include "experiment/inline_collection.hpp"
#include "base/proc_maps.hpp"
#include "bytecode/interpreter.hpp"
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

namespace tpagent::experiment {

namespace {

using namespace inproc;

// The library's copy routine (faults recovered) and code (threads stepped out of it), from the
// header and the mappings of the file that holds the collector.
process::FastSites::InprocAgentCode agent_code_of(pid_t pid,
                                                  const std::shared_ptr<SharedBuffer>& shared) {
    const Header& lib = shared->header();
    process::FastSites::InprocAgentCode code{
        lib.copy_begin, lib.copy_end, lib.copy_fault, 0, 0, lib.breakpoint_trap, {}};
    code.collector_frame = [weak = std::weak_ptr<SharedBuffer>(shared)](std::uint64_t sp) {
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

// A g block of one of the program's threads, where it has every register that is the same
// in all of them (Architecture::FastBlockTail::constant_regnums); else empty.
std::vector<std::uint8_t> constant_registers(const arch::Architecture& arch,
                                             process::Target& inferior,
                                             bool thread_pointer_borrowed) {
    auto constants = arch.fast_block_tail().constant_regnums;
    if (thread_pointer_borrowed) {
        const auto own = arch.fast_block_tail().regnums;
        constants.insert(constants.end(), own.begin(), own.end());
    }
    if (constants.empty()) return {};
    for (pid_t tid : inferior.thread_ids()) {
        std::vector<bool> available;
        auto g = inferior.registers().read(tid, available);
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

Status FastTracepoints::check(const trace::Tracepoint& tp) {
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

void FastTracepoints::choose_trap_sites(process::Target& inferior) {
    by_trap_.clear();
    std::set<std::uint64_t> by_jump;
    for (const auto& [key, tp] : table_.all()) {
        if (!tp.definition.enabled || !in_pad(tp) || by_jump.count(key.address) ||
            by_trap_.count(key.address))
            continue;
        // A static tracepoint with what a pad cannot do (while-stepping, printf) is still
        // collected, by a trap (a fast one with them is refused: the user asked for a pad).
        if (tp.definition.kind == trace::TracepointKind::Static)
            if (auto s = check(tp); !s) {
                by_trap_[key.address] = s.error().text;
                continue;
            }
        if (auto why = trap_reason(inferior, key.address))
            by_trap_[key.address] = std::move(*why);
        else
            by_jump.insert(key.address);
    }
}

std::optional<std::string> FastTracepoints::trap_reason(process::Target& inferior,
                                                        std::uint64_t addr) const {
    if (auto it = by_trap_.find(addr); it != by_trap_.end()) return it->second;
    auto span = inferior.fast_sites().jump_span(addr);
    if (!span) return span.error().text;
    for (const auto& [other, otp] : table_.all())
        if (otp.definition.enabled && !in_pad(otp) && other.address >= addr &&
            other.address - addr < *span)
            return other.address == addr
                       ? fmt::format("trap tracepoint {} is at the same address", other.number)
                       : fmt::format("trap tracepoint {} at 0x{:x} is inside its jump",
                                     other.number, other.address);
    // Jumps never overlap: where another pad's tracepoint is inside this jump, it keeps its
    // own and this one is collected by a trap.
    for (const auto& [other, otp] : table_.all())
        if (otp.definition.enabled && in_pad(otp) && other.address > addr &&
            other.address - addr < *span)
            return fmt::format("tracepoint {} at 0x{:x} is inside its jump", other.number,
                               other.address);
    // gdb's breakpoint at the jump itself works (it replaces the jump's first byte); one
    // inside it would cut the jump.
    for (std::uint64_t at = addr + 1; at < addr + *span; ++at)
        if (inferior.debug_points().breakpoint_at(at))
            return fmt::format("a breakpoint at 0x{:x} is inside its jump", at);
    return std::nullopt;
}

std::span<const arch::SdtArgument> FastTracepoints::marker_of(const trace::Tracepoint& tp) const {
    if (tp.definition.kind != trace::TracepointKind::Static) return {};
    auto it = markers_.find(tp.definition.key.address);
    return it == markers_.end() ? std::span<const arch::SdtArgument>() : it->second.decoded;
}

// The program's in-process agent: the one it has, else the self-mapped image placed in it now
// (any program: static, musl, glibc), else the library loaded by its dlopen.
Result<std::unique_ptr<SharedBuffer>> FastTracepoints::open_agent(process::Target& inferior) const {
    auto shared = SharedBuffer::open(inferior.pid());
    if (shared || shared.error().code != ErrorCode::NotFound) return shared;
    if (agent_image_) {
        if (auto s = inferior.place_agent_image(*agent_image_); !s)
            return make_error(
                s.error().code,
                fmt::format("cannot place the in-process agent ({}) in the program: {}",
                            *agent_image_, s.error().text));
        spdlog::info("in-process agent placed in process {}: {}", inferior.pid(), *agent_image_);
        return SharedBuffer::open(inferior.pid());
    }
    if (!agent_library_) return shared;
    if (auto s = inferior.load_library(*agent_library_); !s)
        return make_error(s.error().code,
                          fmt::format("cannot load the in-process agent ({}) into the program: {}",
                                      *agent_library_, s.error().text));
    spdlog::info("in-process agent loaded into process {}: {}", inferior.pid(), *agent_library_);
    return SharedBuffer::open(inferior.pid());
}

namespace {
RecordWriter::CodePlacer placer_in(process::Target& inferior) {
    return [&inferior](std::uint64_t near, std::span<const std::uint8_t> code) {
        return inferior.fast_sites().place_code(near, code);
    };
}
} // namespace

Status FastTracepoints::use_agent_of(process::Target& inferior) {
    if (!shared_ || shared_->pid() != inferior.pid()) {
        shared_.reset();
        auto shared = open_agent(inferior);
        if (!shared) return shared.error();
        shared_ = std::move(*shared);
    }
    inferior.fast_sites().set_agent_code(agent_code_of(inferior.pid(), shared_));
    return ok_status();
}

Status FastTracepoints::describe_registers(process::Target& inferior) {
    // Pads on agent stacks found through the goroutine's M set the thread pointer as they run.
    const bool borrowed =
        arch_.agent_stacks_in_goroutine_m() && inferior.fast_sites().pads_on_agent_stacks();
    auto core =
        shared_->describe_registers(arch_, constant_registers(arch_, inferior, borrowed), borrowed);
    return core ? ok_status() : Status(core.error());
}

Result<std::shared_ptr<SharedBuffer>>
FastTracepoints::agent_for_breakpoints(process::Target& inferior) {
    if (auto s = use_agent_of(inferior); !s) return s.error();
    // The memory a condition reads directly (else each read is a system call), as the program
    // has it mapped now (a run lists them again at its start).
    shared_->set_readable_ranges(SharedBuffer::readable_ranges_of(inferior.pid()));
    // (A run describes them again at its start, the same way.)
    if (shared_->header().core_register_bytes == 0)
        if (auto s = describe_registers(inferior); !s) return s.error();
    return shared_;
}

Status FastTracepoints::prepare(process::Target& inferior) {
    records_.clear();
    first_record_.clear();
    collected_by_.clear();
    full_core_.clear();
    saved_state_.clear();
    installed_ = false;
    if (auto s = use_agent_of(inferior); !s) return s;
    // The whole buffer: this run's frames, fast and trap alike, go into the shared buffer's chunks.
    shared_->begin_configuration(buffer_.circular() || recording_,
                                 static_cast<std::int64_t>(buffer_.size()));
    shared_->header().recording = recording_ ? 1 : 0;
    if (auto s = describe_registers(inferior); !s) return s;
    // Trace state variables: current values (reset at start); the clock reads itself.
    shared_->clear_variables();
    for (std::uint32_t n : variables_.numbers())
        shared_->define_variable(n, variables_.get(n).value_or(0),
                                 static_cast<std::uint32_t>(variables_.reading(n)));
    shared_->set_readable_ranges(SharedBuffer::readable_ranges_of(inferior.pid()));

    std::vector<trace::Tracepoint*> fast;
    for (auto& [key, tp] : table_.all())
        if (tp.definition.enabled && in_pad(tp) && !by_trap_.count(key.address)) {
            fast.push_back(table_.find(key));
            table_.mark_in_program(key);
        }
    RecordWriter writer(*shared_, placer_in(inferior));
    auto records = writer.records(fast.size());
    if (!records) return records.error();
    std::uint64_t largest = 0;
    for (std::size_t i = 0; i < fast.size(); ++i) {
        TracepointRecord& rec = (*records)[i];
        if (auto s = writer.write(rec, fast[i]->definition, marker_of(*fast[i])); !s) return s;
        largest = std::max(largest, rec.frame_bound);
        records_.push_back({fast[i], inproc::record_index(shared_->local(), &rec), {}});
        chain_record(rec);
    }
    config_used_ = writer.used();
    if (auto s = shared_->configure_chunks(buffer_.size(), largest); !s) return s;
    // Mapped into the program now, while it is stopped: else each chunk's first writer maps it
    // (about 16 us a 64 KiB chunk here, 1-4 ns a hit over the first pass of a 10^6-hit run).
    if (auto m = inferior.map_now(shared_->chunks_address(), shared_->populated_bytes()); m)
        shared_->set_mapped_in_program();
    else
        spdlog::debug("trace buffer left for the program to map: {}", m.error().text);
    frames_ = std::make_unique<SharedBufferReader>(shared_);
    buffer_.share(frames_.get());
    return ok_status();
}

std::string FastTracepoints::site_name(std::uint64_t addr) const {
    std::vector<std::uint32_t> numbers;
    for (const auto& [key, tp] : table_.all())
        if (key.address == addr && in_pad(tp)) numbers.push_back(key.number);
    if (numbers.empty()) return fmt::format("fast tracepoint at 0x{:x}", addr);
    return fmt::format("fast tracepoint{} {} at 0x{:x}", numbers.size() > 1 ? "s" : "",
                       fmt::join(numbers, ", "), addr);
}

Status FastTracepoints::install(process::Target& inferior, std::uint64_t addr) {
    auto first = first_record_.find(addr);
    if (first == first_record_.end()) return ok_status();
    const Header& h = shared_->header();
    auto s = inferior.fast_sites().add(addr, h.collector, shared_->remote(first->second),
                                       pad_options(inferior, addr));
    if (!s)
        return make_error(s.error().code, fmt::format("{}: {}", site_name(addr), s.error().text));
    return s;
}

Result<process::FastSites::InstructionMove>
FastTracepoints::begin_install(process::Target& inferior, std::uint64_t addr) {
    const Header& h = shared_->header();
    auto first = first_record_.find(addr);
    Result<process::FastSites::InstructionMove> move =
        make_error(ErrorCode::NotFound, "no record for it in the in-process agent");
    if (first != first_record_.end())
        move = inferior.fast_sites().begin(addr, h.collector, shared_->remote(first->second),
                                           pad_options(inferior, addr));
    if (!move)
        return make_error(move.error().code,
                          fmt::format("{}: {}", site_name(addr), move.error().text));
    return move;
}

void FastTracepoints::begin_run() {
    installed_ = true;
    shared_->header().tracing.store(1, std::memory_order_release);
}

void FastTracepoints::start_following(process::Target& inferior) {
    if (!follow_forks_ || !installed() || shared_->header().forked_flag == 0) return;
    // (The process layer may outlive this agent: an exec, a QTinit.)
    const std::weak_ptr<SharedBuffer> shared = shared_;
    const inproc::Header& h = shared_->header();
    process::ForkFollowing following;
    following.process_mark = h.forked_flag;
    following.mark = [](pid_t pid, bool followed) {
        const inproc::ProcessMark mark{followed ? inproc::kForkedFollowed : inproc::kForkedUntraced,
                                       {},
                                       static_cast<std::uint32_t>(pid)};
        const auto* bytes = reinterpret_cast<const std::uint8_t*>(&mark);
        return std::vector<std::uint8_t>(bytes, bytes + sizeof mark);
    };
    following.copy_begin = h.copy_begin;
    following.copy_end = h.copy_end;
    following.copy_fault = h.copy_fault;
    following.collecting = [shared](pid_t pid) {
        const auto s = shared.lock();
        return s && s->collecting_in(pid);
    };
    following.left = [shared](pid_t pid) {
        if (const auto s = shared.lock()) s->release_chunks_of(pid);
    };
    if (!inferior.fork_children().follow(std::move(following)))
        spdlog::warn("this process's forked children cannot be followed by the trace");
}

arch::FastPadOptions FastTracepoints::pad_options(process::Target& inferior, std::uint64_t addr) {
    arch::FastPadOptions options;
    // On an agent stack the collector cannot find the thread's stack pointer from the anchor.
    options.stage_full_core = inferior.fast_sites().pads_on_agent_stacks();
    options.save_vector_state = shared_->header().general_registers_only == 0;
    auto first = first_record_.find(addr);
    std::vector<TracepointRecord*> chain;
    for (std::uint64_t at = first == first_record_.end() ? 0 : first->second; at;
         at = chain.back()->next)
        chain.push_back(inproc::at<TracepointRecord>(shared_->local(), at));
    for (const TracepointRecord* rec : chain)
        options.stage_full_core =
            options.stage_full_core ||
            collects_registers(
                std::span(inproc::at<const ActionRecord>(shared_->local(), rec->actions_offset),
                          rec->action_count));
    if (options.stage_full_core) {
        full_core_.insert(addr);
        for (TracepointRecord* rec : chain)
            rec->complete_block = 0;
    }
    options.stage_vector_state =
        std::ranges::any_of(chain, [](const TracepointRecord* rec) { return rec->collects_state; });
    if (options.stage_vector_state) saved_state_.insert(addr);
    collected_by_.erase(addr);
    if (inferior.fast_sites().pads_on_agent_stacks()) {
        collected_by_[addr] = "the pads run on agent stacks";
        return options;
    }
    // While tracing is off the pad runs only the displaced instructions.
    options.gate = shared_->remote(offsetof(Header, tracing));
    if (!arch_.collects_in_line()) {
        collected_by_[addr] = "this machine's pads call it (no lahf/sahf)";
        return options;
    }
    // One record at the address (the only one a pad is made for: another joining later is
    // the agent's collector's), collected by the pad's own code where it can be.
    if (!inline_collection_) {
        collected_by_[addr] = "`monitor set inline-collection off`";
    } else if (chain.size() > 1) {
        collected_by_[addr] = "several tracepoints share its address";
    } else if (chain.size() == 1) {
        auto made = inline_collection_for(*shared_, *chain.front(), arch_.pc_regnum());
        if (made) {
            options.inline_collection = std::move(*made);
            spdlog::debug("{}: its pad writes its frames itself", site_name(addr));
        } else {
            collected_by_[addr] = made.error().text;
            spdlog::debug("{}: collected by the agent's collector: {}", site_name(addr),
                          made.error().text);
        }
    }
    return options;
}

bool FastTracepoints::chain_record(TracepointRecord& rec) {
    const std::uint64_t offset = shared_->offset_of(&rec);
    auto first = first_record_.find(rec.address);
    if (first == first_record_.end()) {
        first_record_[rec.address] = offset;
        return true;
    }
    auto* last = inproc::at<TracepointRecord>(shared_->local(), first->second);
    while (last->next)
        last = inproc::at<TracepointRecord>(shared_->local(), last->next);
    // Joining a pad that stages the whole core: nothing to fill in.
    if (full_core_.count(rec.address)) rec.complete_block = 0;
    // Joining during a run a pad that saves no FP/vector state: it collects without it.
    if (installed_ && !saved_state_.count(rec.address)) rec.collects_state = 0;
    __atomic_store_n(&last->next, offset, __ATOMIC_RELEASE);
    return false;
}

Status FastTracepoints::add_during_run(process::Target& inferior, trace::Tracepoint& tp) {
    const trace::TracepointKey key = tp.definition.key;
    if (!installed())
        return make_error(ErrorCode::NotAllowed, "the run has no fast tracepoints of its own");
    if (inferior.running()) return make_error(ErrorCode::NotAllowed, "the program is running");
    if (auto why = trap_reason(inferior, key.address))
        return make_error(ErrorCode::NotAllowed, *why);
    if (auto s = check(tp); !s) return s;
    // Threads are stopped, and reach a record only through a jump or the chain of the
    // records at its address, both written last.
    RecordWriter writer(*shared_, placer_in(inferior), config_used_);
    auto records = writer.records(1);
    if (!records) return records.error();
    TracepointRecord& rec = records->front();
    if (auto s = writer.write(rec, tp.definition, marker_of(tp)); !s) return s;
    if (rec.frame_bound > inproc::chunk_payload(shared_->header()))
        return make_error(ErrorCode::TooLarge, "its frames do not fit the run's chunks");
    config_used_ = writer.used();
    if (chain_record(rec)) {
        if (auto s = install(inferior, key.address); !s) {
            first_record_.erase(key.address);
            return s;
        }
    }
    records_.push_back({&tp, inproc::record_index(shared_->local(), &rec), {}});
    table_.mark_in_program(key);
    spdlog::debug("fast tracepoint {} at 0x{:x} joins the run", key.number, key.address);
    return ok_status();
}

bool FastTracepoints::set_enabled(const trace::TracepointKey& key, bool enabled) {
    if (!shared_) return false;
    for (const Record& f : records_)
        if (f.tp->definition.key == key) {
            __atomic_store_n(&inproc::tracepoint_record(shared_->local(), f.index)->enabled,
                             enabled ? 1u : 0u, __ATOMIC_RELEASE);
            return true;
        }
    return false;
}

void FastTracepoints::pull() {
    pull_counters();
    if (!shared_) return;
    for (std::uint32_t n : variables_.numbers())
        if (const Variable* v = shared_->variable(n); v && !v->reading)
            variables_.set(n, v->value.load(std::memory_order_relaxed));
}

void FastTracepoints::pull_counters() {
    if (!shared_) return;
    for (Record& f : records_) {
        const auto now = shared_->hit_totals(f.index);
        // Differences: a tracepoint that moved to a trap site during the run counts there too.
        f.tp->counters.hits += now.hits - f.counted.hits;
        f.tp->counters.bytes_used += now.bytes - f.counted.bytes;
        f.counted = now;
    }
}

std::optional<protocol::TraceStopReason> FastTracepoints::agent_stop_reason() const {
    using protocol::TraceStopReason;
    const Header& h = shared_->header();
    const auto why = static_cast<StopReason>(h.stop_reason.load(std::memory_order_acquire));
    switch (why) {
    case StopReason::None:
    case StopReason::Stopping: // the details are still being written
        return std::nullopt;
    case StopReason::BufferFull:
        return TraceStopReason{TraceStopReason::Kind::Full, {}, 0};
    case StopReason::PassCount:
        return TraceStopReason{TraceStopReason::Kind::PassCount, {}, h.stop_tracepoint};
    case StopReason::Error: {
        const auto status = static_cast<bytecode::EvalStatus>(h.stop_status);
        std::string text = fmt::format("{} (0x{:x})", bytecode::to_string(status), h.stop_address);
        return TraceStopReason{TraceStopReason::Kind::Error, std::move(text), h.stop_tracepoint};
    }
    }
    return std::nullopt;
}

void FastTracepoints::stop(process::Target* inferior) {
    if (!shared_ || !installed_) return;
    shared_->header().tracing.store(0, std::memory_order_release);
    pull();
    installed_ = false;
    removal_pending_ = true;
    remove_pending(inferior);
}

// Only while the program is stopped: a jump is never rewritten under a running thread. Until
// then the jumps stay and the collector returns at once.
void FastTracepoints::remove_pending(process::Target* inferior) {
    if (inferior && inferior->alive() && !inferior->running()) remove_pending_now(*inferior);
}

void FastTracepoints::remove_pending_now(process::Target& inferior) {
    if (!removal_pending_) return;
    inferior.fast_sites().remove_all();
    removal_pending_ = false;
}

void FastTracepoints::forget_image() {
    if (installed()) pull_counters(); // the frames stay: the trace buffer holds the shared buffer
    shared_.reset();
    installed_ = false;
    removal_pending_ = false;
    first_record_.clear();
    full_core_.clear();
    saved_state_.clear();
}

void FastTracepoints::discard_frames() {
    frames_.reset();
    if (shared_) shared_->release_buffer();
}

} // namespace tpagent::experiment
