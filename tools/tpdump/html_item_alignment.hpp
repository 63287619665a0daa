// Which source item of a tracepoint's action list each of its agent expressions (X actions)
// was compiled from. gdb compiles the items in source order, one expression for each that
// needs one, so an alignment pairs the items with the expressions in order; it must give an
// expression to every item that always takes one (expressions, trace state variables,
// teval) and may give one to a plain symbol or `{type} address` (which otherwise became an
// M range, a register or nothing). Only pairs whose instructions fit the item count: see
// html_item_alignment.cpp.
#pragma once
#include "trace/tracepoint.hpp"
#include "tools/tpdump/html_expression_shape.hpp"
#include "tools/tpdump/html_source_items.hpp"
#include <cstddef>
#include <optional>
#include <vector>

namespace tpagent::tpdump {

struct Alignment {
    // Per expression: its item, where every alignment that fits agrees.
    std::vector<std::optional<std::size_t>> owner;
    // Exactly one alignment fits: then every expression has an owner, and `took` marks the
    // items that took one (the other symbols are what the M ranges can come from).
    bool unique = false;
    std::vector<bool> took;
};

// `ranges`: the list's M actions, which a literal `{type} address` without an expression
// must be one of.
Alignment align(const std::vector<SourceItem>& items, const std::vector<ExpressionShape>& shapes,
                const std::vector<const trace::MemoryRange*>& ranges);

} // namespace tpagent::tpdump
