#include "experiment/inproc_breakpoints.hpp"
#include "arch/compiler_backend.hpp"
#include "bytecode/printf_flat.hpp"
#include "experiment/shared_buffer.hpp"
#include "inproc/print_ring.hpp"
#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <vector>

namespace tpagent::experiment {

Status InprocBreakpoints::carry(process::Target& inferior, std::uint64_t addr,
                                const process::BreakpointCode& code) {
    if (inferior.pid() != pid_) { // another program, or the same one run again
        forget_image();
        pid_ = inferior.pid();
    }
    Status s = try_carry(inferior, addr, code);
    const char* what = code.commands.empty()     ? "condition"
                       : code.conditions.empty() ? "commands"
                                                 : "condition and commands";
    outcomes_[addr] = {s ? std::string() : s.error().text, what};
    return s;
}

std::vector<std::string> InprocBreakpoints::lines(process::Target* inferior) const {
    std::vector<std::string> out;
    if (!inferior || inferior->pid() != pid_) return out;
    for (const auto& [addr, outcome] : outcomes_) {
        const bool one = std::string_view(outcome.what) == "condition";
        if (inferior->debug_points().carried(addr))
            out.push_back(fmt::format("Breakpoint at 0x{:x}: its {} {} in the program "
                                      "(a jump to its pad).",
                                      addr, outcome.what, one ? "runs" : "run"));
        else
            out.push_back(fmt::format(
                "Breakpoint at 0x{:x}: tpagent evaluates its {} at each stop: {}.", addr,
                outcome.what, outcome.why.empty() ? "a tracepoint took its place" : outcome.why));
    }
    if (commands_carried_ && fast_.agent_of(pid_)) {
        const inproc::PrintRing* ring = inproc::print_ring(fast_.agent()->local());
        out.push_back(fmt::format(
            "dprintf lines printed in the program: {}; the program stopped {} time(s) for "
            "tpagent to make room; {} lost.",
            printed_, ring->waits.load(std::memory_order_relaxed),
            ring->dropped.load(std::memory_order_relaxed)));
    }
    return out;
}

bool InprocBreakpoints::take_printed(const LineSink& print) {
    if (!commands_carried_ || !fast_.agent_of(pid_)) return false;
    void* shared = fast_.agent()->local();
    inproc::read_print_ring(shared, [&](const inproc::PrintSlot& slot) {
        const auto status = static_cast<bytecode::EvalStatus>(slot.status);
        if (status == bytecode::EvalStatus::Ok) {
            print(
                std::string_view(slot.text, std::min<std::size_t>(slot.length, sizeof slot.text)));
            ++printed_;
            return;
        }
        spdlog::warn("command of the breakpoint at 0x{:x}, in the program: {} at offset {} "
                     "(0x{:x})",
                     slot.breakpoint, bytecode::to_string(status), slot.fault_offset,
                     slot.fault_address);
    });
    const inproc::PrintRing* ring = inproc::print_ring(shared);
    const std::uint64_t dropped = ring->dropped.load(std::memory_order_relaxed);
    if (dropped > dropped_said_) {
        print(fmt::format("[tpagent: {} dprintf line(s) lost: the program found their ring full "
                          "while tpagent could not empty it]\n",
                          dropped - dropped_said_));
        dropped_said_ = dropped;
    }
    return true;
}

namespace {
std::vector<std::vector<std::uint8_t>> bytes_of(const std::vector<bytecode::Program>& programs) {
    std::vector<std::vector<std::uint8_t>> out;
    out.reserve(programs.size());
    for (const bytecode::Program& p : programs)
        out.emplace_back(p.bytes().begin(), p.bytes().end());
    return out;
}
} // namespace

Status InprocBreakpoints::try_carry(process::Target& inferior, std::uint64_t addr,
                                    const process::BreakpointCode& code) {
    if (!enabled_) return make_error(ErrorCode::NotAllowed, "`monitor set inproc-breakpoints off`");
    if (code.conditions.empty() && code.commands.empty())
        return make_error(ErrorCode::NotAllowed, "no condition or command to run");
    if (code.conditions.size() > inproc::kMaxBreakpointConditions)
        return make_error(ErrorCode::TooLarge,
                          fmt::format("{} conditions (at most {} run in the program)",
                                      code.conditions.size(), inproc::kMaxBreakpointConditions));
    if (code.commands.size() > inproc::kMaxBreakpointCommands)
        return make_error(ErrorCode::TooLarge,
                          fmt::format("{} commands (at most {} run in the program)",
                                      code.commands.size(), inproc::kMaxBreakpointCommands));
    if (inferior.fast_sites().has(addr))
        return make_error(ErrorCode::NotAllowed, "a fast tracepoint's jump is there");
    // Where no jump can go, nothing is loaded into the program.
    if (auto span = inferior.fast_sites().jump_span(addr); !span) return span.error();
    auto agent = fast_.agent_for_breakpoints(inferior);
    if (!agent) return agent.error();
    const inproc::Header& h = (*agent)->header();
    arch::FastPadOptions options;
    options.stage_full_core = inferior.fast_sites().pads_on_agent_stacks();
    options.save_vector_state = h.general_registers_only == 0;
    auto conditions = bytes_of(code.conditions), commands = bytes_of(code.commands);
    bytecode::StagedRegisterLayout staged = staged_register_layout(h);
    if (auto was = placed_.find(addr);
        was != placed_.end() && was->second.conditions == conditions &&
        was->second.commands == commands && was->second.staged == staged &&
        inferior.fast_sites().keeps_carrier(addr, was->second.record))
        return inferior.debug_points().carry_breakpoint(addr, h.breakpoint_entry,
                                                        was->second.record, options);
    placed_.erase(addr);

    // Native code next to the pad, with its printf formats flattened beside it
    // (rt::printf_flat: the agent formats with no C library).
    auto place = [&](const bytecode::Program& program) -> Result<std::uint64_t> {
        bytecode::FormatAddresses formats;
        if (!program.formats().empty() && h.helpers.printf == 0)
            return make_error(ErrorCode::Unsupported, "the agent in the program has no printf");
        for (const bytecode::PrintfFormat& format : program.formats()) {
            auto at = inferior.fast_sites().place_code(addr, bytecode::flatten(format));
            if (!at) return at.error();
            formats.push_back(*at);
        }
        auto native = arch::host_compiler_backend().translate(program, h.helpers, staged, formats);
        if (!native) return native.error();
        return inferior.fast_sites().place_code(addr, *native);
    };
    inproc::BreakpointRecord record{};
    record.magic = inproc::kBreakpointMagic;
    record.address = addr;
    record.condition_count = static_cast<std::uint32_t>(code.conditions.size());
    record.command_count = static_cast<std::uint32_t>(code.commands.size());
    for (std::size_t i = 0; i < code.conditions.size(); ++i) {
        auto placed = place(code.conditions[i]);
        if (!placed) return placed.error();
        record.conditions[i] = *placed;
        if (reads_completed_register(h, code.conditions[i])) record.complete_block = 1;
    }
    for (std::size_t i = 0; i < code.commands.size(); ++i) {
        auto placed = place(code.commands[i]);
        if (!placed) return placed.error();
        record.commands[i] = *placed;
        if (reads_completed_register(h, code.commands[i])) record.complete_block = 1;
    }
    std::vector<std::uint8_t> bytes(sizeof record);
    std::memcpy(bytes.data(), &record, sizeof record);
    auto placed = inferior.fast_sites().place_code(addr, bytes);
    if (!placed) return placed.error();
    if (auto s =
            inferior.debug_points().carry_breakpoint(addr, h.breakpoint_entry, *placed, options);
        !s)
        return s;
    placed_[addr] = Placed{std::move(conditions), std::move(commands), std::move(staged), *placed};
    commands_carried_ = commands_carried_ || !code.commands.empty();
    return ok_status();
}

} // namespace tpagent::experiment
