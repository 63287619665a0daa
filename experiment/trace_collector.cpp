// What happens when a thread reaches a trap tracepoint: condition, actions, frame, counters.
// The thread is stopped (one ptrace stop per hit); registers are read once and shared by the
// condition and the actions.
//
// Static tracepoints (`strace`): each probes the SDT marker at its address. They are collected
// through trap sites like `trace` tracepoints; what is theirs is the marker's semaphore, raised
// while the run lasts so that probes guarded by it fire, and `$_sdata`, the marker's arguments.
#include "experiment/trace_experiment.hpp"
#include "arch/g_register.hpp"
#include "bytecode/context.hpp"
#include "bytecode/interpreter.hpp"
#include "protocol/hex.hpp"
#include "trace/static_data.hpp"
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tpagent::experiment {

namespace {

// One evaluation's view of the stopped thread, for the bytecode callbacks.
struct HitContext {
    process::Target& inferior;
    pid_t tid; // the collecting thread: $trace_thread (its process: $trace_pid)
    const arch::Architecture& arch;
    std::span<const std::uint8_t> g;
    const std::vector<bool>& available;
    trace::TraceStateVariables& variables;
    trace::FrameBuilder& frame;
    std::vector<std::uint8_t> scratch;
};

bool read_memory(void* user, std::uint64_t addr, void* out, std::size_t len) {
    auto* c = static_cast<HitContext*>(user);
    auto got = c->inferior.read_memory(addr, std::span(static_cast<std::uint8_t*>(out), len));
    return got && *got == len;
}

bool read_register(void* user, unsigned regnum, std::uint64_t* value) {
    auto* c = static_cast<HitContext*>(user);
    auto v = arch::g_register(c->arch, c->g, c->available, regnum);
    if (v) *value = *v;
    return v.has_value();
}

bool get_tsv(void* user, unsigned num, std::int64_t* value) {
    auto* c = static_cast<HitContext*>(user);
    auto v =
        c->variables.get(num, trace::TraceStateVariables::Collecting{c->tid, c->inferior.pid()});
    if (!v) return false;
    *value = *v;
    return true;
}

bool set_tsv(void* user, unsigned num, std::int64_t value) {
    return static_cast<HitContext*>(user)->variables.set(num, value);
}

// Memory that cannot be read is left out of the frame (shown as unavailable), never fatal.
void collect_range(HitContext& c, std::uint64_t addr, std::uint64_t len) {
    constexpr std::uint64_t kMaxCollect = 1 << 20;
    len = std::min(len, kMaxCollect);
    c.scratch.resize(len);
    auto got = c.inferior.read_memory(addr, c.scratch);
    if (got && *got > 0) c.frame.add_memory(addr, std::span(c.scratch.data(), *got));
}

bool collect_memory(void* user, std::uint64_t addr, std::uint64_t len) {
    collect_range(*static_cast<HitContext*>(user), addr, len);
    return true;
}

bool collect_tsv(void* user, unsigned num, std::int64_t value) {
    static_cast<HitContext*>(user)->frame.add_variable(num, value);
    return true;
}

bytecode::Context make_context(HitContext& c) {
    bytecode::Context ctx;
    ctx.user = &c;
    ctx.read_memory = read_memory;
    ctx.read_register = read_register;
    ctx.get_tsv = get_tsv;
    ctx.set_tsv = set_tsv;
    ctx.collect_memory = collect_memory;
    ctx.collect_tsv = collect_tsv;
    return ctx;
}

std::string error_text(const bytecode::Program& program, bytecode::EvalStatus status,
                       const bytecode::EvalOut& out) {
    return bytecode::describe_failure(program, status, out).text;
}

} // namespace

process::TrapSites::SiteHit TraceExperiment::on_hit(process::Target& inferior, pid_t tid,
                                                    std::uint64_t addr) {
    process::TrapSites::SiteHit result;
    result.consumed = true;
    if (!running_ || stop_after_steps_) return result;
    for (auto& [key, tp] : table_.all()) {
        if (key.address != addr || !tp.definition.enabled) continue;
        auto* live = table_.find(key);
        const std::uint64_t hits = live->counters.hits;
        if (!collect(inferior, tid, *live, live->definition.actions, false)) break;
        if (live->counters.hits != hits && on_trap_hit_) on_trap_hit_(key.number);
        const auto& def = live->definition;
        if (def.step_count > 0 && !def.stepping_actions.empty() && running_) {
            result.steps = def.step_count;
            stepping_[tid] = {key, def.step_count};
        }
        if (def.pass_count > 0 && live->counters.hits >= def.pass_count) {
            if (result.steps > 0)
                stop_after_steps_ = passcount_reached(key.number);
            else
                stop_with(passcount_reached(key.number), &inferior);
            break;
        }
    }
    return result;
}

void TraceExperiment::on_step(process::Target& inferior, pid_t tid, std::uint64_t) {
    auto it = stepping_.find(tid);
    if (!running_ || it == stepping_.end()) return;
    auto* tp = table_.find(it->second.key);
    if (tp && !collect(inferior, tid, *tp, tp->definition.stepping_actions, true)) return;
    if (--it->second.left == 0) stepping_.erase(it);
    if (stop_after_steps_ && stepping_.empty()) {
        auto reason = std::move(*stop_after_steps_);
        stop_with(std::move(reason), &inferior);
    }
}

bool TraceExperiment::collect(process::Target& inferior, pid_t tid, trace::Tracepoint& tp,
                              const std::vector<trace::ActionString>& actions, bool step) {
    // The vector/FP state is fetched only when a register block is collected.
    bool all_registers = false;
    for (const auto& string : actions)
        for (const auto& action : string.actions)
            if (const auto* mask = std::get_if<trace::RegisterMask>(&action);
                mask && !mask->bytes.empty())
                all_registers = true;
    std::vector<bool> available;
    auto g = inferior.registers().read(tid, available, all_registers);
    if (!g) {
        stop_with(trace_error(g.error().text, tp.definition.key.number), &inferior);
        return false;
    }
    HitContext c{inferior, tid, arch_, *g, available, variables_, builder_, {}};
    bytecode::Context ctx = make_context(c);
    const auto number = tp.definition.key.number;

    if (!step && tp.definition.condition) {
        bytecode::EvalOut out;
        auto status = bytecode::run(tp.definition.condition->program, ctx, out);
        if (status != bytecode::EvalStatus::Ok) {
            stop_with(
                trace_error(error_text(tp.definition.condition->program, status, out), number),
                &inferior);
            return false;
        }
        if (out.value == 0) return true;
    }

    builder_.start(static_cast<std::uint16_t>(number));
    for (const auto& string : actions) {
        for (const auto& action : string.actions) {
            if (const auto* mask = std::get_if<trace::RegisterMask>(&action)) {
                if (!mask->bytes.empty() && !builder_.add_registers(*g))
                    spdlog::warn("tracepoint {}: register block of the wrong size", number);
            } else if (const auto* range = std::get_if<trace::MemoryRange>(&action)) {
                std::uint64_t base = 0;
                if (!range->absolute() &&
                    !read_register(&c, static_cast<unsigned>(range->base_register), &base))
                    continue;
                collect_range(c, base + range->offset, range->length);
            } else if (std::holds_alternative<trace::StaticData>(action)) {
                // `collect $_sdata`: the marker's arguments (static tracepoints only, as gdb
                // documents: ignored for the others)
                if (tp.definition.kind != trace::TracepointKind::Static) continue;
                const auto data = static_data(
                    tp.definition.key.address,
                    [&](int regnum, std::uint64_t* value) {
                        return regnum >= 0 &&
                               read_register(&c, static_cast<unsigned>(regnum), value);
                    },
                    inferior);
                if (!data.empty()) builder_.add_static_data(data);
            } else if (const auto* expr = std::get_if<trace::Expression>(&action)) {
                bytecode::EvalOut out;
                auto status = bytecode::run(expr->program, ctx, out);
                if (status != bytecode::EvalStatus::Ok &&
                    status != bytecode::EvalStatus::MemoryError) {
                    stop_with(trace_error(error_text(expr->program, status, out), number),
                              &inferior);
                    return false;
                }
            }
        }
    }
    std::uint64_t pc = 0; // indexes the frame for tfind pc/range
    read_register(&c, static_cast<unsigned>(arch_.pc_regnum()), &pc);
    auto stored = buffer_.commit(builder_, pc);
    // Recording: the buffer is transit; the recording takes what is in it, then the frame
    // goes in, or is counted as not collected (the disk behind) and the trace goes on.
    if (stored == trace::TraceFrameBuffer::Commit::Full && recording_) {
        if (make_room_) make_room_();
        stored = buffer_.commit(builder_, pc);
        if (stored == trace::TraceFrameBuffer::Commit::Full) {
            ++dropped_trap_frames_;
            // A hit all the same, as a fast tracepoint's dropped frame is one.
            if (!step) table_.record_hit(tp.definition.key, 0);
            return true;
        }
    }
    if (stored == trace::TraceFrameBuffer::Commit::Full) {
        stop_with({TraceStopReason::Kind::Full, {}, 0}, &inferior);
        return false;
    }
    if (step)
        table_.record_step(tp.definition.key, builder_.size());
    else
        table_.record_hit(tp.definition.key, builder_.size());
    return true;
}

// Static tracepoints.
namespace {

// Adds `delta` to the 2-byte semaphore at `addr`.
Status add_to_semaphore(process::Target& inferior, std::uint64_t addr, int delta) {
    std::uint8_t bytes[2] = {};
    auto got = inferior.read_memory(addr, bytes);
    if (!got || *got != sizeof bytes)
        return make_error(ErrorCode::MemoryAccess,
                          fmt::format("cannot read the semaphore at 0x{:x}", addr));
    const auto value = static_cast<std::uint16_t>((bytes[0] | bytes[1] << 8) + delta);
    const std::uint8_t now[2] = {static_cast<std::uint8_t>(value),
                                 static_cast<std::uint8_t>(value >> 8)};
    return inferior.write_memory(addr, now);
}

} // namespace

Status TraceExperiment::probe_marker(process::Target& inferior, const trace::Tracepoint& tp) {
    const std::uint64_t addr = tp.definition.key.address;
    if (probed_markers_.count(addr)) return ok_status(); // another tracepoint probes it
    for (process::StaticMarker& m : inferior.static_markers()) {
        if (m.address != addr) continue;
        if (m.semaphore) {
            if (auto s = add_to_semaphore(inferior, m.semaphore, 1); !s) return s;
            raised_semaphores_.push_back(m.semaphore);
        }
        probed_markers_.emplace(addr, std::move(m));
        return ok_status();
    }
    return make_error(ErrorCode::NotFound,
                      fmt::format("static tracepoint {}: no static tracepoint marker at 0x{:x}",
                                  tp.definition.key.number, addr));
}

void TraceExperiment::lower_semaphores(process::Target* inferior) {
    if (inferior && inferior->alive())
        for (std::uint64_t addr : raised_semaphores_)
            if (auto s = add_to_semaphore(*inferior, addr, -1); !s)
                spdlog::debug("{}", s.error().text);
    raised_semaphores_.clear();
    probed_markers_.clear();
}

std::vector<std::uint8_t> TraceExperiment::static_data(
    std::uint64_t addr, const std::function<bool(int regnum, std::uint64_t* value)>& read_register,
    process::Target& inferior) const {
    auto it = probed_markers_.find(addr);
    if (it == probed_markers_.end()) return {};
    auto read_memory = [&](std::uint64_t at, void* out, unsigned size) {
        auto got = inferior.read_memory(at, std::span(static_cast<std::uint8_t*>(out), size));
        return got && *got == size;
    };
    std::vector<std::uint8_t> text(1024);
    trace::StaticDataWriter writer(reinterpret_cast<char*>(text.data()), text.size());
    for (const arch::SdtArgument& a : it->second.decoded) {
        std::uint64_t value = 0;
        if (arch::sdt_argument_value(a, read_register, read_memory, &value))
            writer.argument(value, a.size, a.is_signed);
        else
            writer.unknown();
    }
    text.resize(writer.finish());
    return text;
}

} // namespace tpagent::experiment
