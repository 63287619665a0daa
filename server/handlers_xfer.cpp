// qXfer objects: target description, auxv, executable name, threads, shared libraries, siginfo,
// osdata.
#include "process/target.hpp"
#include "server/osdata.hpp"
#include "server/packet_handlers.hpp"
#include "base/proc_files.hpp"
#include "server/server.hpp"
#include "server/session.hpp"
#include "server/xfer_read.hpp"
#include "arch/arch.hpp"
#include "protocol/hex.hpp"
#include "protocol/replies.hpp"
#include "protocol/requests.hpp"
#include "protocol/xml.hpp"
#include <fmt/format.h>

namespace tpagent::server {

using namespace protocol;

namespace {
// Keeps each chunk, once hex-free binary, within a packet even if every byte were escaped.
std::uint64_t chunk_limit(std::uint64_t asked) {
    return std::min<std::uint64_t>(asked, kPacketSize / 2 - 16);
}

template <typename MakeData> std::string xfer(std::string_view args, MakeData make) {
    auto req = parse_xfer_read(args);
    if (!req) return reply_error(req.error());
    Result<std::string> data = make(req->annex);
    if (!data) return reply_error_text(data.error());
    return xfer_reply(*data, req->offset, chunk_limit(req->length));
}
} // namespace

std::string handle_xfer_features(Session&, std::string_view args) {
    return xfer(args, [](const std::string& annex) -> Result<std::string> {
        auto xml = arch::host_architecture().feature_xml(annex);
        if (!xml) return make_error(ErrorCode::NotFound, "no such annex");
        return *xml;
    });
}

std::string handle_xfer_auxv(Session& s, std::string_view args) {
    return xfer(args, [&](const std::string&) -> Result<std::string> {
        auto* inf = s.addressed(); // (Hg's process: a held one too)
        if (!inf) return make_error(ErrorCode::NoProcess, "no process");
        return read_file(fmt::format("/proc/{}/auxv", inf->pid()));
    });
}

std::string handle_xfer_exec_file(Session& s, std::string_view args) {
    return xfer(args, [&](const std::string& annex) -> Result<std::string> {
        pid_t pid = 0;
        if (!annex.empty()) {
            auto p = parse_hex_u64(annex);
            if (!p || *p > 0x7fffffff) return make_error(ErrorCode::BadPacket, "bad pid");
            pid = static_cast<pid_t>(*p);
        } else {
            process::Target* inf = s.addressed(); // (Hg's process: a held one too)
            if (!inf) inf = s.inferior();
            if (inf) pid = inf->pid();
        }
        if (pid == 0) return make_error(ErrorCode::NoProcess, "no process");
        std::string exe = read_link(fmt::format("/proc/{}/exe", pid));
        if (exe.empty()) return make_error(ErrorCode::NotFound, "no such process");
        return exe;
    });
}

std::string handle_xfer_threads(Session& s, std::string_view args) {
    return xfer(args, [&](const std::string&) -> Result<std::string> {
        std::string xml = "<?xml version=\"1.0\"?>\n<threads>\n";
        if (s.live_inferior()) {
            for (const auto& [pid, tid] : s.all_threads()) {
                process::Target* p =
                    s.inferior()->has_thread(tid) ? s.inferior() : s.server().held_process(pid);
                const std::string name = p ? p->thread_name(tid) : "";
                xml += fmt::format("<thread id=\"{}\" name=\"{}\"/>\n",
                                   protocol::format_thread_id(pid, tid, s.multiprocess()),
                                   protocol::xml_escape(name));
            }
        }
        return xml + "</threads>\n";
    });
}

std::string handle_xfer_libraries_svr4(Session& s, std::string_view args) {
    return xfer(args, [&](const std::string&) -> Result<std::string> {
        auto* inf = s.addressed();
        if (!inf) return make_error(ErrorCode::NoProcess, "no process");
        auto list = inf->library_list();
        // No DT_DEBUG: an error makes gdb read the list itself, as after gdbserver's E01.
        if (!list) return make_error(ErrorCode::NotFound, "the program has no DT_DEBUG");
        return *std::move(list);
    });
}

// `info os`: gdb reads a table in chunks, and the document made for offset 0 serves the rest,
// so that a table of processes that come and go stays whole (gdbserver does so too).
std::string cached_xfer(Session& s, std::string_view object, std::string_view args,
                        const std::function<Result<std::string>(const std::string& annex)>& make) {
    auto req = parse_xfer_read(args);
    if (!req) return reply_error(req.error());
    auto& documents = s.xfer_documents();
    const std::string* doc = req->offset == 0 ? nullptr : documents.find(object, req->annex);
    if (!doc) {
        auto data = make(req->annex);
        if (!data) return reply_error_text(data.error());
        doc = &documents.keep(object, req->annex, std::move(*data));
    }
    std::string reply = xfer_reply(*doc, req->offset, chunk_limit(req->length));
    if (reply.starts_with('l')) documents.drop(); // the last chunk: a branch trace can be large
    return reply;
}

std::string handle_xfer_osdata(Session& s, std::string_view args) {
    return cached_xfer(s, "osdata", args, osdata_xml);
}

// $_siginfo: the general thread's (Hg), as gdbserver takes it.
std::string handle_xfer_siginfo_read(Session& s, std::string_view args) {
    return xfer(args, [&](const std::string& annex) -> Result<std::string> {
        if (!annex.empty()) return make_error(ErrorCode::NotFound, "no such annex");
        auto* inf = s.addressed();
        if (!inf) return make_error(ErrorCode::NoProcess, "no process");
        auto info = inf->registers().read_siginfo(s.addressed_thread(*inf));
        if (!info) return info.error();
        return std::string(info->begin(), info->end());
    });
}

// A part of the siginfo, at an offset: the rest stays as it is.
std::string handle_xfer_siginfo_write(Session& s, std::string_view args) {
    auto req = parse_xfer_write(args);
    if (!req) return reply_error(req.error());
    if (!req->annex.empty()) return reply_error(ErrorCode::NotFound);
    auto* inf = s.addressed();
    if (!inf) return reply_error(ErrorCode::NoProcess);
    const pid_t tid = s.addressed_thread(*inf);
    auto info = inf->registers().read_siginfo(tid);
    if (!info) return reply_error_text(info.error());
    if (req->offset > info->size() || req->data.size() > info->size() - req->offset)
        return reply_error_text(
            make_error(ErrorCode::TooLarge, fmt::format("siginfo is {} bytes", info->size())));
    std::copy(req->data.begin(), req->data.end(),
              info->begin() + static_cast<std::ptrdiff_t>(req->offset));
    if (auto written = inf->registers().write_siginfo(tid, *info); !written)
        return reply_error_text(written.error());
    return fmt::format("{:x}", req->data.size());
}

} // namespace tpagent::server
