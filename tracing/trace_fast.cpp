// Fast tracepoints, tpagent's side: configuring the in-process agent's shared region at
// QTStart, installing the jumps, and moving staged frames into the frame buffer.
#include "tracing/trace_experiment.hpp"
#include "arch/compiler_backend.hpp"
#include "target/linux/pad_allocator.hpp"
#include "base/proc_files.hpp"
#include "bytecode/compiler.hpp"
#include "bytecode/interpreter.hpp"
#include "protocol/hex.hpp"
#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tpagent::agent {

namespace {

using namespace inproc;

// Room a collecting expression (trace opcodes) may fill in one frame.
constexpr std::uint64_t kExpressionAllowance = 8192;

// Bump allocation in the configuration area (offsets from the region start).
class ConfigArea {
  public:
    explicit ConfigArea(void* region) : region_(region) {}
    template <class T> Result<std::uint64_t> take(std::size_t count) {
        const std::uint64_t at = (used_ + 7) & ~std::uint64_t{7};
        const std::uint64_t bytes = count * sizeof(T);
        if (at + bytes > kConfigBytes)
            return make_error(ErrorCode::TooLarge,
                              "fast tracepoints: too many actions for the in-process agent");
        used_ = at + bytes;
        std::memset(inproc::at<std::uint8_t>(region_, kConfigOffset + at), 0, bytes);
        return kConfigOffset + at;
    }

  private:
    void* region_;
    std::uint64_t used_ = 0;
};

// The library's copy routine (faults recovered) and code (threads stepped out of it), from the
// header and the mappings of the file that holds the collector.
Inferior::InprocAgentCode agent_code_of(pid_t pid, const Header& lib) {
    Inferior::InprocAgentCode code{lib.copy_begin, lib.copy_end, lib.copy_fault, 0, 0};
    const auto maps = parse_maps(read_file(fmt::format("/proc/{}/maps", pid)));
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
            if (std::holds_alternative<trace::StaticData>(action))
                return make_error(ErrorCode::Unsupported,
                                  "static tracepoint data ($_sdata) is not supported");
        }
    return ok_status();
}

// Writes every enabled fast tracepoint into the region; nothing is installed yet.
Status TraceExperiment::prepare_fast(Inferior& inferior) {
    fast_tps_.clear();
    fast_first_record_.clear();
    fast_installed_ = false;
    if (!inproc_ || inproc_->pid() != inferior.pid()) {
        inproc_.reset();
        auto region = InprocRegion::open(inferior.pid());
        if (!region) return region.error();
        inproc_ = std::move(*region);
    }
    inferior.set_inproc_agent_code(agent_code_of(inferior.pid(), inproc_->header()));
    void* region = inproc_->local();
    Header& h = inproc_->header();
    h.tracing.store(0, std::memory_order_release);
    inproc_->reset_chunks();
    h.stop_reason.store(0, std::memory_order_relaxed);
    h.stop_tracepoint = 0;
    h.stop_status = 0;
    h.stop_address = 0;
    h.dropped_frames.store(0, std::memory_order_relaxed);
    h.circular = buffer_.circular() ? 1 : 0;
    h.linear_budget.store(static_cast<std::int64_t>(buffer_.bytes_free()),
                          std::memory_order_relaxed);
    h.g_size = static_cast<std::uint32_t>(arch_.g_size());
    const std::size_t core = h.general_registers_only ? arch_.fast_block_bytes() : arch_.g_size();
    if (core == 0 || core > arch_.g_size())
        return make_error(ErrorCode::Unsupported, "fast tracepoints: no register block layout");
    h.core_register_bytes = static_cast<std::uint32_t>(core);
    const auto regs = arch_.registers();
    for (std::size_t r = 0; r < kMaxCoreRegisters; ++r) {
        const bool in_core =
            r < regs.size() && regs[r].size <= 8 && regs[r].g_offset + regs[r].size <= core;
        h.register_offset[r] = in_core ? static_cast<std::uint16_t>(regs[r].g_offset) : 0;
        h.register_size[r] = in_core ? static_cast<std::uint8_t>(regs[r].size) : 0;
    }

    // Trace state variables: current values (reset at start); the clock reads itself.
    auto* vars = at<Variable>(region, kVariablesOffset);
    for (std::size_t i = 0; i < kMaxVariables; ++i) {
        vars[i].defined = 0;
        vars[i].timestamp = 0;
        vars[i].value.store(0, std::memory_order_relaxed);
    }
    for (std::uint32_t n : variables_.numbers()) {
        if (n >= kMaxVariables) continue;
        vars[n].defined = 1;
        vars[n].timestamp = variables_.is_timestamp(n) ? 1 : 0;
        vars[n].value.store(variables_.get(n).value_or(0), std::memory_order_relaxed);
    }
    const auto ranges = InprocRegion::readable_ranges_of(inferior.pid());
    inproc_->set_readable_ranges(ranges);

    // Records first (index = position), then their actions and expression code.
    std::vector<trace::Tracepoint*> fast;
    for (auto& [key, tp] : table_.all())
        if (tp.definition.enabled && tp.definition.kind == trace::TracepointKind::Fast)
            fast.push_back(table_.find(key));
    ConfigArea area(region);
    auto records_at = area.take<TracepointRecord>(fast.size());
    if (!records_at) return records_at.error();
    auto* records = at<TracepointRecord>(region, *records_at);

    bytecode::HelperAddresses helpers;
    helpers.read = h.helpers[0];
    helpers.reg = h.helpers[1];
    helpers.getv = h.helpers[2];
    helpers.setv = h.helpers[3];
    helpers.tracev = h.helpers[4];
    helpers.trace = h.helpers[5];
    helpers.tracenz = h.helpers[6];
    helpers.printf = 0; // never in the program
    std::uint64_t code_near = 0;
    auto fill_expression = [&](ActionRecord& a, const trace::Expression& e) -> Status {
        const auto insns = e.program.insns();
        auto code = area.take<bytecode::Insn>(insns.size());
        if (!code) return code.error();
        std::memcpy(at<bytecode::Insn>(region, *code), insns.data(), insns.size_bytes());
        a.kind = ActionKind::Expression;
        a.insns_offset = *code;
        a.insn_count = static_cast<std::uint32_t>(insns.size());
        a.backward_jump_budget = e.program.backward_jump_budget();
        // Native code when the compiler takes it and there is pad room; else interpreted.
        a.compiled = 0;
        auto native = tpagent::arch::host_compiler_backend().translate(e.program, helpers);
        if (native) {
            if (auto placed = inferior.place_code(code_near, *native)) a.compiled = *placed;
        }
        if (!a.compiled)
            spdlog::debug("fast tracepoint expression interpreted: {}",
                          native ? "no room in the program" : native.error().text);
        return ok_status();
    };

    std::map<std::uint64_t, TracepointRecord*> last_at; // chain records sharing an address
    for (std::size_t i = 0; i < fast.size(); ++i) {
        const auto& def = fast[i]->definition;
        code_near = def.key.address;
        TracepointRecord& rec = records[i];
        rec.number = def.key.number;
        rec.enabled = 1;
        rec.address = def.key.address;
        rec.pass_count = def.pass_count;
        rec.pass_hits.store(0, std::memory_order_relaxed);
        rec.next = 0;
        if (def.condition) {
            if (auto s = fill_expression(rec.condition, *def.condition); !s) return s;
            rec.has_condition = 1;
        }
        std::vector<const trace::Action*> actions;
        for (const auto& string : def.actions)
            for (const auto& action : string.actions)
                actions.push_back(&action);
        auto actions_at = area.take<ActionRecord>(actions.size());
        if (!actions_at) return actions_at.error();
        rec.actions_offset = *actions_at;
        rec.action_count = static_cast<std::uint32_t>(actions.size());
        std::uint64_t bound = sizeof(RecordHeader) + kFrameHeaderBytes + 7;
        auto* out = at<ActionRecord>(region, *actions_at);
        for (std::size_t k = 0; k < actions.size(); ++k) {
            const trace::Action& action = *actions[k];
            if (const auto* mask = std::get_if<trace::RegisterMask>(&action)) {
                out[k].kind = ActionKind::Registers;
                if (!mask->bytes.empty())
                    bound += 1 + core;
                else
                    out[k].kind = static_cast<ActionKind>(0); // empty mask: nothing
            } else if (const auto* range = std::get_if<trace::MemoryRange>(&action)) {
                out[k].kind = ActionKind::Memory;
                out[k].base_register = range->base_register;
                out[k].offset = range->offset;
                out[k].length = range->length;
                bound += range->length + 11 * (range->length / 0xffff + 1);
            } else if (const auto* e = std::get_if<trace::Expression>(&action)) {
                if (auto s = fill_expression(out[k], *e); !s) return s;
                bound += kExpressionAllowance;
            }
        }
        rec.frame_bound = bound & ~std::uint64_t{7};
        if (rec.frame_bound > kChunkPayload)
            return make_error(ErrorCode::TooLarge,
                              fmt::format("fast tracepoint {} collects up to {} bytes per hit; "
                                          "the in-process agent takes at most {}",
                                          def.key.number, rec.frame_bound, kChunkPayload));
        fast_tps_.push_back(fast[i]);
        const std::uint64_t offset = *records_at + i * sizeof(TracepointRecord);
        if (auto it = last_at.find(rec.address); it != last_at.end())
            it->second->next = offset;
        else
            fast_first_record_[rec.address] = offset;
        last_at[rec.address] = &rec;
    }
    return ok_status();
}

Status TraceExperiment::install_fast(Inferior& inferior, std::uint64_t addr) {
    auto first = fast_first_record_.find(addr);
    if (first == fast_first_record_.end()) return ok_status();
    const Header& h = inproc_->header();
    auto s = inferior.add_fast_site(addr, h.collector, inproc_->remote(first->second),
                                    h.general_registers_only == 0);
    if (!s)
        return make_error(s.error().code,
                          fmt::format("fast tracepoint at 0x{:x}: {}", addr, s.error().text));
    return s;
}

// QTStart with gdb relocating: the next site's pad, or, with none left, the trace runs.
Status TraceExperiment::next_gdb_site(Inferior& inferior) {
    gdb_move_.reset();
    if (gdb_sites_.empty()) {
        begin_run(true);
        return ok_status();
    }
    const std::uint64_t addr = gdb_sites_.front();
    const Header& h = inproc_->header();
    auto first = fast_first_record_.find(addr);
    Result<Inferior::InstructionMove> move =
        make_error(ErrorCode::NotFound, "no record for it in the in-process agent");
    if (first != fast_first_record_.end())
        move = inferior.begin_fast_site(addr, h.collector, inproc_->remote(first->second),
                                        h.general_registers_only == 0);
    if (!move) {
        gdb_sites_.clear();
        uninstall_all(&inferior);
        return make_error(move.error().code,
                          fmt::format("fast tracepoint at 0x{:x}: {}", addr, move.error().text));
    }
    gdb_move_ = *move;
    return ok_status();
}

Status TraceExperiment::relocated(Inferior* inferior, std::optional<std::uint64_t> length) {
    if (!gdb_move_) return make_error(ErrorCode::NotAllowed, "no instruction relocation pending");
    const std::uint64_t addr = gdb_sites_.front();
    const std::uint64_t from = gdb_move_->from;
    auto fail = [&](const Error& e) -> Status {
        abandon_relocation(inferior);
        return make_error(e.code, fmt::format("fast tracepoint at 0x{:x}: {}", addr, e.text));
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

void TraceExperiment::abandon_relocation(Inferior* inferior) {
    if (!gdb_move_ && gdb_sites_.empty()) return;
    gdb_move_.reset();
    gdb_sites_.clear();
    if (inferior) inferior->abandon_fast_site();
    uninstall_all(inferior);
}

void TraceExperiment::drain_fast() {
    if (!inproc_) return;
    const std::uint32_t core = inproc_->header().core_register_bytes;
    inproc_->drain([&](const RecordHeader& rh, std::span<const std::uint8_t> staged) {
        if (rh.index >= fast_tps_.size() || !running_) return;
        // Stored as staged, with its short R block; raw reads (qTBuffer, tsave) widen it.
        const auto stored = buffer_.commit_bytes(staged, rh.pc, core);
        if (stored == trace::TraceFrameBuffer::Commit::Full) {
            inproc_->header().tracing.store(0, std::memory_order_release);
            std::uint32_t none = 0;
            inproc_->header().stop_reason.compare_exchange_strong(
                none, static_cast<std::uint32_t>(StopReason::BufferFull));
            return;
        }
        if (stored != trace::TraceFrameBuffer::Commit::Stored) return;
        trace::Tracepoint& tp = *fast_tps_[rh.index];
        ++tp.counters.hits;
        tp.counters.bytes_used += buffer_.info(buffer_.frame_count() - 1)->size;
    });
}

void TraceExperiment::pull_fast_variables() {
    if (!inproc_) return;
    const auto* vars = at<const Variable>(inproc_->local(), kVariablesOffset);
    for (std::uint32_t n : variables_.numbers())
        if (n < kMaxVariables && vars[n].defined && !vars[n].timestamp)
            variables_.set(n, vars[n].value.load(std::memory_order_relaxed));
}

void TraceExperiment::poll(Inferior* inferior) {
    if (fast_removal_pending_ && inferior && inferior->alive() && !inferior->running())
        remove_fast_sites(inferior);
    if (!fast_running()) return;
    drain_fast();
    pull_fast_variables();
    const Header& h = inproc_->header();
    const auto why = static_cast<StopReason>(h.stop_reason.load(std::memory_order_acquire));
    switch (why) {
    case StopReason::None:
    case StopReason::Stopping: // the details are still being written
        return;
    case StopReason::BufferFull:
        stop_with("tfull:0", inferior);
        return;
    case StopReason::PassCount:
        stop_with(fmt::format("tpasscount:{:x}", h.stop_tracepoint), inferior);
        return;
    case StopReason::Error: {
        const auto status = static_cast<bytecode::EvalStatus>(h.stop_status);
        const std::string text =
            fmt::format("{} (0x{:x})", bytecode::to_string(status), h.stop_address);
        stop_with(fmt::format("terror:{}:{:x}", protocol::to_hex(text), h.stop_tracepoint),
                  inferior);
        return;
    }
    }
}

// The trace stops: collectors return at once from now on; frames already staged are kept.
void TraceExperiment::stop_fast(Inferior* inferior) {
    if (!inproc_ || !fast_installed_) return;
    inproc_->header().tracing.store(0, std::memory_order_release);
    drain_fast();
    pull_fast_variables();
    fast_installed_ = false;
    fast_removal_pending_ = true;
    if (inferior && inferior->alive() && !inferior->running()) remove_fast_sites(inferior);
}

// Only while the program is stopped: a jump is never rewritten under a running thread. Until
// then the jumps stay and the collector returns at once.
void TraceExperiment::remove_fast_sites(Inferior* inferior) {
    inferior->remove_all_fast_sites();
    fast_removal_pending_ = false;
}

} // namespace tpagent::agent
