#include "experiment/inproc_breakpoints.hpp"
#include "arch/compiler_backend.hpp"
#include "experiment/shared_buffer.hpp"
#include <cstring>
#include <fmt/format.h>
#include <vector>

namespace tpagent::experiment {

Status InprocBreakpoints::carry(process::Target& inferior, std::uint64_t addr,
                                const process::BreakpointCode& code) {
    if (inferior.pid() != pid_) { // another program, or the same one run again
        forget_image();
        pid_ = inferior.pid();
    }
    Status s = try_carry(inferior, addr, code);
    outcomes_[addr] = s ? std::string() : s.error().text;
    return s;
}

std::vector<std::string> InprocBreakpoints::lines(process::Target* inferior) const {
    std::vector<std::string> out;
    if (!inferior || inferior->pid() != pid_) return out;
    for (const auto& [addr, why] : outcomes_) {
        if (inferior->debug_points().carried(addr))
            out.push_back(fmt::format("Breakpoint at 0x{:x}: its condition runs in the program "
                                      "(a jump to its pad).",
                                      addr));
        else
            out.push_back(fmt::format("Breakpoint at 0x{:x}: tpagent evaluates its condition at "
                                      "each stop: {}.",
                                      addr, why.empty() ? "a tracepoint took its place" : why));
    }
    return out;
}

Status InprocBreakpoints::try_carry(process::Target& inferior, std::uint64_t addr,
                                    const process::BreakpointCode& code) {
    if (!enabled_) return make_error(ErrorCode::NotAllowed, "`monitor set inproc-breakpoints off`");
    if (code.conditions.empty() || !code.commands.empty())
        return make_error(ErrorCode::NotAllowed, "only conditions run in the program");
    if (code.conditions.size() > inproc::kMaxBreakpointConditions)
        return make_error(ErrorCode::TooLarge,
                          fmt::format("{} conditions (at most {} run in the program)",
                                      code.conditions.size(), inproc::kMaxBreakpointConditions));
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
    std::vector<std::vector<std::uint8_t>> conditions;
    for (const bytecode::Program& condition : code.conditions)
        conditions.emplace_back(condition.bytes().begin(), condition.bytes().end());
    bytecode::StagedRegisterLayout staged = staged_register_layout(h);
    if (auto was = placed_.find(addr);
        was != placed_.end() && was->second.conditions == conditions &&
        was->second.staged == staged &&
        inferior.fast_sites().keeps_carrier(addr, was->second.record))
        return inferior.debug_points().carry_breakpoint(addr, h.breakpoint_entry,
                                                        was->second.record, options);
    placed_.erase(addr);

    bytecode::HelperAddresses helpers = h.helpers;
    helpers.printf = 0; // never in the program

    inproc::BreakpointRecord record{};
    record.magic = inproc::kBreakpointMagic;
    record.address = addr;
    record.condition_count = static_cast<std::uint32_t>(code.conditions.size());
    for (std::size_t i = 0; i < code.conditions.size(); ++i) {
        const bytecode::Program& condition = code.conditions[i];
        auto native = arch::host_compiler_backend().translate(condition, helpers, staged);
        if (!native) return native.error();
        auto placed = inferior.fast_sites().place_code(addr, *native);
        if (!placed) return placed.error();
        record.conditions[i] = *placed;
        if (reads_completed_register(h, condition)) record.complete_block = 1;
    }
    std::vector<std::uint8_t> bytes(sizeof record);
    std::memcpy(bytes.data(), &record, sizeof record);
    auto placed = inferior.fast_sites().place_code(addr, bytes);
    if (!placed) return placed.error();
    if (auto s =
            inferior.debug_points().carry_breakpoint(addr, h.breakpoint_entry, *placed, options);
        !s)
        return s;
    placed_[addr] = Placed{std::move(conditions), std::move(staged), *placed};
    return ok_status();
}

} // namespace tpagent::experiment
