// qXfer objects: target description, auxv, executable name, threads, shared libraries.
#include "agent/inferior.hpp"
#include "agent/packet_handlers.hpp"
#include "agent/session.hpp"
#include "agent/svr4_libraries.hpp"
#include "arch/arch.hpp"
#include "protocol/hex.hpp"
#include "protocol/replies.hpp"
#include "protocol/requests.hpp"
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace tpagent::agent {

using namespace protocol;

namespace {
std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string xml_escape(std::string_view text) {
    std::string out;
    for (char c : text) {
        switch (c) {
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '&':
            out += "&amp;";
            break;
        case '"':
            out += "&quot;";
            break;
        default:
            out += c;
        }
    }
    return out;
}

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
        auto* inf = s.inferior();
        if (!inf || !inf->alive()) return make_error(ErrorCode::NoProcess, "no process");
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
        } else if (auto* inf = s.inferior()) {
            pid = inf->pid();
        }
        if (pid == 0) return make_error(ErrorCode::NoProcess, "no process");
        char buf[4096];
        ssize_t n = readlink(fmt::format("/proc/{}/exe", pid).c_str(), buf, sizeof buf);
        if (n <= 0) return make_error(ErrorCode::NotFound, "no such process");
        return std::string(buf, static_cast<std::size_t>(n));
    });
}

std::string handle_xfer_threads(Session& s, std::string_view args) {
    return xfer(args, [&](const std::string&) -> Result<std::string> {
        std::string xml = "<?xml version=\"1.0\"?>\n<threads>\n";
        if (auto* inf = s.inferior(); inf && inf->alive()) {
            for (pid_t tid : inf->thread_ids()) {
                xml += fmt::format("<thread id=\"{}\" name=\"{}\"/>\n", s.thread_id(tid),
                                   xml_escape(inf->thread_name(tid)));
            }
        }
        return xml + "</threads>\n";
    });
}

std::string handle_xfer_libraries_svr4(Session& s, std::string_view args) {
    return xfer(args, [&](const std::string&) -> Result<std::string> {
        auto* inf = s.inferior();
        if (!inf || !inf->alive()) return make_error(ErrorCode::NoProcess, "no process");
        std::string auxv = read_file(fmt::format("/proc/{}/auxv", inf->pid()));
        return svr4_library_list(auxv, [inf](std::uint64_t addr, std::span<std::uint8_t> out) {
            auto got = inf->read_memory(addr, out);
            return got && *got == out.size();
        });
    });
}

} // namespace tpagent::agent
