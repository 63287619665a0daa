#include "protocol/requests.hpp"
#include "protocol/framing.hpp"
#include "protocol/hex.hpp"
#include <algorithm>
#include <fmt/format.h>

namespace tpagent::protocol {

namespace {
Error bad(std::string text) {
    return make_error(ErrorCode::BadPacket, std::move(text));
}

// Splits "a<sep>b" at the first sep.
bool split_once(std::string_view text, char sep, std::string_view& a, std::string_view& b) {
    std::size_t pos = text.find(sep);
    if (pos == std::string_view::npos) return false;
    a = text.substr(0, pos);
    b = text.substr(pos + 1);
    return true;
}

Result<MemoryWrite> parse_write_header(std::string_view args, std::string_view& data,
                                       std::uint64_t& length) {
    std::string_view range, rest;
    if (!split_once(args, ':', range, rest)) return bad("expected addr,length:data");
    auto r = parse_memory_range(range);
    if (!r) return r.error();
    data = rest;
    length = r->length;
    return MemoryWrite{r->addr, {}};
}
} // namespace

Result<MemoryRange> parse_memory_range(std::string_view args) {
    std::string_view a, l;
    if (!split_once(args, ',', a, l)) return bad("expected addr,length");
    auto addr = parse_hex_u64(a);
    if (!addr) return addr.error();
    auto len = parse_hex_u64(l);
    if (!len) return len.error();
    if (*len > kMaxTransfer) return make_error(ErrorCode::TooLarge, "length too large");
    return MemoryRange{*addr, *len};
}

Result<MemoryWrite> parse_memory_write_hex(std::string_view args) {
    std::string_view data;
    std::uint64_t length = 0;
    auto w = parse_write_header(args, data, length);
    if (!w) return w;
    auto bytes = from_hex(data);
    if (!bytes) return bytes.error();
    if (bytes->size() != length) return bad("length does not match data");
    w->bytes = std::move(*bytes);
    return w;
}

Result<MemoryWrite> parse_memory_write_binary(std::string_view args) {
    std::string_view data;
    std::uint64_t length = 0;
    auto w = parse_write_header(args, data, length);
    if (!w) return w;
    if (data.size() != length) return bad("length does not match data");
    w->bytes.assign(data.begin(), data.end());
    return w;
}

namespace {
// Agent expressions, each "X<len>,<hex bytes>", one after another to the end of `text`
// (`;` between them is taken too).
Status parse_agent_expressions(std::string_view text, std::string_view what,
                               std::vector<std::vector<std::uint8_t>>& out) {
    while (!text.empty()) {
        if (text.front() == ';') { // (gdbserver takes X entries apart by ';' too)
            text.remove_prefix(1);
            continue;
        }
        if (text.front() != 'X') return bad(fmt::format("{}: expected X<len>,<bytes>", what));
        const std::size_t comma = text.find(',');
        if (comma == std::string_view::npos) return bad(fmt::format("{}: missing ','", what));
        auto len = parse_hex_u64(text.substr(1, comma - 1));
        if (!len) return bad(fmt::format("{}: bad length", what));
        if (*len > kMaxAgentExpression)
            return make_error(ErrorCode::TooLarge, fmt::format("{}: {} bytes, more than {}", what,
                                                               *len, kMaxAgentExpression));
        const std::string_view rest = text.substr(comma + 1);
        if (rest.size() < *len * 2)
            return bad(fmt::format("{}: {:x} bytes announced, fewer present", what, *len));
        auto bytes = from_hex(rest.substr(0, *len * 2));
        if (!bytes) return bad(fmt::format("{}: bad hex bytes", what));
        out.push_back(std::move(*bytes));
        text = rest.substr(*len * 2);
    }
    return ok_status();
}
} // namespace

Result<BreakpointRequest> parse_breakpoint(std::string_view args) {
    const std::size_t semi = args.find(';');
    std::string_view head = args.substr(0, semi);
    auto parts = split(head, ',');
    if (parts.size() != 3) return bad("expected type,addr,kind");
    auto type = parse_hex_u64(parts[0]);
    auto addr = parse_hex_u64(parts[1]);
    auto kind = parse_hex_u64(parts[2]);
    if (!type || !addr || !kind) return bad("bad number in breakpoint");
    if (*type > 4) return bad("unknown breakpoint type");
    BreakpointRequest request{static_cast<int>(*type), *addr, *kind, {}, {}, false};
    if (semi == std::string_view::npos) return request;
    // Options: ";X..." (the conditions) and ";cmds:P,X..." (the commands), in that order.
    std::string_view options = args.substr(semi + 1);
    constexpr std::string_view kCommands = "cmds:";
    const std::size_t cmds = options.find(kCommands);
    std::string_view conditions = options.substr(0, cmds);
    if (cmds != std::string_view::npos) {
        if (cmds > 0 && conditions.back() != ';') return bad("expected ';' before cmds:");
        std::string_view commands = options.substr(cmds + kCommands.size());
        if (commands.size() < 2 || (commands[0] != '0' && commands[0] != '1') || commands[1] != ',')
            return bad("cmds: expected persist flag 0 or 1, then ','");
        request.persist = commands[0] == '1';
        if (auto s = parse_agent_expressions(commands.substr(2), "cmds", request.commands); !s)
            return s.error();
    }
    if (auto s = parse_agent_expressions(conditions, "condition", request.conditions); !s)
        return s.error();
    return request;
}

namespace {
Result<std::int64_t> parse_id_number(std::string_view text) {
    if (text == "-1") return ThreadId::kAll;
    auto v = parse_hex_u64(text);
    if (!v) return v.error();
    if (*v > 0x7fffffff) return bad("thread id out of range");
    return static_cast<std::int64_t>(*v);
}
} // namespace

Result<ThreadId> parse_thread_id(std::string_view text) {
    ThreadId id;
    if (!text.empty() && text.front() == 'p') {
        std::string_view pid = text.substr(1), tid = "-1";
        std::size_t dot = pid.find('.');
        if (dot != std::string_view::npos) {
            tid = pid.substr(dot + 1);
            pid = pid.substr(0, dot);
        }
        auto p = parse_id_number(pid);
        if (!p) return p.error();
        auto t = parse_id_number(tid);
        if (!t) return t.error();
        id.pid = *p;
        id.tid = *t;
        return id;
    }
    auto t = parse_id_number(text);
    if (!t) return t.error();
    id.pid = ThreadId::kAny;
    id.tid = *t;
    return id;
}

std::string format_thread_id(std::int64_t pid, std::int64_t tid, bool multiprocess) {
    auto num = [](std::int64_t v) {
        return v < 0 ? std::string("-1") : hex_u64(static_cast<std::uint64_t>(v));
    };
    if (multiprocess) return "p" + num(pid) + "." + num(tid);
    return num(tid);
}

Result<std::vector<ResumeAction>> parse_vcont(std::string_view args) {
    // classify() hands over "c:p1.2;s" (the ';' after the name is its separator); the raw form
    // ";c:p1.2;s" is accepted too.
    if (!args.empty() && args.front() == ';') args.remove_prefix(1);
    if (args.empty()) return bad("vCont needs actions");
    std::vector<ResumeAction> actions;
    for (std::string_view field : split(args, ';')) {
        std::string_view action = field, thread;
        std::size_t colon = field.find(':');
        if (colon != std::string_view::npos) {
            action = field.substr(0, colon);
            thread = field.substr(colon + 1);
        }
        if (action.empty()) return bad("empty vCont action");
        ResumeAction a;
        switch (action.front()) {
        case 'c':
            a.kind = ResumeAction::Kind::Continue;
            break;
        case 's':
            a.kind = ResumeAction::Kind::Step;
            break;
        case 't':
            a.kind = ResumeAction::Kind::Stop;
            break;
        case 'r': { // RSP "vCont": r start,end
            a.kind = ResumeAction::Kind::Step;
            auto range = split(action.substr(1), ',');
            if (range.size() != 2) return bad("bad vCont range");
            auto start = parse_hex_u64(range[0]);
            auto end = parse_hex_u64(range[1]);
            if (!start || !end) return bad("bad vCont range");
            a.range_start = *start;
            a.range_end = *end;
            break;
        }
        case 'C':
        case 'S': {
            a.kind =
                action.front() == 'C' ? ResumeAction::Kind::Continue : ResumeAction::Kind::Step;
            auto sig = parse_hex_u64(action.substr(1));
            if (!sig || *sig > 255) return bad("bad signal in vCont");
            a.signal = static_cast<int>(*sig);
            break;
        }
        default:
            return make_error(ErrorCode::Unsupported, "unsupported vCont action");
        }
        if ((action.front() == 'c' || action.front() == 's' || action.front() == 't') &&
            action.size() != 1)
            return bad("bad vCont action");
        if (!thread.empty()) {
            auto t = parse_thread_id(thread);
            if (!t) return t.error();
            a.thread = *t;
        }
        actions.push_back(a);
    }
    return actions;
}

Result<LegacyResume> parse_legacy_resume(std::string_view args, bool has_signal) {
    LegacyResume r;
    std::string_view addr = args;
    if (has_signal) {
        std::string_view sig = args.substr(0, args.find(';'));
        addr = sig.size() < args.size() ? args.substr(sig.size() + 1) : std::string_view{};
        auto s = parse_hex_u64(sig);
        if (!s || *s > 255) return bad("bad signal");
        r.signal = static_cast<int>(*s);
    }
    if (!addr.empty()) {
        auto a = parse_hex_u64(addr);
        if (!a) return a.error();
        r.addr = *a;
    }
    return r;
}

Result<XferRead> parse_xfer_read(std::string_view args) {
    std::size_t colon = args.rfind(':');
    if (colon == std::string_view::npos) return bad("expected annex:offset,length");
    auto range = parse_memory_range(args.substr(colon + 1));
    if (!range) return range.error();
    return XferRead{std::string(args.substr(0, colon)), range->addr, range->length};
}

Result<XferWrite> parse_xfer_write(std::string_view args) {
    std::size_t annex_end = args.find(':');
    if (annex_end == std::string_view::npos) return bad("expected annex:offset:data");
    std::size_t offset_end = args.find(':', annex_end + 1);
    if (offset_end == std::string_view::npos) return bad("expected annex:offset:data");
    auto offset = parse_hex_u64(args.substr(annex_end + 1, offset_end - annex_end - 1));
    if (!offset) return bad("bad offset");
    return XferWrite{std::string(args.substr(0, annex_end)), *offset, args.substr(offset_end + 1)};
}

std::string xfer_reply(std::string_view data, std::uint64_t offset, std::uint64_t length) {
    if (offset >= data.size()) return "l";
    std::string_view chunk = data.substr(offset, length);
    // gdb rejects an "m" reply without data; a zero-length request can only end the transfer.
    if (chunk.empty()) return "l";
    bool last = offset + chunk.size() >= data.size();
    return (last ? "l" : "m") + escape_binary(chunk);
}

bool is_reloc_insn_answer(std::string_view payload) {
    return payload.starts_with("qRelocInsn:") || payload.starts_with('E');
}

Result<std::optional<std::uint64_t>> parse_reloc_insn_answer(std::string_view payload) {
    if (payload.starts_with('E')) return std::optional<std::uint64_t>();
    if (!payload.starts_with("qRelocInsn:")) return bad("expected qRelocInsn:LEN or E01");
    auto length = parse_hex_u64(payload.substr(11));
    if (!length) return bad("qRelocInsn: bad length");
    return std::optional(*length);
}

Result<std::vector<AddressRange>> parse_readonly_ranges(std::string_view args) {
    std::vector<AddressRange> ranges;
    for (std::string_view range : split(args, ':')) {
        if (range.empty()) continue;
        auto parts = split(range, ',');
        if (parts.size() != 2) return bad("expected start,end");
        auto start = parse_hex_u64(parts[0]);
        auto end = parse_hex_u64(parts[1]);
        if (!start || !end || *end < *start) return bad("bad range");
        ranges.push_back({*start, *end});
    }
    return ranges;
}

Result<TraceNotes> parse_trace_notes(std::string_view args) {
    TraceNotes notes;
    for (std::string_view field : split(args, ';')) {
        if (field.empty()) continue;
        std::string_view name, hex;
        if (!split_once(field, ':', name, hex)) return bad("expected name:hex");
        auto text = hex_to_text(hex);
        if (!text) return text.error();
        if (name == "user")
            notes.user = std::move(*text);
        else if (name == "notes")
            notes.notes = std::move(*text);
        else if (name == "tstop")
            notes.tstop = std::move(*text);
        else
            return bad("unknown note");
    }
    return notes;
}

} // namespace tpagent::protocol
