// Fuzzes the wire layer: arbitrary bytes, split at fuzzer-chosen points, go through PacketDecoder;
// every decoded payload then goes through classify and the request parsers. Invariants that do
// not hold abort with a message.
#include "protocol/framing.hpp"
#include "protocol/hex.hpp"
#include "protocol/packet.hpp"
#include "protocol/replies.hpp"
#include "protocol/requests.hpp"
#include "fuzz/invariant.hpp"
#include "tests/unit/protocol/gdb_reading.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

using namespace tpagent;
using namespace tpagent::protocol;
using namespace tpagent::protocol::testing;

namespace {

bool same_events(const std::vector<FrameEvent>& a, const std::vector<FrameEvent>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].kind != b[i].kind || a[i].payload != b[i].payload) return false;
    return true;
}

bool within(std::string_view part, std::string_view whole) {
    return part.empty() || (part.data() >= whole.data() &&
                            part.data() + part.size() <= whole.data() + whole.size());
}

void check_thread_id(std::string_view text) {
    auto id = parse_thread_id(text);
    if (!id) return;
    INVARIANT(id->pid >= -1 && id->tid >= -1);
    auto again = parse_thread_id(format_thread_id(id->pid, id->tid, true));
    INVARIANT(again.ok() && again->pid == id->pid && again->tid == id->tid);
    auto single = parse_thread_id(format_thread_id(id->pid, id->tid, false));
    INVARIANT(single.ok() && single->tid == id->tid);
}

void check_xfer(std::string_view object, std::uint64_t offset, std::uint64_t length) {
    std::string reply = xfer_reply(object, offset, length);
    INVARIANT(!reply.empty() && (reply[0] == 'm' || reply[0] == 'l'));
    INVARIANT(reply[0] == 'l' || reply.size() > 1); // gdb rejects an empty 'm'
    std::string data = unescape(std::string_view(reply).substr(1));
    INVARIANT(data.size() <= length);
    if (offset >= object.size()) {
        INVARIANT(reply == "l");
        return;
    }
    INVARIANT(data == object.substr(offset, data.size()));
    if (reply[0] == 'l' && length != 0) INVARIANT(offset + data.size() == object.size());
}

// Every parser sees every payload: the classify result only decides which extra checks apply.
void check_payload(const std::string& payload, std::size_t max_payload) {
    // Re-framing the decoded data and decoding it again gives the same payload.
    {
        PacketDecoder d(max_payload);
        std::vector<FrameEvent> ev;
        d.feed(frame_packet(escape_binary(payload)), ev);
        INVARIANT(ev.size() == 1 && ev[0].kind == FrameEvent::Kind::Packet);
        INVARIANT(ev[0].payload == payload);
    }

    // Run-length encoding of escaped data round-trips and never needs a frame character.
    {
        std::string escaped = escape_binary(payload);
        std::string encoded = run_length_encode(escaped);
        INVARIANT(encoded.size() <= escaped.size());
        const auto expanded = rle_expand(encoded);
        INVARIANT(expanded && *expanded == escaped);
        INVARIANT(unescape(*expanded) == payload);
    }

    PacketView v = classify(payload);
    INVARIANT(within(v.name, payload) && within(v.args, payload));
    INVARIANT(payload.empty() == v.name.empty());
    if (!payload.empty()) INVARIANT(v.name.data() == payload.data());
    INVARIANT(v.name.size() + v.args.size() <= payload.size());
    std::string_view args = v.args;

    if (auto r = parse_memory_range(args)) INVARIANT(r->length <= kMaxTransfer);
    if (auto w = parse_memory_write_hex(args)) INVARIANT(w->bytes.size() <= kMaxTransfer);
    if (auto w = parse_memory_write_binary(args)) INVARIANT(w->bytes.size() <= kMaxTransfer);
    if (auto b = parse_breakpoint(args)) INVARIANT(b->type >= 0 && b->type <= 4);
    check_thread_id(args);
    if (!args.empty()) check_thread_id(args.substr(1)); // H<op><thread-id>
    if (auto a = parse_vcont(args)) {
        INVARIANT(!a->empty());
        for (const auto& act : *a)
            INVARIANT(act.signal >= 0 && act.signal <= 255);
    }
    for (bool sig : {false, true})
        if (auto r = parse_legacy_resume(args, sig)) INVARIANT(r->signal >= 0 && r->signal <= 255);

    if (auto x = parse_xfer_read(args)) {
        INVARIANT(x->length <= kMaxTransfer);
        check_xfer(payload, x->offset, x->length);
        check_xfer(payload, x->offset % (payload.size() + 1), x->length);
    }

    // Hex codecs on whatever the packet carried.
    if (auto n = parse_hex_u64(args)) {
        INVARIANT(*parse_hex_u64(hex_u64(*n)) == *n);
        auto s = parse_hex_i64(args); // same bits, read as two's complement
        INVARIANT(s.ok() && static_cast<std::uint64_t>(*s) == *n);
    }
    if (auto bytes = from_hex(args)) {
        INVARIANT(bytes->size() * 2 == args.size());
        std::string lower(args);
        for (char& c : lower)
            if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
        INVARIANT(to_hex(*bytes) == lower);
    }

    std::string err = reply_error_text(make_error(ErrorCode::SystemError, payload));
    INVARIANT(err == "E07" || err == "E." + payload);
    INVARIANT(err.find_first_of("#$}*") == std::string::npos);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider fdp(data, size);
    std::size_t max_payload = fdp.ConsumeIntegralInRange<std::size_t>(0, 600);
    // Correct checksums are hard to guess: in wrapped mode the input becomes one well-formed
    // packet, so the parsers see arbitrary payloads and not only what survives the checksum.
    bool wrap = fdp.ConsumeBool();
    std::vector<std::size_t> cuts(fdp.ConsumeIntegralInRange<std::size_t>(0, 12));
    for (auto& c : cuts)
        c = fdp.ConsumeIntegral<std::uint16_t>();
    std::string raw = fdp.ConsumeRemainingBytesAsString();
    std::string stream = wrap ? frame_packet(escape_binary(raw)) : raw;
    for (auto& c : cuts)
        c %= stream.size() + 1;
    std::sort(cuts.begin(), cuts.end());

    // Decoded in one feed and in pieces: the events must be the same.
    PacketDecoder whole(max_payload);
    std::vector<FrameEvent> events;
    whole.feed(stream, events);

    PacketDecoder pieces(max_payload);
    std::vector<FrameEvent> piece_events;
    std::size_t at = 0;
    for (std::size_t c : cuts) {
        pieces.feed(std::string_view(stream).substr(at, c - at), piece_events);
        at = c;
    }
    pieces.feed(std::string_view(stream).substr(at), piece_events);
    INVARIANT(same_events(events, piece_events));

    if (wrap) {
        INVARIANT(events.size() == 1);
        if (raw.size() <= max_payload)
            INVARIANT(events[0].kind == FrameEvent::Kind::Packet && events[0].payload == raw);
        else
            INVARIANT(events[0].kind == FrameEvent::Kind::Oversize);
    }

    for (const auto& e : events) {
        switch (e.kind) {
        case FrameEvent::Kind::Packet:
            INVARIANT(e.payload.size() <= max_payload);
            check_payload(e.payload, max_payload);
            break;
        case FrameEvent::Kind::BadChecksum:
            INVARIANT(e.payload.size() <= max_payload);
            break;
        default:
            INVARIANT(e.payload.empty());
            break;
        }
    }
    return 0;
}
