// Registers, memory and breakpoints of the stopped inferior.
#include "process/target.hpp"
#include "server/packet_handlers.hpp"
#include "server/server.hpp"
#include "server/session.hpp"
#include "arch/arch.hpp"
#include "bytecode/program.hpp"
#include "protocol/hex.hpp"
#include "protocol/replies.hpp"
#include "protocol/requests.hpp"
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tpagent::server {

using namespace protocol;

namespace {

// Registers the snapshot does not hold are sent as "xx" (RSP: unavailable).
void append_register(std::string& out, std::span<const std::uint8_t> bytes, bool available) {
    if (available)
        append_hex(out, bytes);
    else
        out.append(bytes.size() * 2, 'x');
}
// While a trace frame is selected, registers come from its R block. Without one, every register
// is unavailable except the pc, which is the tracepoint's address (as gdbserver does).
std::vector<std::uint8_t> frame_registers(Session& s, std::vector<bool>& available) {
    const auto& arch = arch::host_architecture();
    auto& buffer = s.server().experiment().buffer();
    std::vector<std::uint8_t> g(arch.g_size());
    available.assign(arch.registers().size(), false);
    auto frame = buffer.frame(*s.trace_frame());
    auto info = buffer.info(*s.trace_frame());
    if (frame) {
        const bool full = !info || info->registers_valid == 0;
        // A short block may be longer than g: saved FP/vector state is placed, not copied.
        if (auto regs = frame->registers(); regs && (!full || regs->size() <= g.size())) {
            if (full)
                std::copy(regs->begin(), regs->end(), g.begin());
            else
                info->short_block.place(*regs, g);
            const auto descs = arch.registers();
            const auto holds = info->short_block.holds_in(*regs);
            for (std::size_t i = 0; i < descs.size(); ++i)
                available[i] = full || holds(descs[i].g_offset, descs[i].size);
            return g;
        }
    }
    if (info) {
        const auto& pc = arch.registers()[static_cast<std::size_t>(arch.pc_regnum())];
        for (std::size_t i = 0; i < pc.size && i < 8; ++i)
            g[pc.g_offset + i] = static_cast<std::uint8_t>(info->pc >> (8 * i));
        available[static_cast<std::size_t>(arch.pc_regnum())] = true;
    }
    return g;
}

Result<std::vector<std::uint8_t>> registers_of(Session& s, std::vector<bool>& available) {
    if (s.trace_frame()) return frame_registers(s, available);
    auto* inf = s.addressed();
    if (!inf) return make_error(ErrorCode::NoProcess, "no process");
    return inf->registers().read(s.addressed_thread(*inf), available);
}

std::string refuse_in_frame() {
    return reply_error(ErrorCode::NotAllowed); // a trace frame is history: nothing to write
}
} // namespace

std::string handle_read_registers(Session& s, std::string_view) {
    std::vector<bool> avail;
    auto g = registers_of(s, avail);
    if (!g) return reply_error(g.error());
    std::string out;
    out.reserve(g->size() * 2);
    const auto regs = arch::host_architecture().registers();
    for (std::size_t i = 0; i < regs.size(); ++i)
        append_register(out, std::span(g->data() + regs[i].g_offset, regs[i].size),
                        i < avail.size() && avail[i]);
    return out;
}

std::string handle_write_registers(Session& s, std::string_view args) {
    if (s.trace_frame()) return refuse_in_frame();
    auto* inf = s.addressed();
    if (!inf) return reply_error(ErrorCode::NoProcess);
    auto bytes = from_hex(args);
    if (!bytes) return reply_error(bytes.error());
    auto w = inf->registers().write(s.addressed_thread(*inf), *bytes);
    return w ? reply_ok() : reply_error(w.error());
}

std::string unknown_register(const Error&) {
    return reply_error(ErrorCode::NotFound);
}

std::string handle_read_register(Session& s, const PacketArgs& args) {
    const std::uint64_t n = args.number(0);
    const auto regs = arch::host_architecture().registers();
    if (n >= regs.size()) return reply_error(ErrorCode::NotFound);
    std::vector<bool> avail;
    auto g = registers_of(s, avail);
    if (!g) return reply_error(g.error());
    std::string out;
    const auto& r = regs[n];
    append_register(out, std::span(g->data() + r.g_offset, r.size), n < avail.size() && avail[n]);
    return out;
}

std::string handle_write_register(Session& s, std::string_view args) {
    if (s.trace_frame()) return refuse_in_frame();
    auto* inf = s.addressed();
    if (!inf) return reply_error(ErrorCode::NoProcess);
    std::size_t eq = args.find('=');
    if (eq == std::string_view::npos) return reply_error(ErrorCode::BadPacket);
    auto n = parse_hex_u64(args.substr(0, eq));
    auto value = from_hex(args.substr(eq + 1));
    if (!n || !value || *n > 0x10000) return reply_error(ErrorCode::BadPacket);
    auto w = inf->registers().write_one(s.addressed_thread(*inf), static_cast<int>(*n), *value);
    return w ? reply_ok() : reply_error(w.error());
}

std::string handle_read_memory(Session& s, std::string_view args) {
    auto range = parse_memory_range(args);
    if (!range) return reply_error(range.error());
    // The reply is hex: two characters per byte must fit in a packet.
    std::uint64_t len = std::min<std::uint64_t>(range->length, kPacketSize / 2);
    std::vector<std::uint8_t> buf(len);
    auto* inf = s.live_inferior();
    if (s.trace_frame()) {
        // Collected memory first; else the read-only image of the program's executable and
        // libraries (what QTro means, at the addresses the program has it), from the live
        // program, as far as that image goes.
        auto frame = s.server().experiment().buffer().frame(*s.trace_frame());
        std::size_t got = frame ? frame->read_memory(range->addr, buf) : 0;
        if (got > 0) return to_hex(std::span(buf.data(), got));
        len = inf ? inf->read_only_image_extent(range->addr, len) : 0;
        if (len == 0) return reply_error(ErrorCode::MemoryAccess);
        buf.resize(len);
    }
    if (!s.trace_frame()) inf = s.addressed(); // (a forked child's copy, say)
    if (!inf) return reply_error(ErrorCode::NoProcess);
    auto got = inf->read_memory(range->addr, buf);
    if (!got) return reply_error(got.error());
    return to_hex(std::span(buf.data(), *got));
}

namespace {
std::string write_memory(Session& s, const Result<MemoryWrite>& w) {
    if (!w) return reply_error(w.error());
    if (s.trace_frame()) return refuse_in_frame();
    auto* inf = s.addressed();
    if (!inf) return reply_error(ErrorCode::NoProcess);
    auto st = inf->write_memory(w->addr, w->bytes);
    return st ? reply_ok() : reply_error(st.error());
}
} // namespace

std::string handle_write_memory_hex(Session& s, std::string_view args) {
    return write_memory(s, parse_memory_write_hex(args));
}

std::string handle_write_memory_binary(Session& s, std::string_view args) {
    return write_memory(s, parse_memory_write_binary(args));
}

namespace {
// Z and z: `change` sets or clears the point on the live process. Hardware points we cannot
// set get the empty reply, so gdb falls back (RSP `Z` packets).
// A process that ended, its end not reported yet, has no code left to run: gdb clearing (at a
// stop) or setting (at a resume) a point there, as in every process, has nothing to do.
template <typename Change>
std::string change_point(Session& s, std::string_view args, const Change& change) {
    auto bp = parse_breakpoint(args);
    if (!bp) return reply_error(bp.error());
    auto* inf = s.addressed();
    if (!inf && s.addresses_ended_process()) return reply_ok();
    if (!inf) return reply_error(ErrorCode::NoProcess);
    const Status st = change(*inf, *bp);
    if (!st && st.error().code == ErrorCode::Unsupported) return reply_empty();
    return st ? reply_ok() : reply_error(st.error());
}
} // namespace

namespace {
// A Z0's conditions and commands, validated as tracepoint conditions are.
Result<process::BreakpointCode> breakpoint_code(const BreakpointRequest& bp) {
    const auto register_count = static_cast<unsigned>(arch::host_architecture().registers().size());
    process::BreakpointCode code;
    code.persist = bp.persist;
    const auto validate_all = [register_count](const auto& all, std::string_view what,
                                               std::vector<bytecode::Program>& out) -> Status {
        for (const auto& bytes : all) {
            auto program = bytecode::validate(bytes, register_count);
            if (!program)
                return make_error(ErrorCode::BadBytecode,
                                  fmt::format("breakpoint {}: {}", what, program.error().text));
            out.push_back(std::move(*program));
        }
        return ok_status();
    };
    if (auto v = validate_all(bp.conditions, "condition", code.conditions); !v) return v.error();
    if (auto v = validate_all(bp.commands, "command", code.commands); !v) return v.error();
    return code;
}
} // namespace

std::string handle_insert_point(Session& s, std::string_view args) {
    return change_point(s, args, [&s](process::Target& inf, const BreakpointRequest& bp) {
        auto code = breakpoint_code(bp);
        if (!code) return Status(code.error());
        if (bp.type != 0)
            return inf.debug_points().insert_hw_point(bp.type, bp.addr, bp.kind, *code);
        const process::BreakpointCode kept = *code;
        Status st = inf.debug_points().insert_breakpoint(bp.addr, std::move(*code));
        // Inside a fast tracepoint's jump: the jump gives way to a trap site, then it fits.
        if (!st && st.error().code == ErrorCode::NotAllowed) {
            if (&inf != s.inferior()) return st; // the trace is the served program's
            auto moved = s.server().experiment().trap_instead_of_jump(inf, bp.addr);
            if (moved && *moved) st = inf.debug_points().insert_breakpoint(bp.addr, kept);
        }
        // Its conditions and commands run in the program where they can (the agent is the
        // served program's); else tpagent evaluates them at each stop, as before.
        if (st && !kept.empty() && &inf == s.inferior()) {
            const char* what = kept.commands.empty() ? "condition" : "code";
            if (auto c = s.server().experiment().carry_breakpoint(inf, bp.addr, kept); c) {
                spdlog::debug("breakpoint at 0x{:x}: its {} runs in the program", bp.addr, what);
                s.server().watch_agent_lines();
            } else {
                spdlog::debug("breakpoint at 0x{:x}: its {} is evaluated by tpagent: {}", bp.addr,
                              what, c.error().text);
            }
        }
        return st;
    });
}

std::string handle_remove_point(Session& s, std::string_view args) {
    // A forked child held for gdb (not taken as a process) had its copy of the code cleaned
    // as it was born: gdb's removals there have nothing left to do.
    if (s.general_thread_is_fork_child()) return reply_ok();
    return change_point(s, args, [&s](process::Target& inf, const BreakpointRequest& bp) {
        if (bp.type == 0 && &inf == s.inferior())
            s.server().experiment().inproc_breakpoints().forget(bp.addr);
        return bp.type == 0 ? inf.debug_points().remove_breakpoint(bp.addr)
                            : inf.debug_points().remove_hw_point(bp.type, bp.addr, bp.kind);
    });
}

// qGetTLSAddr:thread,offset,lm: the address of a thread-local variable, found without
// libthread_db (process/linux/thread_local_storage.cpp); an E.text error says why not.
std::string handle_tls_address(Session& s, const PacketArgs& args) {
    if (s.trace_frame()) return refuse_in_frame();
    auto* inf = s.live_inferior();
    if (!inf) return reply_error(ErrorCode::NoProcess);
    const ThreadId& id = args.thread(0);
    const pid_t tid = id.tid > 0 ? static_cast<pid_t>(id.tid) : s.current_thread();
    if (!inf->has_thread(tid)) return reply_error(ErrorCode::NoProcess);
    if (!s.server().thread_db_reachable())
        return reply_error_text(
            {ErrorCode::Unsupported, "no libthread_db along libthread-db-search-path"});
    auto address = inf->thread_local_address(tid, args.number(1), args.number(2));
    if (!address) return reply_error_text(address.error());
    return fmt::format("{:x}", *address);
}

} // namespace tpagent::server
