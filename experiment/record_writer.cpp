#include "experiment/record_writer.hpp"
#include "bytecode/traced_range.hpp"
#include "arch/compiler_backend.hpp"
#include "experiment/fast_saved_state.hpp"
#include <algorithm>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tpagent::experiment {

using namespace inproc;

RecordWriter::RecordWriter(SharedBuffer& shared, CodePlacer place_code, std::uint64_t used)
    : shared_(shared), area_(shared, used), place_code_(std::move(place_code)),
      helpers_(shared.helpers()) {
    helpers_.printf = 0; // never in the program
}

Status RecordWriter::write(TracepointRecord& rec, const trace::TracepointDefinition& def,
                           std::span<const arch::SdtArgument> marker) {
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
    rec.actions_offset = shared_.offset_of(actions->data());
    rec.action_count = static_cast<std::uint32_t>(count);
    std::size_t k = 0;
    for (const auto& string : def.actions)
        for (const auto& action : string.actions) {
            auto a = this->action(action, def.key.address,
                                  def.kind == trace::TracepointKind::Static
                                      ? marker
                                      : std::span<const arch::SdtArgument>());
            if (!a) return a.error();
            (*actions)[k++] = *a;
        }
    const Header& h = shared_.header();
    bool reads = reads_completed_register(h, std::span<const ActionRecord>(*actions)) ||
                 (def.condition && reads_completed_register(h, def.condition->program));
    for (const auto& string : def.actions)
        for (const auto& action : string.actions)
            if (const auto* e = std::get_if<trace::Expression>(&action))
                reads = reads || reads_completed_register(h, e->program);
    rec.complete_block = reads ? 1 : 0;
    const FastSavedState* state = shared_.saved_state();
    rec.collects_state = 0;
    for (const auto& string : def.actions)
        for (const auto& action : string.actions)
            if (const auto* mask = std::get_if<trace::RegisterMask>(&action))
                if (state && state->wanted_by(*mask)) rec.collects_state = 1;
    // The register block as the header describes it now (describe_registers).
    const std::uint32_t core = inproc::frame_register_bytes(h);
    rec.frame_bound =
        staged_frame_bound(*actions, core + (rec.collects_state ? h.saved_state_bytes : 0));
    if (rec.frame_bound > kMaxChunkBytes - kChunkHeaderBytes)
        return make_error(ErrorCode::TooLarge,
                          fmt::format("fast tracepoint {} collects up to {} bytes per hit; "
                                      "the in-process agent takes at most {}",
                                      def.key.number, rec.frame_bound,
                                      kMaxChunkBytes - kChunkHeaderBytes));
    return ok_status();
}

// The text of `$_sdata` at most, as a trap tracepoint's frame holds it.
constexpr std::uint32_t kStaticDataText = 1024;

Result<ActionRecord> RecordWriter::action(const trace::Action& action, std::uint64_t near,
                                          std::span<const arch::SdtArgument> marker) {
    ActionRecord a{}; // kind 0: nothing to collect
    if (std::holds_alternative<trace::StaticData>(action)) {
        // Only a static tracepoint's (gdb documents it as ignored for the others).
        if (marker.empty()) return a;
        auto args = area_.take<arch::SdtArgument>(marker.size());
        if (!args) return args.error();
        std::copy(marker.begin(), marker.end(), args->begin());
        a.kind = ActionKind::StaticData;
        a.insns_offset = shared_.offset_of(args->data());
        a.insn_count = static_cast<std::uint32_t>(marker.size());
        a.length = kStaticDataText;
    } else if (const auto* mask = std::get_if<trace::RegisterMask>(&action)) {
        if (!mask->bytes.empty()) a.kind = ActionKind::Registers;
    } else if (const auto* range = std::get_if<trace::MemoryRange>(&action)) {
        a.kind = ActionKind::Memory;
        a.base_register = range->base_register;
        a.offset = range->offset;
        a.length = range->length;
    } else if (const auto* e = std::get_if<trace::Expression>(&action)) {
        // gdb's code for a variable in a register: `end` alone (the register goes in the
        // tracepoint's R mask). Nothing to run at a hit.
        if (e->program.insns().size() == 1 && e->program.insns()[0].op == bytecode::Op::End)
            return a;
        // gdb's code for a variable in memory: collected as the range it is, with no
        // expression run at a hit (and in line by a pad that writes its frames itself).
        const auto range = bytecode::traced_range(e->program);
        const Header& h = shared_.header();
        if (range && range->length <= UINT32_MAX &&
            (range->base_register < 0 ||
             (static_cast<std::size_t>(range->base_register) < kMaxCoreRegisters &&
              h.register_size[range->base_register] == 8))) {
            a.kind = ActionKind::Memory;
            a.base_register = range->base_register;
            a.offset = range->offset;
            a.length = static_cast<std::uint32_t>(range->length);
            return a;
        }
        return expression(*e, near);
    }
    return a;
}

Result<ActionRecord> RecordWriter::expression(const trace::Expression& e, std::uint64_t near) {
    auto a = area_.expression(e.program);
    if (!a) return a;
    auto native = tpagent::arch::host_compiler_backend().translate(
        e.program, helpers_, staged_register_layout(shared_.header()));
    if (native) {
        if (auto placed = place_code_(near, *native)) a->compiled = *placed;
    }
    if (!a->compiled)
        spdlog::debug("fast tracepoint expression interpreted: {}",
                      native ? "no room in the program" : native.error().text);
    return a;
}

} // namespace tpagent::experiment
