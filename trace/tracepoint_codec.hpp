// Wire forms of tracepoint and trace state variable definitions: the QTDP / QTDPsrc / QTDV
// payloads gdb sends (after `QTDP:` / `QTDPsrc:` / `QTDV:`) and the qTfP/qTsP upload pieces
// sent back. Numbers are hex, read case-insensitively; output is lower-case minimal hex.
// Parsing an upload piece's text through these parsers gives back the same definition.
#pragma once
#include "trace/trace_state_variables.hpp"
#include "trace/tracepoint.hpp"
#include "base/result.hpp"
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tpagent::trace {

// First packet: `<num>:<addr>:<E|D>:<step>:<pass>[:F<len>][:S][:X<len>,<hex>][-]`.
// The definition comes back without actions; `more` is the trailing `-`.
struct TracepointHeader {
    TracepointDefinition definition;
    bool more = false;
};
// Where a header was written. gdb's QTDP gives a fast tracepoint the length of the
// instruction its jump replaces, never 0. The `tp T` line gdb's `tsave` writes gives the
// length of its uploaded copy, which gdb never fills in: `F0`, read as length unknown (0).
enum class HeaderSource : std::uint8_t { Qtdp, TraceFile };
Result<TracepointHeader> parse_tracepoint_header(std::string_view payload, unsigned register_count,
                                                 HeaderSource source = HeaderSource::Qtdp);

// Continuation packet: `-<num>:<addr>:[S]<actions>[-]`.
struct ActionPacket {
    TracepointKey key;
    bool starts_stepping = false; // the `S` prefix: this and later strings are while-stepping
    ActionString actions;
    bool more = false;
};
Result<ActionPacket> parse_action_packet(std::string_view payload, unsigned register_count);

// One QTDP payload. Its first character tells its kind before any field is read: `-` an
// action packet, anything else a definition's first packet (header). A packet that fails to
// parse keeps its kind, since the kind decides what becomes of the definition in progress
// (TracepointTable::define); an empty payload is of neither kind, only its error.
using TracepointPacket = std::variant<Result<TracepointHeader>, Result<ActionPacket>, Error>;
TracepointPacket parse_tracepoint_packet(std::string_view payload, unsigned register_count);

// A run of concatenated actions (`R..`, `M..`, `X..`, `L`). X bytecode is validated against
// register_count; M base registers must be below it.
Result<ActionString> parse_action_string(std::string_view text, unsigned register_count);

// `<num>:<addr>:<type>:<start>:<slen>:<hex text>` (QTDPsrc payload).
struct SourcePacket {
    TracepointKey key;
    SourceString source;
};
Result<SourcePacket> parse_source_packet(std::string_view payload);

// `<num>:<value>:<builtin>:<hexname>` (QTDV payload, and a qTfV/qTsV piece). Errors are
// BadPacket.
Result<VariableDefinition> parse_variable_definition(std::string_view payload);

// `<num>:<addr>` as in QTEnable, QTDisable and qTP.
Result<TracepointKey> parse_tracepoint_key(std::string_view payload);

// Printing, in the same syntax the parsers accept.
std::string format_key(const TracepointKey& key);                  // "<num>:<addr>"
std::string format_header(const TracepointDefinition& definition); // no trailing '-'
std::string format_action_string(const ActionString& actions);
std::string format_source(const SourceString& source); // "<type>:<start>:<slen>:<hex>"

// The qTfP/qTsP pieces of one tracepoint, in the order gdb expects: `T..`, an `A..` per
// action string, an `S..` per while-stepping string, a `Z..` per source string, and
// `V<num>:<addr>:<hits>:<usage>` with the run counters.
std::vector<std::string> upload_pieces(const Tracepoint& tracepoint);

// qTP reply: `V<hits>:<usage>` in hex.
std::string format_counters(const TracepointCounters& counters);

} // namespace tpagent::trace
