// Every request parser on arbitrary text: the first byte picks the parser, the rest is the
// packet's argument text as the handler would pass it. A parser may refuse, never crash, and
// what it accepts must keep the bounds handlers rely on; tracepoint pieces printed back must
// parse to the same text (what qTfP/qTsP upload is what QTDP accepted).
#include "bytecode/printf_format.hpp"
#include "fuzz/invariant.hpp"
#include "protocol/hex.hpp"
#include "protocol/requests.hpp"
#include "tools/tracefile/trace_status.hpp"
#include "trace/frame_query.hpp"
#include "trace/trace_frame_buffer.hpp"
#include "trace/tracepoint_codec.hpp"

#include <cstdint>
#include <string_view>

using namespace tpagent;

namespace {

// Registers in gdb's x86-64 `g` layout, as handlers pass it for validation.
constexpr unsigned kRegisterCount = 57;

void memory_range(std::string_view text) {
    if (auto r = protocol::parse_memory_range(text)) INVARIANT(r->length <= protocol::kMaxTransfer);
}

void memory_write(std::string_view text, bool binary) {
    auto w =
        binary ? protocol::parse_memory_write_binary(text) : protocol::parse_memory_write_hex(text);
    if (w) INVARIANT(w->bytes.size() <= protocol::kMaxTransfer);
}

void breakpoint(std::string_view text) {
    if (auto b = protocol::parse_breakpoint(text)) INVARIANT(b->type >= 0 && b->type <= 4);
}

void thread_id(std::string_view text) {
    auto t = protocol::parse_thread_id(text);
    if (!t) return;
    // What the stub prints for a thread, it reads back as the same thread.
    for (bool multiprocess : {false, true}) {
        if (!multiprocess && t->pid != protocol::ThreadId::kAny) continue;
        auto again =
            protocol::parse_thread_id(protocol::format_thread_id(t->pid, t->tid, multiprocess));
        INVARIANT(again && again->tid == t->tid);
    }
}

void vcont(std::string_view text) {
    if (auto actions = protocol::parse_vcont(text))
        for (const auto& a : *actions)
            INVARIANT(a.signal >= 0);
}

void legacy_resume(std::string_view text, bool has_signal) {
    if (auto r = protocol::parse_legacy_resume(text, has_signal)) INVARIANT(r->signal >= 0);
}

void xfer(std::string_view text) {
    auto r = protocol::parse_xfer_read(text);
    if (!r) return;
    INVARIANT(r->length <= protocol::kMaxTransfer);
    // The reply to that request, over data of the request's own text: never longer than asked
    // (plus the m/l prefix and escapes, at most two bytes a byte).
    const std::string reply = protocol::xfer_reply(text, r->offset, r->length);
    INVARIANT(!reply.empty() && (reply[0] == 'm' || reply[0] == 'l'));
    INVARIANT(reply.size() <= 1 + 2 * r->length);
}

void reloc_insn(std::string_view text) {
    if (protocol::is_reloc_insn_answer(text)) (void)protocol::parse_reloc_insn_answer(text);
}

void tracepoint_header(std::string_view text) {
    auto h = trace::parse_tracepoint_header(text, kRegisterCount);
    if (!h) return;
    const std::string printed = trace::format_header(h->definition);
    auto again = trace::parse_tracepoint_header(printed, kRegisterCount);
    INVARIANT(again && trace::format_header(again->definition) == printed);
}

void action_packet(std::string_view text) {
    auto a = trace::parse_action_packet(text, kRegisterCount);
    if (!a) return;
    const std::string printed = trace::format_action_string(a->actions);
    auto again = trace::parse_action_string(printed, kRegisterCount);
    INVARIANT(again && trace::format_action_string(*again) == printed);
}

void source_packet(std::string_view text) {
    auto s = trace::parse_source_packet(text);
    if (!s) return;
    const std::string printed = trace::format_key(s->key) + ":" + trace::format_source(s->source);
    auto again = trace::parse_source_packet(printed);
    INVARIANT(again && trace::format_source(again->source) == trace::format_source(s->source));
}

void tracepoint_key(std::string_view text) {
    auto k = trace::parse_tracepoint_key(text);
    if (!k) return;
    auto again = trace::parse_tracepoint_key(trace::format_key(*k));
    INVARIANT(again && trace::format_key(*again) == trace::format_key(*k));
}

void frame_query(std::string_view text) {
    (void)trace::parse_frame_query(text);
}

void buffer_setting(std::string_view text) {
    (void)trace::parse_buffer_setting(text);
}

void printf_format(std::string_view text) {
    if (auto f = bytecode::parse_printf_format(text)) INVARIANT(f->nargs <= f->pieces.size());
}

void trace_status(std::string_view text) {
    (void)tracefile::parse_trace_status(text);
}

void hex_numbers(std::string_view text) {
    if (auto u = protocol::parse_hex_u64(text)) INVARIANT(!text.empty());
    (void)protocol::parse_hex_i64(text);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    switch (data[0] % 18) {
    case 0:
        memory_range(text);
        break;
    case 1:
        memory_write(text, false);
        break;
    case 2:
        memory_write(text, true);
        break;
    case 3:
        breakpoint(text);
        break;
    case 4:
        thread_id(text);
        break;
    case 5:
        vcont(text);
        break;
    case 6:
        legacy_resume(text, false);
        break;
    case 7:
        legacy_resume(text, true);
        break;
    case 8:
        xfer(text);
        break;
    case 9:
        reloc_insn(text);
        break;
    case 10:
        tracepoint_header(text);
        break;
    case 11:
        action_packet(text);
        break;
    case 12:
        source_packet(text);
        break;
    case 13:
        tracepoint_key(text);
        break;
    case 14:
        frame_query(text);
        break;
    case 15:
        buffer_setting(text);
        break;
    case 16:
        printf_format(text);
        break;
    default:
        trace_status(text);
        hex_numbers(text);
        break;
    }
    return 0;
}
