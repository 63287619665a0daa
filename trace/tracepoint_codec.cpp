#include "trace/tracepoint_codec.hpp"

#include "protocol/hex.hpp"
#include <algorithm>
#include <fmt/format.h>

namespace tpagent::trace {

using protocol::hex_digit_value;
using protocol::hex_u64;
using protocol::parse_hex_u64;

namespace {

Error bad_tracepoint(std::string text) {
    return make_error(ErrorCode::BadTracepoint, std::move(text));
}

Result<std::uint64_t> parse_field(std::string_view digits, std::string_view what) {
    auto v = parse_hex_u64(digits);
    if (!v) return bad_tracepoint(fmt::format("{}: bad hex number '{}'", what, digits));
    return *v;
}

Result<TracepointKey> parse_key_fields(std::string_view num, std::string_view addr) {
    auto n = parse_field(num, "tracepoint number");
    if (!n) return n.error();
    if (*n == 0) return bad_tracepoint("tracepoint number 0");
    // gdb numbers breakpoints and tracepoints from one count per session, never reused; a trace
    // frame (qTBuffer, trace files) holds the number in 16 bits.
    if (*n > kMaxTracepointNumber)
        return bad_tracepoint(
            fmt::format("tracepoint {} is numbered above {}, the most a trace frame can "
                        "record (a new gdb session numbers from 1 again)",
                        *n, kMaxTracepointNumber));
    auto a = parse_field(addr, "tracepoint address");
    if (!a) return a.error();
    return TracepointKey{static_cast<std::uint32_t>(*n), *a};
}

std::size_t hex_run(std::string_view text, std::size_t pos) {
    std::size_t end = pos;
    while (end < text.size() && hex_digit_value(text[end]) >= 0)
        ++end;
    return end;
}

// `<len>,<hex bytes>` starting at pos; advances pos past the bytes. Used for X actions and
// the condition, whose length field tells where the bytes end.
Result<Expression> parse_expression(std::string_view text, std::size_t& pos,
                                    unsigned register_count, std::string_view what) {
    std::size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos)
        return bad_tracepoint(fmt::format("{}: missing ','", what));
    auto len = parse_field(text.substr(pos, comma - pos), what);
    if (!len) return len.error();
    std::size_t start = comma + 1;
    if (*len > (text.size() - start) / 2)
        return bad_tracepoint(fmt::format("{}: {:x} bytes announced, fewer present", what, *len));
    auto bytes = protocol::from_hex(text.substr(start, *len * 2));
    if (!bytes) return bad_tracepoint(fmt::format("{}: bad hex bytes", what));
    auto program = bytecode::validate(*bytes, register_count);
    if (!program)
        return make_error(ErrorCode::BadBytecode,
                          fmt::format("{}: {}", what, program.error().text));
    pos = start + *len * 2;
    return Expression{std::move(*bytes), std::move(*program)};
}

Result<RegisterMask> parse_register_mask(std::string_view digits) {
    if (digits.empty()) return bad_tracepoint("R action: empty register mask");
    RegisterMask mask;
    // Walk from the least significant digit; two digits per byte.
    for (std::size_t i = 0; i < digits.size(); ++i) {
        int d = hex_digit_value(digits[digits.size() - 1 - i]);
        if (i % 2 == 0) mask.bytes.push_back(0);
        mask.bytes.back() |= static_cast<std::uint8_t>(d << (i % 2 * 4));
    }
    while (!mask.bytes.empty() && mask.bytes.back() == 0)
        mask.bytes.pop_back();
    return mask;
}

// Signed hex field as gdb prints M fields: "-1", "-10" or two's complement digits.
Result<std::uint64_t> parse_offset(std::string_view digits) {
    auto v = protocol::parse_hex_i64(digits);
    if (!v) return bad_tracepoint(fmt::format("M action: bad offset '{}'", digits));
    return static_cast<std::uint64_t>(*v);
}

Result<MemoryRange> parse_memory_range(std::string_view text, std::size_t& pos,
                                       unsigned register_count) {
    std::size_t c1 = text.find(',', pos);
    std::size_t c2 = c1 == std::string_view::npos ? c1 : text.find(',', c1 + 1);
    if (c2 == std::string_view::npos)
        return bad_tracepoint("M action: expected <reg>,<offset>,<len>");
    MemoryRange range;
    std::string_view reg = text.substr(pos, c1 - pos);
    if (reg == "-1") {
        range.base_register = MemoryRange::kAbsolute;
    } else {
        auto r = parse_field(reg, "M action base register");
        if (!r) return r.error();
        if (*r >= register_count)
            return bad_tracepoint(fmt::format("M action: base register {:x} out of range", *r));
        range.base_register = static_cast<std::int32_t>(*r);
    }
    auto offset = parse_offset(text.substr(c1 + 1, c2 - c1 - 1));
    if (!offset) return offset.error();
    range.offset = *offset;
    std::size_t end = hex_run(text, c2 + 1);
    auto len = parse_field(text.substr(c2 + 1, end - c2 - 1), "M action length");
    if (!len) return len.error();
    if (*len > 0xffffffff) return bad_tracepoint("M action: length too large");
    range.length = static_cast<std::uint32_t>(*len);
    pos = end;
    return range;
}

} // namespace

Result<ActionString> parse_action_string(std::string_view text, unsigned register_count) {
    if (text.empty()) return bad_tracepoint("empty action string");
    ActionString out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        char letter = text[pos++];
        switch (letter) {
        case 'R': {
            std::size_t end = hex_run(text, pos);
            auto mask = parse_register_mask(text.substr(pos, end - pos));
            if (!mask) return mask.error();
            out.actions.emplace_back(std::move(*mask));
            pos = end;
            break;
        }
        case 'M': {
            auto range = parse_memory_range(text, pos, register_count);
            if (!range) return range.error();
            out.actions.emplace_back(*range);
            break;
        }
        case 'X': {
            auto expr =
                parse_expression(text, pos, register_count, fmt::format("X action at {}", pos - 1));
            if (!expr) return expr.error();
            out.actions.emplace_back(std::move(*expr));
            break;
        }
        case 'L':
            out.actions.emplace_back(StaticData{});
            break;
        default:
            return bad_tracepoint(fmt::format("unknown action '{}' at {}", letter, pos - 1));
        }
    }
    return out;
}

Result<TracepointHeader> parse_tracepoint_header(std::string_view payload, unsigned register_count,
                                                 HeaderSource source) {
    TracepointHeader out;
    if (!payload.empty() && payload.back() == '-') {
        out.more = true;
        payload.remove_suffix(1);
    }
    auto fields = protocol::split(payload, ':');
    if (fields.size() < 5) return bad_tracepoint("QTDP: expected <num>:<addr>:<E|D>:<step>:<pass>");
    TracepointDefinition& def = out.definition;
    auto key = parse_key_fields(fields[0], fields[1]);
    if (!key) return key.error();
    def.key = *key;
    if (fields[2] != "E" && fields[2] != "D")
        return bad_tracepoint("QTDP: enable flag must be E or D");
    def.enabled = fields[2] == "E";
    auto step = parse_field(fields[3], "step count");
    if (!step) return step.error();
    def.step_count = *step;
    auto pass = parse_field(fields[4], "pass count");
    if (!pass) return pass.error();
    def.pass_count = *pass;

    for (std::size_t i = 5; i < fields.size(); ++i) {
        std::string_view f = fields[i];
        if (f.empty()) return bad_tracepoint("QTDP: empty field");
        if (f[0] == 'F' || f[0] == 'S') {
            if (def.kind != TracepointKind::Trap)
                return bad_tracepoint("QTDP: more than one kind flag");
            if (f[0] == 'S') {
                if (f.size() != 1) return bad_tracepoint("QTDP: bad static flag");
                def.kind = TracepointKind::Static;
                continue;
            }
            auto len = parse_field(f.substr(1), "fast tracepoint length");
            if (!len) return len.error();
            const bool zero_ok = source == HeaderSource::TraceFile;
            if ((*len == 0 && !zero_ok) || *len > 0xffff)
                return bad_tracepoint("QTDP: bad fast tracepoint length");
            def.kind = TracepointKind::Fast;
            def.fast_insn_length = static_cast<std::uint32_t>(*len);
        } else if (f[0] == 'X') {
            if (def.condition) return bad_tracepoint("QTDP: more than one condition");
            std::size_t pos = 1;
            auto cond = parse_expression(f, pos, register_count, "condition");
            if (!cond) return cond.error();
            if (pos != f.size()) return bad_tracepoint("QTDP: junk after condition");
            def.condition = std::move(*cond);
        } else {
            return bad_tracepoint(fmt::format("QTDP: unknown field '{}'", f.substr(0, 16)));
        }
    }
    return out;
}

Result<ActionPacket> parse_action_packet(std::string_view payload, unsigned register_count) {
    if (payload.empty() || payload[0] != '-')
        return bad_tracepoint("QTDP action packet must start with '-'");
    payload.remove_prefix(1);
    ActionPacket out;
    if (!payload.empty() && payload.back() == '-') {
        out.more = true;
        payload.remove_suffix(1);
    }
    std::size_t c1 = payload.find(':');
    std::size_t c2 = c1 == std::string_view::npos ? c1 : payload.find(':', c1 + 1);
    if (c2 == std::string_view::npos)
        return bad_tracepoint("QTDP: expected -<num>:<addr>:<actions>");
    auto key = parse_key_fields(payload.substr(0, c1), payload.substr(c1 + 1, c2 - c1 - 1));
    if (!key) return key.error();
    out.key = *key;
    std::string_view actions = payload.substr(c2 + 1);
    if (!actions.empty() && actions[0] == 'S') {
        out.starts_stepping = true;
        actions.remove_prefix(1);
    }
    auto parsed = parse_action_string(actions, register_count);
    if (!parsed) return parsed.error();
    out.actions = std::move(*parsed);
    return out;
}

TracepointPacket parse_tracepoint_packet(std::string_view payload, unsigned register_count) {
    if (payload.empty()) // the error of a header without its fields
        return TracepointPacket(std::in_place_type<Error>,
                                parse_tracepoint_header(payload, register_count).error());
    if (payload.front() == '-')
        return TracepointPacket(std::in_place_type<Result<ActionPacket>>,
                                parse_action_packet(payload, register_count));
    return TracepointPacket(std::in_place_type<Result<TracepointHeader>>,
                            parse_tracepoint_header(payload, register_count));
}

Result<SourcePacket> parse_source_packet(std::string_view payload) {
    auto fields = protocol::split(payload, ':');
    if (fields.size() != 6)
        return bad_tracepoint("QTDPsrc: expected <num>:<addr>:<type>:<start>:<slen>:<hex>");
    SourcePacket out;
    auto key = parse_key_fields(fields[0], fields[1]);
    if (!key) return key.error();
    out.key = *key;
    // gdb's types are words ("at", "cond", "cmd"); the type goes back to gdb unencoded in
    // qTfP/qTsP's Z lines, so anything else (a '#' or '$' escaped in) is refused.
    if (fields[2].empty() || fields[2].size() > 32 ||
        !std::all_of(fields[2].begin(), fields[2].end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }))
        return bad_tracepoint("QTDPsrc: the type is not a word");
    out.source.type = std::string(fields[2]);
    auto start = parse_field(fields[3], "QTDPsrc start");
    if (!start) return start.error();
    auto length = parse_field(fields[4], "QTDPsrc length");
    if (!length) return length.error();
    auto text = protocol::hex_to_text(fields[5]);
    if (!text) return bad_tracepoint("QTDPsrc: bad hex text");
    if (*start > *length || text->size() > *length - *start)
        return bad_tracepoint("QTDPsrc: text does not fit in the announced length");
    out.source.start = *start;
    out.source.length = *length;
    out.source.text = std::move(*text);
    return out;
}

Result<VariableDefinition> parse_variable_definition(std::string_view payload) {
    auto bad_packet = [](std::string text) {
        return make_error(ErrorCode::BadPacket, std::move(text));
    };
    auto fields = protocol::split(payload, ':');
    if (fields.size() != 4) return bad_packet("QTDV: expected <num>:<value>:<builtin>:<hexname>");
    auto number = parse_hex_u64(fields[0]);
    if (!number || *number == 0 || *number > 0xffffffff)
        return bad_packet("QTDV: bad variable number");
    auto value = protocol::parse_hex_i64(fields[1]);
    if (!value) return bad_packet("QTDV: bad initial value");
    if (fields[2] != "0" && fields[2] != "1")
        return bad_packet("QTDV: builtin flag must be 0 or 1");
    auto name = protocol::hex_to_text(fields[3]);
    if (!name) return bad_packet("QTDV: bad hex name");
    return VariableDefinition{static_cast<std::uint32_t>(*number), *value, fields[2] == "1",
                              std::move(*name)};
}

Result<TracepointKey> parse_tracepoint_key(std::string_view payload) {
    auto fields = protocol::split(payload, ':');
    if (fields.size() != 2) return bad_tracepoint("expected <num>:<addr>");
    return parse_key_fields(fields[0], fields[1]);
}

std::string format_key(const TracepointKey& key) {
    return fmt::format("{:x}:{:x}", key.number, key.address);
}

namespace {

void append_expression(std::string& out, const Expression& expr) {
    out += hex_u64(expr.bytes.size());
    out += ',';
    protocol::append_hex(out, expr.bytes);
}

struct ActionPrinter {
    std::string& out;
    void operator()(const RegisterMask& mask) const {
        out += 'R';
        if (mask.bytes.empty()) out += "00";
        for (auto it = mask.bytes.rbegin(); it != mask.bytes.rend(); ++it)
            out += fmt::format("{:02x}", *it);
    }
    void operator()(const MemoryRange& range) const {
        out += 'M';
        out += range.absolute() ? std::string("-1")
                                : hex_u64(static_cast<std::uint32_t>(range.base_register));
        out += fmt::format(",{:x},{:x}", range.offset, range.length);
    }
    void operator()(const Expression& expr) const {
        out += 'X';
        append_expression(out, expr);
    }
    void operator()(const StaticData&) const { out += 'L'; }
};

} // namespace

std::string format_header(const TracepointDefinition& def) {
    std::string out = fmt::format("{}:{}:{:x}:{:x}", format_key(def.key), def.enabled ? 'E' : 'D',
                                  def.step_count, def.pass_count);
    if (def.kind == TracepointKind::Fast) out += fmt::format(":F{:x}", def.fast_insn_length);
    if (def.kind == TracepointKind::Static) out += ":S";
    if (def.condition) {
        out += ":X";
        append_expression(out, *def.condition);
    }
    return out;
}

std::string format_action_string(const ActionString& actions) {
    std::string out;
    for (const Action& a : actions.actions)
        std::visit(ActionPrinter{out}, a);
    return out;
}

std::string format_source(const SourceString& source) {
    return fmt::format("{}:{:x}:{:x}:{}", source.type, source.start, source.length,
                       protocol::to_hex(std::string_view(source.text)));
}

std::string format_counters(const TracepointCounters& counters) {
    return fmt::format("V{:x}:{:x}", counters.hits, counters.bytes_used);
}

std::vector<std::string> upload_pieces(const Tracepoint& tp) {
    const TracepointDefinition& def = tp.definition;
    const std::string key = format_key(def.key);
    std::vector<std::string> out;
    out.push_back("T" + format_header(def));
    for (const ActionString& a : def.actions)
        out.push_back(fmt::format("A{}:{}", key, format_action_string(a)));
    for (const ActionString& a : def.stepping_actions)
        out.push_back(fmt::format("S{}:{}", key, format_action_string(a)));
    for (const SourceString& s : tp.sources)
        out.push_back(fmt::format("Z{}:{}", key, format_source(s)));
    out.push_back(fmt::format("V{}:{:x}:{:x}", key, tp.counters.hits, tp.counters.bytes_used));
    return out;
}

} // namespace tpagent::trace
