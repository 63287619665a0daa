// The expressions of a tracepoint's `collect` and `teval` commands, read from its `cmd`
// source strings (the action lines as the user typed them), classified by the actions gdb
// compiles each kind into. The memory-block naming (html_memory_names) matches them to
// the compiled actions.
#pragma once
#include "trace/tracepoint.hpp"
#include "tools/tracefile/trace_file.hpp"
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpagent::tpdump {

enum class SourceItemKind : std::uint8_t {
    NoMemory,   // $regs, $pc, $_sdata...: the R (or L) action, no M range or X action
    Variable,   // $name of a trace state variable: one X action that records it (tracev)
    Symbol,     // a plain identifier: an M range (static), an X action (computed location,
                // struct), a register or nothing (constant, optimized out)
    MemoryAt,   // {type} address: an X action (gdb 13) or an M range
    Expression, // anything else collected: one X action
    Evaluation, // a `teval` expression: one X action that records nothing
};

struct SourceItem {
    SourceItemKind kind = SourceItemKind::Expression;
    std::string text;                     // trimmed, redundant outer parentheses removed
    std::uint32_t variable = 0;           // Variable: its number
    std::optional<std::uint64_t> address; // MemoryAt: the address when it is a literal
};

struct SourceItems {
    std::vector<SourceItem> items;
    // false: a command or item whose actions cannot be predicted ($args, $locals, $_ret,
    // an unknown command), so the items cannot be matched to the actions.
    bool known = true;
};

struct TracepointSourceItems {
    SourceItems hit;      // the actions on each hit
    SourceItems stepping; // the while-stepping actions
};

TracepointSourceItems source_items(const trace::Tracepoint& tp, const tracefile::TraceFile& file);

// A C integer literal without suffix: decimal, or hex after 0x/0X.
std::optional<std::uint64_t> parse_integer_literal(std::string_view text);

// `text` split at commas outside brackets, parentheses, braces and quotes; parts trimmed.
std::vector<std::string_view> split_top_level(std::string_view text, char separator);

} // namespace tpagent::tpdump
