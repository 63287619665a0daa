#include "tools/tpdump/html_collected_registers.hpp"

#include <algorithm>
#include <variant>

namespace tpagent::tpdump {

namespace {

// `into` with the bits of `mask` added.
void add_mask(trace::RegisterMask& into, const trace::RegisterMask& mask) {
    if (into.bytes.size() < mask.bytes.size()) into.bytes.resize(mask.bytes.size(), 0);
    for (std::size_t i = 0; i < mask.bytes.size(); ++i)
        into.bytes[i] |= mask.bytes[i];
}

// Every register an action list collects (it may hold several `R` actions).
trace::RegisterMask list_mask(const std::vector<trace::ActionString>& strings) {
    trace::RegisterMask out;
    for (const trace::ActionString& s : strings)
        for (const trace::Action& a : s.actions)
            if (const auto* mask = std::get_if<trace::RegisterMask>(&a)) add_mask(out, *mask);
    return out;
}

bool empty(const trace::RegisterMask& mask) {
    return std::all_of(mask.bytes.begin(), mask.bytes.end(), [](std::uint8_t b) { return !b; });
}

} // namespace

CollectedRegisters::CollectedRegisters(const tracefile::TraceFile& file) : file_(file) {
    for (const trace::Tracepoint& tp : file.tracepoints()) {
        const trace::TracepointDefinition& def = tp.definition;
        Masks& m = masks_[def.key.number];
        m.locations.push_back({def.key.address, list_mask(def.actions)});
        add_mask(m.stepping, list_mask(def.stepping_actions));
        add_mask(m.any, m.locations.back().hit);
        add_mask(m.any, m.stepping);
    }
}

const trace::RegisterMask* CollectedRegisters::mask(const tracefile::Frame& frame) const {
    auto it = masks_.find(frame.tracepoint);
    if (it == masks_.end()) return nullptr;
    const Masks& m = it->second;
    // A frame does not say which list recorded it, but its pc does: a hit is collected at its
    // location's address, a while-stepping step after one instruction or more (a step that
    // comes back to the address within the step count is taken for a hit).
    if (auto pc = file_.frame_pc(frame))
        for (const Location& location : m.locations)
            if (location.address == *pc && !empty(location.hit)) return &location.hit;
    if (!empty(m.stepping)) return &m.stepping;
    return &m.any; // an R block with no `R` action to show for it: nothing
}

bool register_collected(const trace::RegisterMask* mask, const tracefile::RegisterInfo& reg) {
    return !mask || mask->test(reg.regnum);
}

} // namespace tpagent::tpdump
