// Run control: resume, step, kill, detach, run, attach, interrupt.
#include "process/target.hpp"
#include "server/packet_handlers.hpp"
#include "server/server.hpp"
#include "server/session.hpp"
#include "protocol/signals.hpp"
#include "protocol/hex.hpp"
#include "protocol/replies.hpp"
#include "protocol/requests.hpp"
#include <csignal>
#include <cstdio>
#include <fmt/format.h>

namespace tpagent::server {

using namespace protocol;

namespace {

// Starts the threads and either returns the stop reply at once or defers it (non-stop: OK,
// each stop coming as a notification).
std::string start(Session& s, const std::vector<process::ThreadResume>& plan) {
    auto* inf = s.inferior();
    auto r = inf->resume(plan);
    if (!r) return reply_error(r.error());
    if (s.non_stop()) return reply_ok();
    if (*r) {
        s.set_last_stop(**r);
        return s.stop_reply(**r);
    }
    s.defer_reply();
    return {};
}

std::string legacy_resume(Session& s, std::string_view args, bool signal, bool step) {
    auto req = parse_legacy_resume(args, signal);
    if (!req) return reply_error(req.error());
    auto* inf = s.live_inferior();
    if (!inf) return reply_error(ErrorCode::NoProcess);
    pid_t current = s.current_thread();
    if (req->addr) {
        // Resuming at an address: write it into the pc of the thread being resumed.
        const auto& arch = arch::host_architecture();
        std::vector<std::uint8_t> pc(
            arch.registers()[static_cast<std::size_t>(arch.pc_regnum())].size);
        for (std::size_t i = 0; i < pc.size() && i < 8; ++i)
            pc[i] = static_cast<std::uint8_t>(*req->addr >> (8 * i));
        if (auto w = inf->registers().write_one(current, arch.pc_regnum(), pc); !w)
            return reply_error(w.error());
    }
    int host_sig = protocol::gdb_to_host_signal(req->signal);
    std::vector<process::ThreadResume> plan;
    // c/s move every thread (all-stop); the signal and the step go to the selected thread.
    pid_t focus = s.continue_thread() > 0 ? s.continue_thread() : current;
    for (pid_t tid : inf->thread_ids()) {
        bool is_focus = tid == focus;
        if (step && !is_focus) continue; // a single step leaves the others where they are
        plan.push_back({tid, step && is_focus, is_focus ? host_sig : 0});
    }
    return start(s, plan);
}

// vRun and R: `argv` starts, stopped at its first instruction, which becomes the session's
// last stop. A gdb with multiprocess ids runs it beside the processes it has (another
// inferior's `run`: gdb kills what ran in that inferior itself, with vKill); otherwise
// whatever runs is killed (as for k: the new program starts regardless).
Status run_afresh(Session& s, const std::vector<std::string>& argv, bool beside) {
    pid_t pid = 0;
    if (beside) {
        auto started = s.server().start_beside(argv);
        if (!started) return started.error();
        pid = *started;
    } else {
        s.server().kill_all();
        if (auto st = s.server().start_program(argv); !st) return st;
        pid = s.inferior()->pid();
    }
    process::StopEvent ev;
    ev.pid = ev.tid = pid;
    ev.signal = SIGTRAP;
    s.set_last_stop(ev);
    // (Held while a trace runs in the served program: addressed by its thread.)
    s.select_general_thread(s.inferior() && s.inferior()->pid() == pid ? 0 : pid);
    return ok_status();
}
} // namespace

std::string handle_continue(Session& s, std::string_view args) {
    return legacy_resume(s, args, false, false);
}
std::string handle_continue_signal(Session& s, std::string_view args) {
    return legacy_resume(s, args, true, false);
}
std::string handle_step(Session& s, std::string_view args) {
    return legacy_resume(s, args, false, true);
}
std::string handle_step_signal(Session& s, std::string_view args) {
    return legacy_resume(s, args, true, true);
}

std::string handle_vcont_query(Session&, std::string_view) {
    return "vCont;c;C;s;S;t;r";
}

std::string handle_vctrlc(Session& s, std::string_view) {
    // (Stopped already: nothing to interrupt, the reply says OK all the same.)
    if (s.server().any_running(nullptr)) s.server().interrupt();
    return reply_ok();
}

std::string handle_kill(Session& s, std::string_view) {
    (void)s.server().kill_inferior(); // SIGKILL and reap: nothing to report if it was gone
    s.forget_last_stop();
    if (!s.extended()) {
        // gdb does not wait for a reply: the connection simply ends.
        s.server().request_exit();
        s.close();
        s.server().session_closed(s);
        return {};
    }
    s.suppress_reply(); // no reply to `k`; gdb asks `?` next
    return {};
}

std::string handle_vkill(Session& s, const PacketArgs& args) {
    const std::uint64_t pid = args.number(0);
    auto* inf = s.inferior();
    // gdb's kill first kills a forked child it was told of and did not follow, and the
    // processes it holds.
    if (inf && pid <= 0x7fffffff && inf->fork_children().kill(static_cast<pid_t>(pid)))
        return reply_ok();
    if (pid <= 0x7fffffff && s.server().kill_held(static_cast<pid_t>(pid))) return reply_ok();
    if (!inf || static_cast<std::uint64_t>(inf->pid()) != pid)
        return reply_error(ErrorCode::NoProcess);
    (void)s.server().kill_inferior(); // as for k
    s.forget_last_stop();
    return reply_ok();
}

std::string handle_detach(Session& s, std::string_view args) {
    auto* inf = s.inferior();
    if (!inf) return reply_error(ErrorCode::NoProcess);
    if (!args.empty()) {
        auto pid = parse_hex_u64(args.front() == ';' ? args.substr(1) : args);
        if (!pid || *pid > 0x7fffffff) return reply_error(ErrorCode::NoProcess);
        // A forked child gdb does not follow (detach-on-fork): it runs on untraced. Unlike
        // gdbserver, no "Detaching from process" line (the debug log has one): a line per fork
        // fills a console nobody reads (DejaGnu's for the stub), and a write to it then stops
        // tpagent in the middle of a reply.
        if (inf->fork_children().release(static_cast<pid_t>(*pid))) return reply_ok();
        if (s.server().detach_held(static_cast<pid_t>(*pid))) return reply_ok();
        if (static_cast<std::uint64_t>(inf->pid()) != *pid)
            return reply_error(ErrorCode::NoProcess);
    }
    // (As gdbserver: either keeps the program, and says so.)
    const bool tracing = s.server().keep_tracing_without_gdb(/*resume=*/true);
    const bool commands = s.server().keep_commands_without_gdb();
    if (tracing || commands) {
        if (tracing)
            fmt::print(stderr,
                       "Disconnected tracing in effect, leaving tpagent attached to the process\n");
        if (commands)
            fmt::print(
                stderr,
                "Persistent commands are present, leaving tpagent attached to the process\n");
        std::fflush(stderr);
        s.forget_last_stop();
        return reply_ok();
    }
    // gdb follows a forked child (follow-fork-mode child): it becomes the program served.
    std::unique_ptr<process::Target> child = inf->fork_children().take();
    if (auto d = s.server().detach_inferior(); !d) return reply_error(d.error());
    s.forget_last_stop();
    if (child) s.server().adopt(std::move(child));
    if (s.inferior()) return reply_ok(); // (a held process is served now)
    if (!s.extended()) {
        s.server().request_exit();
        s.close_after_reply();
    }
    return reply_ok();
}

std::string handle_vrun(Session& s, std::string_view args) {
    std::vector<std::string> argv;
    for (std::string_view field : split(args, ';')) {
        auto text = hex_to_text(field);
        if (!text) return reply_error(text.error());
        argv.push_back(*text);
    }
    if (argv.empty() || argv.front().empty()) {
        // No program named (an inferior with no `set remote exec-file`): the one run last, as
        // gdbserver does, else the command line's.
        const auto& prog = s.server().last_program().empty() ? s.server().options().program
                                                             : s.server().last_program();
        if (prog.empty())
            return reply_error_text(
                make_error(ErrorCode::NotFound, "No executable file specified."));
        if (argv.empty())
            argv = prog;
        else
            argv.front() = prog.front();
    }
    if (auto st = run_afresh(s, argv, s.multiprocess()); !st) return reply_error_text(st.error());
    return s.stop_reply(*s.last_stop());
}

// R XX: extended mode's restart of the program started last (gdb sends it where vRun is not
// there). No reply: gdb asks with `?` what the new program is doing.
std::string handle_restart(Session& s, std::string_view) {
    if (!s.extended()) return reply_empty();
    s.suppress_reply();
    std::vector<std::string> argv = s.server().last_program();
    if (argv.empty()) argv = s.server().options().program;
    // Nothing was started here (an attached process): nothing to restart, nothing killed.
    if (argv.empty()) return {};
    fmt::print(stderr, "tpagent restarting\n"); // gdbserver's "GDBserver restarting"
    std::fflush(stderr);
    if (auto st = run_afresh(s, argv, false); !st) {
        fmt::print(stderr, "Cannot restart {}: {}\n", argv.front(), st.error().text);
        std::fflush(stderr);
    }
    return {};
}

std::string handle_vattach(Session& s, const PacketArgs& args) {
    const std::uint64_t pid = args.number(0);
    if (pid == 0 || pid > 0x7fffffff) return reply_error(ErrorCode::BadPacket);
    // A gdb with multiprocess ids attaches beside the processes it has (another inferior).
    if (s.live_inferior() && !s.multiprocess())
        return reply_error_text(make_error(ErrorCode::NotAllowed, "Already debugging a process"));
    if (s.server().find_process(static_cast<pid_t>(pid)))
        return reply_error_text(
            make_error(ErrorCode::NotAllowed, fmt::format("Already attached to process {}", pid)));
    const Status st = s.live_inferior() ? s.server().attach_beside(static_cast<pid_t>(pid))
                                        : s.server().attach_to(static_cast<pid_t>(pid));
    if (!st) return reply_error_text(st.error());
    process::StopEvent ev;
    ev.pid = ev.tid = static_cast<pid_t>(pid);
    ev.signal = 0;
    s.set_last_stop(ev);
    // (Held while a trace runs in the served program: addressed by its thread.)
    s.select_general_thread(s.inferior()->pid() == ev.pid ? 0 : ev.pid);
    // Non-stop: OK; the stop goes to gdb as a notification when gdb stops the process
    // (RSP "vAttach"; gdb's attach sends vCont;t).
    if (s.non_stop()) {
        s.hold_attach_stop(ev);
        return reply_ok();
    }
    return s.stop_reply(ev);
}

// gdb's `set environment` / `unset environment` for programs started with `run`
// (GDB manual, General Query Packets: QEnvironmentHexEncoded, QEnvironmentUnset,
// QEnvironmentReset). gdb resets, then replays every change before each `run`.
std::string handle_environment_set(Session& s, const PacketArgs& args) {
    const std::string& text = args.text(0);
    const std::size_t eq = text.find('=');
    if (eq == 0 || eq == std::string::npos)
        return reply_error_text(make_error(ErrorCode::BadPacket, "expected NAME=VALUE"));
    s.server().environment().set(text.substr(0, eq), text.substr(eq + 1));
    return reply_ok();
}

std::string handle_environment_unset(Session& s, const PacketArgs& args) {
    const std::string& name = args.text(0);
    if (name.empty()) return reply_error_text(make_error(ErrorCode::BadPacket, "no name"));
    s.server().environment().unset(name);
    return reply_ok();
}

std::string handle_environment_reset(Session& s, std::string_view) {
    s.server().environment().reset();
    return reply_ok();
}

} // namespace tpagent::server
