// Branch trace (gdb's `record btrace`): Qbtrace, Qbtrace-conf, qXfer:btrace:read and
// qXfer:btrace-conf:read (GDB manual, "General Query Packets", "Branch Trace Format" and
// "Branch Trace Configuration Format"). Each acts on Hg's thread, as gdbserver's do.
#include "server/packet_handlers.hpp"
#include "server/server.hpp"
#include "server/session.hpp"
#include "server/xfer_read.hpp"
#include "protocol/hex.hpp"
#include "protocol/replies.hpp"
#include "protocol/requests.hpp"
#include "protocol/xml.hpp"
#include <fmt/format.h>

namespace tpagent::server {

using namespace protocol;

namespace {

// The thread Hg names, else (as gdbserver, whose `?` selects it) the thread that stopped last:
// a gdb that connects reads each thread's btrace-conf without an Hg, to take up a recording
// that went on while no gdb was there.
Result<pid_t> btrace_thread(Session& s) {
    auto* inf = s.live_inferior();
    if (!inf) return make_error(ErrorCode::NoProcess, "No such thread.");
    const pid_t tid = s.general_thread() > 0 ? s.general_thread() : s.current_thread();
    if (tid <= 0) return make_error(ErrorCode::NotAllowed, "Must select a single thread.");
    if (!inf->has_thread(tid)) return make_error(ErrorCode::NoProcess, "No such thread.");
    return tid;
}

std::optional<process::BranchTraceRead> read_kind(std::string_view annex) {
    if (annex == "all") return process::BranchTraceRead::All;
    if (annex == "new") return process::BranchTraceRead::New;
    if (annex == "delta") return process::BranchTraceRead::Delta;
    return std::nullopt;
}

std::string btrace_xml(const std::vector<process::BranchBlock>& blocks) {
    // The DOCTYPE names gdb's built-in DTD: gdb resolves no other system id.
    std::string xml = "<?xml version=\"1.0\"?>\n<!DOCTYPE btrace SYSTEM \"btrace.dtd\">\n"
                      "<btrace version=\"1.0\">\n";
    xml.reserve(xml.size() + blocks.size() * 52 + 16);
    for (const process::BranchBlock& b : blocks)
        fmt::format_to(std::back_inserter(xml), "<block begin=\"0x{:x}\" end=\"0x{:x}\"/>\n",
                       b.begin, b.end);
    return xml + "</btrace>\n";
}

std::string btrace_conf_xml(const process::BranchTraceConfig& c) {
    // Which backend records it goes in a comment: the DTD has no attribute for it.
    return fmt::format(
        "<?xml version=\"1.0\"?>\n<!DOCTYPE btrace-conf SYSTEM \"btrace-conf.dtd\">\n"
        "<!-- recorded by {} -->\n<btrace-conf version=\"1.0\">\n"
        "<{} size=\"0x{:x}\"/>\n</btrace-conf>\n",
        xml_escape(c.backend), c.format == process::BranchTraceFormat::Pt ? "pt" : "bts", c.size);
}

} // namespace

std::string handle_btrace(Session& s, std::string_view args) {
    auto tid = btrace_thread(s);
    if (!tid) return reply_error_text(tid.error());
    process::Target& inf = *s.live_inferior();
    if (args == "off") {
        if (auto r = inf.branch_tracing().disable(*tid); !r) return reply_error_text(r.error());
        return reply_ok();
    }
    process::BranchTracing::Request request;
    if (args == "bts") {
        request.size = s.branch_trace_sizes().bts;
    } else if (args == "pt") {
        request.format = process::BranchTraceFormat::Pt;
        request.size = s.branch_trace_sizes().pt;
    } else {
        return "E.Bad Qbtrace operation.  Use bts, pt, or off.";
    }
    request.method = s.server().branch_step_method();
    if (auto r = inf.branch_tracing().enable(*tid, request); !r) return reply_error_text(r.error());
    return reply_ok();
}

std::string handle_btrace_conf(Session& s, std::string_view args) {
    if (auto tid = btrace_thread(s); !tid) return reply_error_text(tid.error());
    Session::BranchTraceSizes sizes = s.branch_trace_sizes();
    std::uint32_t* size = args.starts_with("bts:size=")  ? &sizes.bts
                          : args.starts_with("pt:size=") ? &sizes.pt
                                                         : nullptr;
    if (!size) return "E.Bad Qbtrace configuration option.";
    std::string_view digits = args.substr(args.find('=') + 1);
    if (digits.starts_with("0x")) digits.remove_prefix(2); // gdb sends "size=0x10000"
    auto value = parse_hex_u64(digits);
    if (!value || *value > UINT32_MAX) return "E.Bad size value.";
    *size = static_cast<std::uint32_t>(*value);
    s.set_branch_trace_sizes(sizes);
    return reply_ok();
}

std::string handle_xfer_btrace(Session& s, std::string_view args) {
    return cached_xfer(s, "btrace", args, [&](const std::string& annex) -> Result<std::string> {
        auto tid = btrace_thread(s);
        if (!tid) return tid.error();
        auto kind = read_kind(annex);
        if (!kind) return make_error(ErrorCode::BadPacket, "Bad annex.");
        auto blocks = s.live_inferior()->branch_tracing().read(*tid, *kind);
        if (!blocks) return blocks.error();
        return btrace_xml(*blocks);
    });
}

std::string handle_xfer_btrace_conf(Session& s, std::string_view args) {
    return cached_xfer(s, "btrace-conf", args,
                       [&](const std::string& annex) -> Result<std::string> {
                           if (!annex.empty()) return make_error(ErrorCode::NotFound, "Bad annex.");
                           auto tid = btrace_thread(s);
                           if (!tid) return tid.error();
                           auto conf = s.live_inferior()->branch_tracing().config(*tid);
                           if (!conf) return conf.error();
                           return btrace_conf_xml(*conf);
                       });
}

} // namespace tpagent::server
