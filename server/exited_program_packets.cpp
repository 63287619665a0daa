// The packet table for a program that ended while gdb was away (Server::exited_program).
// gdb's `target remote` wants a stopped thread to show, and tfind needs one to select frames
// on: the program's main thread stands in. Outside trace frames it has no registers but a zero
// pc (gdb gives up on a connection whose pc is unavailable), and no memory but the code of its
// files. Resuming it reports how the program ended; `kill` and `detach` let go of it. Packets
// about the process are answered here; the rest go to the usual handlers, which find no
// process, or read the trace as usual.
#include "server/packet_handlers.hpp"
#include "server/server.hpp"
#include "server/session.hpp"
#include "arch/arch.hpp"
#include "protocol/hex.hpp"
#include "protocol/replies.hpp"
#include "protocol/requests.hpp"
#include "protocol/xml.hpp"
#include <algorithm>
#include <filesystem>
#include <fmt/format.h>

namespace tpagent::server {

namespace {

const ExitedProgram& exited(Session& s) {
    return *s.exited_program();
}

std::string exited_current_thread(Session& s, std::string_view) {
    return "QC" + s.thread_id(exited(s).end.pid);
}

std::string exited_thread_list(Session& s, std::string_view) {
    return "m" + s.thread_id(exited(s).end.pid);
}

std::string exited_attached(Session& s, std::string_view) {
    return exited(s).was_attached ? "1" : "0";
}

// A register as a stand-in thread has it: the pc is zero, the others unavailable.
std::string exited_register_value(int regnum) {
    const auto& arch = arch::host_architecture();
    const auto& reg = arch.registers()[static_cast<std::size_t>(regnum)];
    return std::string(reg.size * 2, regnum == arch.pc_regnum() ? '0' : 'x');
}

std::string exited_registers(Session& s, std::string_view args) {
    if (s.trace_frame()) return handle_read_registers(s, args);
    std::string out;
    const auto count = arch::host_architecture().registers().size();
    for (std::size_t i = 0; i < count; ++i)
        out += exited_register_value(static_cast<int>(i));
    return out;
}

std::string exited_register(Session& s, const protocol::PacketArgs& args) {
    if (s.trace_frame()) return handle_read_register(s, args);
    const std::uint64_t n = args.number(0);
    if (n >= arch::host_architecture().registers().size())
        return protocol::reply_error(ErrorCode::NotFound);
    return exited_register_value(static_cast<int>(n));
}

// What a trace frame holds, else the program's code from its files: memory is gone with it.
std::string exited_read_memory(Session& s, std::string_view args) {
    if (s.trace_frame()) {
        std::string collected = handle_read_memory(s, args);
        if (!collected.starts_with('E')) return collected;
    }
    auto range = protocol::parse_memory_range(args);
    if (!range) return protocol::reply_error(range.error());
    const auto& image = exited(s).image;
    std::vector<std::uint8_t> bytes(std::min<std::uint64_t>(range->length, kPacketSize / 2));
    const std::size_t got = image ? read_code(*image, range->addr, bytes) : 0;
    if (got == 0) return protocol::reply_error(ErrorCode::MemoryAccess);
    return protocol::to_hex(std::span(bytes.data(), got));
}

std::string exited_resume(Session& s, std::string_view) {
    const process::StopEvent end = exited(s).end;
    s.server().forget_exited_program();
    s.set_last_stop(end);
    return s.stop_reply(end);
}

std::string exited_vcont(Session& s, std::string_view args) {
    auto actions = protocol::parse_vcont(args);
    if (!actions) return protocol::reply_error(actions.error());
    const bool resumes = std::any_of(actions->begin(), actions->end(), [](const auto& a) {
        return a.kind != protocol::ResumeAction::Kind::Stop;
    });
    return resumes ? exited_resume(s, args) : protocol::reply_ok();
}

bool is_exited_process(Session& s, std::uint64_t pid) {
    return pid == static_cast<std::uint64_t>(exited(s).end.pid);
}

bool names_exited_process(Session& s, std::string_view pid_text) {
    auto pid = protocol::parse_hex_u64(pid_text);
    return pid && is_exited_process(s, *pid);
}

// As `D` of a live program, with nothing to detach from.
std::string exited_detach(Session& s, std::string_view args) {
    if (!args.empty() && !names_exited_process(s, args.front() == ';' ? args.substr(1) : args))
        return protocol::reply_error(ErrorCode::NoProcess);
    s.server().forget_exited_program();
    s.forget_last_stop();
    if (!s.extended()) {
        s.server().request_exit();
        s.close_after_reply();
    }
    return protocol::reply_ok();
}

std::string exited_kill(Session& s, const protocol::PacketArgs& args) {
    if (!is_exited_process(s, args.number(0))) return handle_vkill(s, args);
    s.server().forget_exited_program();
    s.forget_last_stop();
    return protocol::reply_ok();
}

template <typename MakeData> std::string exited_xfer(std::string_view args, const MakeData& make) {
    auto req = protocol::parse_xfer_read(args);
    if (!req) return protocol::reply_error(req.error());
    Result<std::string> data = make(req->annex);
    if (!data) return protocol::reply_error_text(data.error());
    return protocol::xfer_reply(*data, req->offset,
                                std::min<std::uint64_t>(req->length, kPacketSize / 2 - 16));
}

// One of the things kept of the program when it went on without gdb.
Result<std::string> kept(Session& s, std::string ProgramImage::*part) {
    const auto& image = exited(s).image;
    if (!image) return make_error(ErrorCode::NoProcess, "nothing of the ended program was kept");
    return *image.*part;
}

std::string exited_xfer_threads(Session& s, std::string_view args) {
    return exited_xfer(args, [&](const std::string&) -> Result<std::string> {
        auto executable = kept(s, &ProgramImage::executable);
        const std::string name =
            executable ? std::filesystem::path(*executable).filename().string() : "program";
        return fmt::format("<?xml version=\"1.0\"?>\n<threads>\n<thread id=\"{}\" "
                           "name=\"{} (exited)\"/>\n</threads>\n",
                           s.thread_id(exited(s).end.pid), protocol::xml_escape(name));
    });
}

std::string exited_xfer_auxv(Session& s, std::string_view args) {
    return exited_xfer(args, [&](const std::string&) { return kept(s, &ProgramImage::auxv); });
}

std::string exited_xfer_libraries(Session& s, std::string_view args) {
    return exited_xfer(args, [&](const std::string&) { return kept(s, &ProgramImage::libraries); });
}

std::string exited_xfer_exec_file(Session& s, std::string_view args) {
    auto req = protocol::parse_xfer_read(args);
    if (req && !req->annex.empty() && !names_exited_process(s, req->annex))
        return handle_xfer_exec_file(s, args); // another process
    return exited_xfer(args,
                       [&](const std::string&) { return kept(s, &ProgramImage::executable); });
}

// Its files are gone with /proc/PID/root: gdb reads them from tpagent's own filesystem.
std::string exited_setfs(Session& s, const protocol::PacketArgs& args) {
    if (!is_exited_process(s, args.number(0))) return handle_vfile_setfs(s, args);
    s.host_io().fs_pid = 0;
    return "F0";
}
} // namespace

const protocol::PacketTable<Session>& exited_program_packets() {
    static const protocol::PacketTable<Session> table{
        {"qC", exited_current_thread},
        {"qfThreadInfo", exited_thread_list},
        {"qAttached", exited_attached},
        {"g", exited_registers},
        {"p", kRegisterNumber, exited_register},
        {"m", exited_read_memory},
        {"c", exited_resume},
        {"C", exited_resume},
        {"s", exited_resume},
        {"S", exited_resume},
        {"vCont", exited_vcont},
        {"D", exited_detach},
        {"vKill", kHex, exited_kill},
        {"qXfer:threads:read", exited_xfer_threads},
        {"qXfer:auxv:read", exited_xfer_auxv},
        {"qXfer:exec-file:read", exited_xfer_exec_file},
        {"qXfer:libraries-svr4:read", exited_xfer_libraries},
        {"vFile:setfs", kHostIoPid, exited_setfs},
    };
    return table;
}

} // namespace tpagent::server
