// Connection set-up and general queries.
#include "process/target.hpp"
#include "server/debug_output.hpp"
#include "server/packet_handlers.hpp"
#include "server/server.hpp"
#include "server/session.hpp"
#include "protocol/signals.hpp"
#include "protocol/hex.hpp"
#include "protocol/replies.hpp"
#include "protocol/requests.hpp"
#include <algorithm>
#include <fmt/format.h>
#include <optional>
#include <string_view>
#include <unistd.h>
#include <utility>

namespace tpagent::server {

using namespace protocol;

namespace {

// Whether a libthread_db could be found along a libthread-db-search-path: `$sdir` (the
// system's) and `$pdir` (beside the program's libpthread) always can; a folder, if it holds one.
bool names_a_thread_db(std::string_view path) {
    while (!path.empty()) {
        const std::size_t colon = path.find(':');
        const std::string_view dir = path.substr(0, colon);
        if (dir == "$sdir" || dir == "$pdir" ||
            (!dir.empty() && ::access(fmt::format("{}/libthread_db.so.1", dir).c_str(), R_OK) == 0))
            return true;
        if (colon == std::string_view::npos) break;
        path.remove_prefix(colon + 1);
    }
    return false;
}

// The features of gdb's qSupported that change what tpagent does.
constexpr std::pair<std::string_view, bool Session::GdbFeatures::*> kGdbFeatures[] = {
    {"multiprocess+", &Session::GdbFeatures::multiprocess},
    {"swbreak+", &Session::GdbFeatures::swbreak},
    {"hwbreak+", &Session::GdbFeatures::hwbreak},
    {"qRelocInsn+", &Session::GdbFeatures::reloc_insn},
    {"exec-events+", &Session::GdbFeatures::exec_events},
    {"no-resumed+", &Session::GdbFeatures::no_resumed},
    {"fork-events+", &Session::GdbFeatures::fork_events},
    {"vfork-events+", &Session::GdbFeatures::vfork_events},
};
} // namespace

std::string handle_supported(Session& s, std::string_view args) {
    Session::GdbFeatures gdb = s.gdb_features();
    for (std::string_view feature : split(args, ';'))
        for (const auto& [name, flag] : kGdbFeatures)
            if (feature == name) gdb.*flag = true;
    s.set_gdb_features(gdb);
    // A fork event names the child process: only in gdb's multiprocess thread ids.
    const bool forks = gdb.fork_events && gdb.multiprocess;
    const bool vforks = gdb.vfork_events && gdb.multiprocess;
    s.server().set_event_reports({gdb.exec_events, gdb.no_resumed, forks, vforks, false});
    if (auto* inf = s.inferior()) s.server().apply_gdb_settings(*inf);
    std::string reply =
        fmt::format("PacketSize={:x};QPassSignals+;QProgramSignals+;QStartNoAckMode+;"
                    "QDisableRandomization+;QEnvironmentHexEncoded+;QEnvironmentUnset+;"
                    "QEnvironmentReset+;qXfer:features:read+;qXfer:auxv:read+;"
                    "qXfer:exec-file:read+;qXfer:threads:read+;qXfer:libraries-svr4:read+;"
                    "qXfer:siginfo:read+;qXfer:siginfo:write+;qXfer:osdata:read+;QCatchSyscalls+;"
                    "vContSupported+;ConditionalTracepoints+;ConditionalBreakpoints+;"
                    "BreakpointCommands+;TracepointSource+;"
                    "DisconnectedTracing+;InstallInTrace+;EnableDisableTracepoints+;"
                    "QTBuffer:size+;tracenz+;qXfer:traceframe-info:read+;StaticTracepoints+;"
                    "qXfer:statictrace:read+;QNonStop+;QThreadEvents+;Qbtrace:bts+;"
                    "Qbtrace-conf:bts:size+;Qbtrace:pt+;Qbtrace-conf:pt:size+;Qbtrace:off+;"
                    "qXfer:btrace:read+;qXfer:btrace-conf:read+",
                    kPacketSize);
    // gdb warns of an empty item: no ';' without a feature after it.
    const std::pair<bool, std::string_view> optional[] = {
        {arch::host_architecture().supports_fast_tracepoints(), "FastTracepoints+"},
        {gdb.multiprocess, "multiprocess+"},
        {gdb.swbreak, "swbreak+"},
        {gdb.hwbreak, "hwbreak+"},
        {gdb.exec_events, "exec-events+"},
        {gdb.no_resumed, "no-resumed+"},
        {forks, "fork-events+"},
        {vforks, "vfork-events+"},
    };
    for (const auto& [offered, feature] : optional)
        if (offered) (reply += ';') += feature;
    return reply;
}

std::string handle_start_no_ack(Session& s, std::string_view) {
    s.start_no_ack_mode(); // this OK still goes out with gdb acknowledging it
    return reply_ok();
}

std::string handle_extended_mode(Session& s, std::string_view) {
    s.enter_extended_mode();
    return reply_ok();
}

std::string handle_status(Session& s, std::string_view) {
    return s.status_reply();
}

// qAttached[:pid]: the process named, or the served one.
std::string handle_attached(Session& s, std::string_view args) {
    process::Target* inf = s.inferior();
    if (args.starts_with(':')) args.remove_prefix(1);
    if (!args.empty()) {
        auto pid = parse_hex_u64(args);
        if (!pid) return reply_error(ErrorCode::BadPacket);
        inf = *pid <= 0x7fffffff ? s.server().find_process(static_cast<pid_t>(*pid)) : nullptr;
    }
    if (!inf) return reply_error(ErrorCode::NoProcess);
    return inf->was_attached() ? "1" : "0";
}

std::string handle_current_thread(Session& s, std::string_view) {
    if (!s.inferior()) return reply_error(ErrorCode::NoProcess);
    // (A held process's thread, when Hg chose one.)
    if (auto* inf = s.addressed(); inf && inf != s.inferior())
        return "QC" + s.thread_id(s.addressed_thread(*inf));
    return "QC" + s.thread_id(s.current_thread());
}

std::string handle_thread_info_first(Session& s, std::string_view) {
    std::string out = "m";
    for (const auto& [pid, tid] : s.all_threads()) {
        if (out.size() > 1) out += ',';
        out += protocol::format_thread_id(pid, tid, s.multiprocess());
    }
    return out.size() > 1 ? out : "l";
}

std::string handle_thread_info_next(Session&, std::string_view) {
    return "l";
}

std::string handle_thread_alive(Session& s, const PacketArgs& args) {
    const ThreadId& id = args.thread(0);
    if (id.tid <= 0 || !s.has_thread(static_cast<pid_t>(id.tid)))
        return reply_error(ErrorCode::NoProcess);
    return reply_ok();
}

std::string handle_set_thread(Session& s, const PacketArgs& args) {
    const char op = args.character(0);
    if (op != 'g' && op != 'c') return reply_error(ErrorCode::BadPacket);
    pid_t tid = static_cast<pid_t>(args.thread(1).tid);
    const std::int64_t pid = args.thread(1).pid;
    if (tid > 0 && !s.has_thread(tid) && op == 'g' && pid > 0 && pid <= 0x7fffffff &&
        s.server().ended_unreported(static_cast<pid_t>(pid))) {
        s.select_ended_process();
        return reply_ok();
    }
    if (tid > 0 && !s.has_thread(tid)) return reply_error(ErrorCode::NoProcess);
    if (op == 'g')
        s.select_general_thread(tid > 0 ? tid : 0);
    else
        s.select_continue_thread(tid > 0 ? tid : -1);
    return reply_ok();
}

namespace {
Result<std::set<int>> parse_signal_list(std::string_view args) {
    std::set<int> out;
    if (args.empty()) return out;
    // gdb ends every list with ';' (RSP "General Query Packets": QPassSignals).
    if (args.back() == ';') args.remove_suffix(1);
    if (args.empty()) return out;
    for (std::string_view field : split(args, ';')) {
        auto n = parse_hex_u64(field);
        if (!n || *n > 255) return make_error(ErrorCode::BadPacket, "bad signal number");
        if (int host = protocol::gdb_to_host_signal(static_cast<int>(*n))) out.insert(host);
    }
    return out;
}
} // namespace

std::string handle_pass_signals(Session& s, std::string_view args) {
    auto set = parse_signal_list(args);
    if (!set) return reply_error(set.error());
    s.server().set_pass_signals(*set);
    if (auto* inf = s.inferior()) inf->set_pass_signals(*set);
    return reply_ok();
}

// QCatchSyscalls:1[;SYSNO...] (none listed: every call) or QCatchSyscalls:0.
std::string handle_catch_syscalls(Session& s, std::string_view args) {
    std::optional<std::set<int>> syscalls;
    if (args == "1" || args.starts_with("1;")) {
        syscalls.emplace();
        for (std::string_view field : split(args.substr(1), ';')) {
            if (field.empty()) continue;
            auto n = parse_hex_u64(field);
            if (!n || *n > 0xffff) return reply_error(ErrorCode::BadPacket);
            syscalls->insert(static_cast<int>(*n));
        }
    } else if (args != "0") {
        return reply_error(ErrorCode::BadPacket);
    }
    s.server().set_catch_syscalls(syscalls);
    if (auto* inf = s.inferior()) inf->set_catch_syscalls(std::move(syscalls));
    return reply_ok();
}

std::string handle_program_signals(Session&, std::string_view args) {
    // Every signal reaches the program unless gdb says otherwise when resuming; nothing to keep.
    auto set = parse_signal_list(args);
    return set ? reply_ok() : reply_error(set.error());
}

std::string handle_disable_randomization(Session& s, std::string_view args) {
    if (args != "0" && args != "1") return reply_error(ErrorCode::BadPacket);
    s.server().set_disable_randomization(args == "1");
    return reply_ok();
}

std::string handle_symbol(Session&, std::string_view) {
    return reply_ok();
}

namespace {
// A packet's 1 (on) or 0 (off).
Result<bool> parse_switch(std::string_view packet, std::string_view args) {
    if (args != "0" && args != "1")
        return make_error(ErrorCode::BadPacket, fmt::format("{} takes 0 or 1", packet));
    return args == "1";
}
} // namespace

// QNonStop:1 / QNonStop:0 (RSP "Remote Non-Stop"). Entering it leaves every thread as it is;
// leaving it stops them all. gdb asks `?` next.
std::string handle_non_stop(Session& s, std::string_view args) {
    auto switched = parse_switch("QNonStop", args);
    if (!switched) return reply_error_text(switched.error());
    const bool on = *switched;
    if (auto* inf = s.live_inferior())
        if (auto m = inf->set_non_stop(on); !m) return reply_error_text(m.error());
    s.server().set_non_stop(on);
    return reply_ok();
}

// QThreadEvents:1 / QThreadEvents:0: thread create and exit events (gdb asks for them while it
// stops every thread in non-stop mode, so that a thread's exit cannot leave it waiting).
std::string handle_thread_events(Session& s, std::string_view args) {
    auto switched = parse_switch("QThreadEvents", args);
    if (!switched) return reply_error_text(switched.error());
    auto reports = s.server().event_reports();
    reports.threads = *switched;
    s.server().set_event_reports(reports);
    if (auto* inf = s.inferior()) inf->set_event_reports(reports);
    return reply_ok();
}

// vStopped: gdb has taken the last stop; the next one, or OK once there is none.
std::string handle_stopped_ack(Session& s, std::string_view) {
    if (!s.non_stop()) return reply_empty();
    return s.acknowledge_stop();
}

namespace {
constexpr std::string_view kMonitorHelp = "The following monitor commands are supported:\n"
                                          "  set debug <0|1>\n"
                                          "    Enable or disable logging of every packet and "
                                          "ptrace event\n"
                                          "  set remote-debug <0|1>\n"
                                          "    Enable or disable logging of every packet\n"
                                          "  set debug-format option1[,option2,...]\n"
                                          "    What each line of debug output starts with\n"
                                          "    Options: all, none, timestamp\n"
                                          "  set btrace-method "
                                          "<block-ends|block-steps|single-steps>\n"
                                          "    How threads recorded from now on are run from "
                                          "branch to branch without BTS\n"
                                          "  breakpoints\n"
                                          "    Show where each conditional breakpoint's "
                                          "condition is evaluated\n"
                                          "  set inproc-breakpoints <on|off>\n"
                                          "    Whether conditions compiled to run in the "
                                          "program do (on by default)\n"
                                          "  tracepoints\n"
                                          "    Show how each fast tracepoint is collected "
                                          "(a jump, or a trap and why)\n"
                                          "  set inline-collection <on|off>\n"
                                          "    Whether fast tracepoints' pads installed from "
                                          "now on write their frames themselves where they "
                                          "can (on by default)\n"
                                          "  set trace-follow-fork <on|off>\n"
                                          "    Whether children forked during a trace run "
                                          "started from now on are traced too (off by "
                                          "default)\n"
                                          "  record [DIR [size N] [interval N] [files N] "
                                          "[min-free N] | off]\n"
                                          "    Record trace runs into rotating files in DIR "
                                          "(as --record), or not; alone, what is recorded\n"
                                          "  snapshot [dir DIR [files N] | trigger N "
                                          "[count K] | trigger off | show]\n"
                                          "    Write the trace buffer's frames into a new file "
                                          "now; or set the\n"
                                          "    folder, or a tracepoint whose hits write one; "
                                          "or show what is set\n"
                                          "  btrace\n"
                                          "    Show how each thread's branch trace is "
                                          "recorded\n"
                                          "  set libthread-db-search-path [PATH]\n"
                                          "    Accepted as gdbserver does; thread-local "
                                          "storage needs no libthread_db\n"
                                          "  exit\n"
                                          "    Quit tpagent\n"
                                          "  help\n"
                                          "    Print this message\n";

// `monitor btrace`: one line per recorded thread of the served program.
std::string branch_trace_summary(Session& s) {
    std::string out;
    auto* inf = s.live_inferior();
    for (pid_t tid : inf ? inf->thread_ids() : std::vector<pid_t>{}) {
        auto c = inf->branch_tracing().config(tid);
        if (!c) continue;
        out += fmt::format("Thread {}: {}; ring {} bytes; {} branches recorded", tid, c->backend,
                           c->size, c->branches);
        if (c->steps > 0)
            out += fmt::format("; {} steps, {} of them to a taken branch", c->steps,
                               c->steps_to_branch);
        out += '\n';
    }
    return out.empty() ? "No thread's branches are being recorded.\n" : out;
}

// A monitor command's answer: one reply while its hex fits a packet of PacketSize (a gdb
// script capturing the output with to_string gets it whole then); else in console packets
// (`O`), a line or more each, then OK, as gdb reads qRcmd answers, so no packet outgrows
// gdb's buffer (gdb -batch prints those on stderr, outside a to_string capture).
std::string console_reply(Session& s, const std::string& text) {
    constexpr std::size_t kPiece = 8192;
    if (text.size() <= kPiece) return to_hex(text);
    std::size_t at = 0;
    while (at < text.size()) {
        std::size_t end = text.find('\n', std::min(text.size(), at + kPiece / 2));
        end = end == std::string::npos ? text.size() : end + 1;
        s.send_console(std::string_view(text).substr(at, end - at));
        at = end;
    }
    return reply_ok();
}

// `monitor tracepoints`: one line per enabled fast tracepoint.
std::string fast_tracepoint_summary(Session& s) {
    std::string out;
    for (const auto& line : s.server().experiment().fast_tracepoint_lines(s.live_inferior(), false))
        out += line + "\n";
    return out.empty() ? "No fast tracepoint is enabled.\n" : out;
}

// `monitor breakpoints`: one line per conditional breakpoint of the served program.
std::string breakpoint_summary(Session& s) {
    std::string out;
    for (const auto& line : s.server().experiment().inproc_breakpoints().lines(s.live_inferior()))
        out += line + "\n";
    return out.empty() ? "No breakpoint has a condition for tpagent.\n" : out;
}

// `set NAME <0|1>`'s value, if `command` is that.
std::optional<bool> switch_value(std::string_view command, std::string_view name) {
    if (!command.starts_with(name)) return std::nullopt;
    std::string_view v = command.substr(name.size());
    if (v == "1" || v == "on") return true;
    if (v == "0" || v == "off") return false;
    return std::nullopt;
}
} // namespace

std::string handle_monitor(Session& s, const PacketArgs& args) {
    const std::string_view command = args.text(0);
    if (command == "help") return to_hex(kMonitorHelp);
    if (command == "exit") {
        s.server().request_exit();
        s.close_after_reply();
        return reply_ok();
    }
    if (auto on = switch_value(command, "set debug ")) {
        debug_output::set_debug(*on);
        return to_hex(*on ? "Debug output enabled.\n" : "Debug output disabled.\n");
    }
    if (auto on = switch_value(command, "set remote-debug ")) {
        debug_output::set_remote_debug(*on);
        return to_hex(*on ? "Protocol debug output enabled.\n"
                          : "Protocol debug output disabled.\n");
    }
    if (command == "btrace") return to_hex(branch_trace_summary(s));
    if (command == "record" || command.starts_with("record ")) {
        auto answer = s.server().record_command(command.substr(6));
        if (answer) return console_reply(s, *answer);
        s.send_console(answer.error().text + "\n");
        return reply_error(answer.error().code);
    }
    if (command == "snapshot" || command.starts_with("snapshot ")) {
        auto answer = s.server().snapshot_command(command.substr(8));
        if (answer) return console_reply(s, *answer);
        s.send_console(answer.error().text + "\n");
        return reply_error(answer.error().code);
    }
    if (command == "tracepoints") return console_reply(s, fast_tracepoint_summary(s));
    if (command == "breakpoints") return console_reply(s, breakpoint_summary(s));
    if (auto on = switch_value(command, "set inline-collection ")) {
        s.server().experiment().set_inline_collection(*on);
        return to_hex(*on ? "Pads installed from now on write their frames where they can.\n"
                          : "Pads installed from now on call the in-process agent's "
                            "collector.\n");
    }
    if (auto on = switch_value(command, "set trace-follow-fork ")) {
        s.server().experiment().set_follow_forks(*on);
        return to_hex(*on ? "Trace runs started from now on follow the children the program "
                            "forks: their fast and static tracepoints collect into the "
                            "trace.\n"
                          : "Children the program forks run on untraced.\n");
    }
    if (auto on = switch_value(command, "set inproc-breakpoints ")) {
        // (Breakpoints already in stay as they are until gdb inserts them again.)
        s.server().experiment().inproc_breakpoints().set_enabled(*on);
        return to_hex(*on ? "Conditions run in the program where they can.\n"
                          : "tpagent evaluates every breakpoint condition at each stop.\n");
    }
    // gdbserver's, for gdb scripts and tests written for it: tpagent reads thread-local
    // storage without libthread_db, so the path only says whether one could be found there:
    // where none can, qGetTLSAddr fails, as gdbserver's does (gdb.server/no-thread-db.exp).
    constexpr std::string_view kThreadDbPath = "set libthread-db-search-path";
    if (command == kThreadDbPath || command.starts_with(std::string(kThreadDbPath) + " ")) {
        std::string_view path = command.substr(kThreadDbPath.size());
        while (!path.empty() && path.front() == ' ')
            path.remove_prefix(1);
        if (path.empty()) path = "$sdir:$pdir";
        s.server().set_thread_db_reachable(names_a_thread_db(path));
        return to_hex(fmt::format("libthread-db-search-path set to `{}'\n", path));
    }
    if (command.starts_with("set btrace-method ")) {
        constexpr std::pair<std::string_view, process::BranchStepMethod> kMethods[] = {
            {"block-ends", process::BranchStepMethod::BlockEnds},
            {"block-steps", process::BranchStepMethod::BlockSteps},
            {"single-steps", process::BranchStepMethod::SingleSteps},
        };
        for (const auto& [name, method] : kMethods)
            if (command.substr(18) == name) {
                s.server().set_branch_step_method(method);
                return to_hex(fmt::format("Threads recorded from now on: {}.\n", name));
            }
    }
    std::string unknown = "Unknown monitor command.\n\n";
    if (command.starts_with("set debug-format ") && command.size() > 17) {
        auto answer = debug_output::set_format(command.substr(17));
        if (answer.known) return to_hex(answer.said);
        unknown = answer.said;
    }
    // gdbserver's answer to anything else, `monitor` alone included: the help, then an error,
    // so that a script with a mistyped command stops there.
    s.send_console(unknown + std::string(kMonitorHelp));
    return reply_error(ErrorCode::BadPacket);
}

} // namespace tpagent::server
