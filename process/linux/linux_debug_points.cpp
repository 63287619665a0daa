#include "process/linux/linux_debug_points.hpp"
#include "arch/g_register.hpp"
#include "bytecode/context.hpp"
#include "bytecode/interpreter.hpp"
#include <algorithm>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tpagent::process {

Status LinuxDebugPoints::insert_breakpoint(std::uint64_t addr, BreakpointCode code) {
    // Inserted anew (its conditions may have changed), or inside another's jump: such a
    // breakpoint is an instruction again (evaluated in the program again, if it can, by the
    // caller).
    fast_sites_.uncarry_within(addr, 1);
    if (!memory_.user_breakpoint_at(addr)) {
        if (const auto fast = fast_sites_.covering(addr); fast && fast->site != addr)
            return make_error(ErrorCode::NotAllowed,
                              fmt::format("0x{:x} is inside the {} bytes of instructions the "
                                          "fast tracepoint at 0x{:x} runs from its pad: no "
                                          "thread runs them there",
                                          addr, fast->covered, fast->site));
    }
    // (Again where it is already: one whose code was replaced under it goes back in.)
    if (auto s = memory_.insert_user_breakpoint(addr); !s) return s;
    // gdb sends the whole list again whenever it changes: this one replaces the last.
    if (code.empty()) {
        code_.erase(addr);
        return ok_status();
    }
    code_[addr] = std::move(code);
    // Threads whose hit is not gdb's go on through a copy of the instruction: a breakpoint
    // lifted for one to step over would let the others by unseen, their conditions unchecked.
    if (auto pad = trap_sites_.passing_pad(addr); !pad)
        spdlog::debug("breakpoint at 0x{:x}: {}; threads step over it in place", addr,
                      pad.error().text);
    return ok_status();
}

Status LinuxDebugPoints::remove_breakpoint(std::uint64_t addr) {
    code_.erase(addr);
    if (memory_.carried(addr)) fast_sites_.remove(addr); // its jump; the breakpoint below
    return memory_.remove_user_breakpoint(addr);
}

Status LinuxDebugPoints::carry_breakpoint(std::uint64_t addr, std::uint64_t entry,
                                          std::uint64_t record, arch::FastPadOptions options) {
    if (!memory_.user_breakpoint_at(addr) || memory_.carried(addr))
        return make_error(ErrorCode::NotFound,
                          fmt::format("no breakpoint instruction of gdb's at 0x{:x}", addr));
    if (trap_sites_.has(addr))
        return make_error(ErrorCode::NotAllowed,
                          fmt::format("a trap tracepoint is at 0x{:x}", addr));
    if (auto s = fast_sites_.add_carrier(addr, entry, record, options); !s) return s;
    // The jump went in under the breakpoint instruction, which now goes.
    if (auto s = memory_.carry_user_breakpoint(addr); !s) {
        fast_sites_.remove(addr);
        return s;
    }
    return ok_status();
}

bool LinuxDebugPoints::persistent_commands() const {
    return std::any_of(code_.begin(), code_.end(), [this](const auto& entry) {
        return entry.second.persist && !entry.second.commands.empty() &&
               memory_.user_breakpoint_at(entry.first);
    });
}

namespace {
// The stopped thread, as the agent expressions of a breakpoint see it.
struct HitView {
    Target& target;
    const arch::Architecture& arch;
    std::span<const std::uint8_t> g;
    const std::vector<bool>& available;
    const DebugPoints::CommandOutput& output;
};

bool read_memory(void* user, std::uint64_t addr, void* out, std::size_t len) {
    auto* v = static_cast<HitView*>(user);
    auto got = v->target.read_memory(addr, std::span(static_cast<std::uint8_t*>(out), len));
    return got && *got == len;
}

bool read_register(void* user, unsigned regnum, std::uint64_t* value) {
    auto* v = static_cast<HitView*>(user);
    auto word = arch::g_register(v->arch, v->g, v->available, regnum);
    if (word) *value = *word;
    return word.has_value();
}

bool print(void* user, const char* text, std::size_t len) {
    auto* v = static_cast<HitView*>(user);
    if (v->output) v->output(std::string_view(text, len));
    return true;
}
} // namespace

bool LinuxDebugPoints::reports_hit(Target& target, pid_t tid, std::uint64_t addr, bool hardware) {
    const auto& codes = hardware ? hw_code_ : code_;
    auto it = codes.find(addr);
    if (it == codes.end()) return true;
    const BreakpointCode& code = it->second;
    std::vector<bool> available;
    auto g = target.registers().read(tid, available, false);
    if (!g) {
        spdlog::warn("thread {}: breakpoint at 0x{:x}: {}; gdb is told of the hit", tid, addr,
                     g.error().text);
        return true;
    }
    HitView view{target, arch_, *g, available, output_};
    bytecode::Context context;
    context.user = &view;
    context.read_memory = read_memory;
    context.read_register = read_register;
    context.print = print;
    // As gdbserver: a condition that cannot be evaluated holds, so that gdb sees the hit
    // rather than tpagent deciding for it on a half-read value.
    bool holds = code.conditions.empty();
    for (const auto& condition : code.conditions) {
        auto value = bytecode::evaluate(condition, context);
        if (!value)
            spdlog::warn("thread {}: condition of the breakpoint at 0x{:x}: {}", tid, addr,
                         value.error().text);
        if (!value || *value != 0) {
            holds = true;
            break;
        }
    }
    if (!holds) return false;
    for (const auto& command : code.commands)
        if (auto r = bytecode::evaluate(command, context); !r) {
            spdlog::warn("thread {}: command of the breakpoint at 0x{:x}: {}", tid, addr,
                         r.error().text);
            break; // as gdbserver: the rest would build on what failed
        }
    return code.commands.empty();
}

Status LinuxDebugPoints::insert_hw_point(int type, std::uint64_t addr, std::uint64_t len,
                                         BreakpointCode code) {
    if (!code.empty()) {
        if (type != 1)
            return make_error(ErrorCode::NotAllowed,
                              "conditions and commands go with breakpoints, not watchpoints");
        // A hit not gdb's cannot step over a debug register: it goes through the copy.
        if (auto pad = trap_sites_.passing_pad(addr); !pad)
            return make_error(pad.error().code,
                              fmt::format("hardware breakpoint at 0x{:x} with a condition: {}",
                                          addr, pad.error().text));
    }
    if (type == 1 && hw_breakpoints_.count(addr)) { // gdb re-sends it when its code changes
        if (code.empty())
            hw_code_.erase(addr);
        else
            hw_code_[addr] = std::move(code);
        return ok_status();
    }
    if (auto s = hw_.insert(type, addr, len); !s) return s;
    for (auto& [tid, t] : threads_) {
        if (!t.kernel.stopped()) continue;
        if (auto a = hw_.apply(tid); !a) {
            // Refused as a whole: no thread keeps half of it.
            if (auto r = hw_.remove(type, addr, len); r)
                for (auto& [other, ot] : threads_)
                    if (ot.kernel.stopped() && !hw_.apply(other))
                        spdlog::warn("thread {}: debug registers not restored", other);
            return a;
        }
    }
    if (type == 1) {
        hw_breakpoints_.insert(addr);
        if (!code.empty()) hw_code_[addr] = std::move(code);
    }
    return ok_status();
}

Status LinuxDebugPoints::remove_hw_point(int type, std::uint64_t addr, std::uint64_t len) {
    if (auto s = hw_.remove(type, addr, len); !s) return s;
    if (type == 1) {
        hw_code_.erase(addr);
        hw_breakpoints_.erase(addr);
    }
    Status all = ok_status();
    for (auto& [tid, t] : threads_)
        if (t.kernel.stopped())
            if (auto a = hw_.apply(tid); !a && all) all = a; // the rest still go
    return all;
}

} // namespace tpagent::process
