#include "tools/tracefile/tracepoint_pieces.hpp"

#include "trace/tracepoint_codec.hpp"
#include "protocol/hex.hpp"
#include <fmt/format.h>

namespace tpagent::tracefile {

trace::Tracepoint* TracepointPieces::find(const trace::TracepointKey& key) {
    for (trace::Tracepoint& tp : tracepoints_)
        if (tp.definition.key == key) return &tp;
    return nullptr;
}

// `<num>:<addr>:<rest>`: the defined tracepoint the piece belongs to; `rest` gets the text
// after the second ':'.
Result<trace::Tracepoint*> TracepointPieces::owner(std::string_view fields,
                                                   std::string_view& rest) {
    std::size_t c1 = fields.find(':');
    std::size_t c2 = c1 == std::string_view::npos ? c1 : fields.find(':', c1 + 1);
    if (c2 == std::string_view::npos)
        return make_error(ErrorCode::BadTracepoint, "expected <num>:<addr>:...");
    auto key = trace::parse_tracepoint_key(fields.substr(0, c2));
    if (!key) return key.error();
    trace::Tracepoint* tp = find(*key);
    if (!tp)
        return make_error(
            ErrorCode::BadTracepoint,
            fmt::format("piece for tracepoint {} before its T piece", trace::format_key(*key)));
    rest = fields.substr(c2 + 1);
    return tp;
}

Status TracepointPieces::add(std::string_view piece) {
    if (piece.empty()) return make_error(ErrorCode::BadTracepoint, "empty tracepoint piece");
    char letter = piece[0];
    std::string_view body = piece.substr(1);
    if (letter == 'T') {
        auto header =
            trace::parse_tracepoint_header(body, register_count_, trace::HeaderSource::TraceFile);
        if (!header) return header.error();
        if (find(header->definition.key))
            return make_error(ErrorCode::BadTracepoint,
                              fmt::format("tracepoint {} defined twice",
                                          trace::format_key(header->definition.key)));
        tracepoints_.push_back(trace::Tracepoint{std::move(header->definition), {}, {}});
        return ok_status();
    }
    if (letter != 'A' && letter != 'S' && letter != 'Z' && letter != 'V') return ok_status();

    std::string_view rest;
    auto tp = owner(body, rest);
    if (!tp) return tp.error();
    if (letter == 'A' || letter == 'S') {
        auto actions = trace::parse_action_string(rest, register_count_);
        if (!actions) return actions.error();
        auto& list = letter == 'A' ? (*tp)->definition.actions : (*tp)->definition.stepping_actions;
        list.push_back(std::move(*actions));
    } else if (letter == 'Z') {
        auto source = trace::parse_source_packet(body);
        if (!source) return source.error();
        (*tp)->sources.push_back(std::move(source->source));
    } else { // V<num>:<addr>:<hits>:<usage>
        auto fields = protocol::split(rest, ':');
        if (fields.size() != 2)
            return make_error(ErrorCode::BadTracepoint, "V piece: expected <hits>:<usage>");
        auto hits = protocol::parse_hex_u64(fields[0]);
        auto usage = protocol::parse_hex_u64(fields[1]);
        if (!hits || !usage) return make_error(ErrorCode::BadTracepoint, "V piece: bad hex number");
        (*tp)->counters = {*hits, *usage};
    }
    return ok_status();
}

} // namespace tpagent::tracefile
