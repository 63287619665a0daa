#include "server/session.hpp"
#include "server/debug_output.hpp"
#include "server/packet_handlers.hpp"
#include "server/server.hpp"
#include "protocol/signals.hpp"
#include "arch/arch.hpp"
#include "protocol/hex.hpp"
#include "protocol/packet.hpp"
#include "protocol/replies.hpp"
#include "protocol/requests.hpp"
#include "protocol/stop_reply.hpp"
#include <algorithm>
#include <csignal>
#include <new>
#include <utility>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tpagent::server {

using protocol::FrameEvent;

Session::Session(Server& server, std::unique_ptr<Connection> conn)
    : server_(server), conn_(std::move(conn)) {}

process::Target* Session::inferior() {
    return server_.inferior();
}

process::Target* Session::live_inferior() {
    auto* inf = inferior();
    return inf && inf->alive() ? inf : nullptr;
}

bool Session::has_thread(pid_t tid) {
    if (const auto* gone = exited_program()) return tid == gone->end.pid;
    for (const auto& [pid, t] : all_threads())
        if (t == tid) return true;
    return false;
}

process::Target* Session::addressed() {
    if (general_ended_) return nullptr;
    if (general_thread_ > 0) {
        for (const auto& p : server_.held_processes())
            if (p->has_thread(general_thread_)) return p->alive() ? p.get() : nullptr;
        if (general_thread_is_fork_child()) return server_.hold_fork_child(general_thread_);
    }
    return live_inferior();
}

pid_t Session::addressed_thread(process::Target& process) {
    if (&process == inferior()) return current_thread();
    return general_thread_ > 0 && process.has_thread(general_thread_) ? general_thread_
                                                                      : process.pid();
}

std::vector<std::pair<pid_t, pid_t>> Session::all_threads() {
    std::vector<std::pair<pid_t, pid_t>> out;
    auto* inf = inferior();
    if (!inf) return out;
    for (pid_t tid : inf->thread_ids())
        out.emplace_back(inf->pid(), tid);
    for (const auto& p : server_.held_processes())
        for (pid_t tid : p->thread_ids())
            out.emplace_back(p->pid(), tid);
    for (process::Target* p : server_.processes())
        for (pid_t child : p->fork_children().list())
            out.emplace_back(child, child);
    return out;
}

bool Session::general_thread_is_fork_child() {
    if (general_thread_ <= 0) return false;
    for (process::Target* p : server_.processes())
        if (p->fork_children().held(general_thread_)) return true;
    return false;
}

const ExitedProgram* Session::exited_program() {
    return server_.exited_program();
}

void Session::start() {
    read_more();
}

void Session::close() {
    if (closed_) return;
    closed_ = true;
    conn_->close();
}

void Session::read_more() {
    conn_->async_read(buf_, [this](const boost::system::error_code& ec, std::size_t n) {
        if (closed_) return;
        if (ec) {
            spdlog::debug("connection closed: {}", ec.message());
            closed_ = true;
            conn_->close();
            server_.session_closed(*this, ec == boost::asio::error::eof
                                              ? Server::ConnectionEnd::Closed
                                              : Server::ConnectionEnd::Lost);
            return;
        }
        receive(std::span(buf_.data(), n));
        if (!closed_) read_more();
    });
}

void Session::receive(std::span<const std::uint8_t> bytes) {
    std::vector<FrameEvent> events;
    decoder_.feed(bytes, events);
    for (const auto& ev : events) {
        handle(ev);
        if (closed_) return;
    }
}

void Session::handle(const FrameEvent& ev) {
    switch (ev.kind) {
    case FrameEvent::Kind::Ack:
        return;
    case FrameEvent::Kind::Nack:
        if (!last_frame_.empty()) conn_->write(last_frame_);
        return;
    case FrameEvent::Kind::Interrupt:
        debug_output::packets().debug("<- ^C");
        server_.interrupt();
        return;
    case FrameEvent::Kind::BadChecksum:
        debug_output::packets().debug("<- bad checksum: {}", ev.payload);
        if (!no_ack_) {
            conn_->write("-");
            return;
        }
        // Without acks the checksum may be ignored (RSP "Packet Acknowledgment").
        dispatch(ev.payload);
        return;
    case FrameEvent::Kind::Oversize:
        debug_output::packets().debug("<- packet longer than PacketSize");
        if (!no_ack_) conn_->write("+");
        send_packet(protocol::reply_error(ErrorCode::TooLarge));
        return;
    case FrameEvent::Kind::Packet:
        if (!no_ack_) conn_->write("+");
        dispatch(ev.payload);
        return;
    }
}

void Session::dispatch(const std::string& payload) {
    debug_output::packets().debug("<- {}",
                                  payload.size() > 200 ? payload.substr(0, 200) + "..." : payload);
    if (reloc_answer_ && protocol::is_reloc_insn_answer(payload)) {
        AnswerHandler next = std::exchange(reloc_answer_, nullptr);
        // The answer goes on with QTStart's work: patches, with every thread stopped.
        send_packet(run_paused("QTStart", [&] { return next(*this, payload); }));
        return;
    }
    auto view = protocol::classify(payload);
    const auto* handler = exited_program() ? exited_program_packets().find(view.name) : nullptr;
    if (!handler) handler = packet_table().find(view.name);
    if (!handler || server_.options().disabled.refuses(view.name)) {
        send_packet(protocol::reply_empty());
        return;
    }
    deferred_ = false;
    suppressed_ = false;
    // Fast tracepoints' hit counts and stop reasons come in before anything looks at the trace.
    server_.experiment().poll(server_.inferior());
    std::string reply = run_paused(view.name, [&] { return run_handler(*handler, view); });
    server_.watch_fast_trace(); // the packet may have started one
    server_.watch_recording();
    server_.watch_snapshot_trigger();
    if (closed_ || suppressed_) return;
    if (deferred_) {
        waiting_ = true;
        return;
    }
    send_packet(reply);
    for (const process::StopEvent& ev : std::exchange(after_reply_, {}))
        on_stop(ev);
    if (exit_after_reply_) {
        close();
        server_.session_closed(*this);
        return;
    }
    if (non_stop()) server_.pump_events(); // events the packet let out (held back, or a pause's)
}

std::string Session::run_paused(std::string_view name, const std::function<std::string()>& run) {
    // Every process: the packet may address a held one (Hg).
    std::vector<process::Target*> paused;
    if (non_stop() && packet_table().stops_all(name)) paused = server_.processes();
    for (std::size_t i = 0; i < paused.size(); ++i)
        if (auto p = paused[i]->pause_all(); !p) {
            for (std::size_t j = 0; j <= i; ++j)
                paused[j]->unpause_all();
            return protocol::reply_error_text(p.error());
        }
    std::string reply = run();
    // (The handler may have ended a program: a detach, a kill, another one run.)
    const std::vector<process::Target*> still = server_.processes();
    for (process::Target* p : paused)
        if (std::find(still.begin(), still.end(), p) != still.end()) p->unpause_all();
    return reply;
}

// A handler that throws (out of memory, say) answers E.text: the session, the program and the
// trace buffer go on as they were, since nothing may unwind out of the event loop and end
// tpagent (and, through PTRACE_O_EXITKILL, the program).
std::string Session::run_handler(const protocol::PacketTable<Session>::Handler& handler,
                                 const protocol::PacketView& view) {
    try {
        return handler(*this, view.args);
    } catch (const std::bad_alloc&) {
        spdlog::warn("{}: out of memory", view.name);
        return protocol::reply_error_text(
            make_error(ErrorCode::TooLarge, fmt::format("{}: not enough memory", view.name)));
    } catch (const std::exception& e) {
        spdlog::warn("{}: {}", view.name, e.what());
        return protocol::reply_error_text(
            make_error(ErrorCode::SystemError, fmt::format("{}: {}", view.name, e.what())));
    }
}

std::string Session::begin_upload(Upload which, trace::UploadCursor cursor) {
    auto& upload = uploads_.at(static_cast<std::size_t>(which));
    upload = std::move(cursor);
    return upload.next();
}

std::string Session::continue_upload(Upload which) {
    return uploads_.at(static_cast<std::size_t>(which)).next();
}

void Session::send_console(std::string_view text) {
    send_packet("O" + protocol::to_hex(text));
}

void Session::send_packet(const std::string& payload) {
    debug_output::packets().debug("-> {}",
                                  payload.size() > 200 ? payload.substr(0, 200) + "..." : payload);
    bool plain = std::all_of(payload.begin(), payload.end(),
                             [](char c) { return protocol::hex_digit_value(c) >= 0 || c == 'x'; });
    last_frame_ = protocol::frame_packet(plain ? protocol::run_length_encode(payload) : payload);
    if (!conn_->write(last_frame_)) spdlog::debug("write to gdb failed");
}

bool Session::non_stop() const {
    return server_.non_stop();
}

void Session::on_stop(const process::StopEvent& ev) {
    if (non_stop()) {
        if (ev.thread_exited) { // (the last stop stays the one `?` describes)
            thread_stops_.erase(ev.tid);
        } else if (ev.kind == process::StopEvent::Kind::Signal) {
            last_stop_ = ev;
            thread_stops_[ev.tid] = ev;
        } else { // the process ended: its threads' stops are of no more use
            last_stop_ = ev;
            std::erase_if(thread_stops_,
                          [&](const auto& stop) { return stop.second.pid == ev.pid; });
            auto after_first = stop_notifications_.begin(); // the first one is out already
            if (after_first != stop_notifications_.end()) ++after_first;
            stop_notifications_.erase(
                std::remove_if(after_first, stop_notifications_.end(),
                               [&](const process::StopEvent& e) {
                                   return e.pid == ev.pid &&
                                          e.kind == process::StopEvent::Kind::Signal;
                               }),
                stop_notifications_.end());
        }
        stop_notifications_.push_back(ev);
        if (stop_notifications_.size() == 1) send_notification("Stop:" + stop_reply(ev));
        return;
    }
    if (!ev.no_resumed) set_last_stop(ev); // (none stopped: `?` describes the last stop)
    if (!waiting_) return;
    waiting_ = false;
    send_packet(stop_reply(ev));
}

std::string Session::thread_id(pid_t tid) {
    auto* inf = inferior();
    const auto* gone = exited_program();
    pid_t pid = inf ? inf->pid() : gone ? gone->end.pid : tid;
    if (inf && !inf->has_thread(tid))
        for (const auto& [p, t] : all_threads())
            if (t == tid) pid = p;
    return protocol::format_thread_id(pid, tid, multiprocess());
}

pid_t Session::current_thread() {
    if (const auto* gone = exited_program()) return gone->end.pid;
    auto* inf = inferior();
    if (!inf) return 0;
    if (general_thread_ > 0 && inf->has_thread(general_thread_)) return general_thread_;
    if (last_stop_ && inf->has_thread(last_stop_->tid)) return last_stop_->tid;
    return inf->pid();
}

std::string Session::stop_reply(const process::StopEvent& ev) {
    if (ev.no_resumed) return "N";
    protocol::StopReply r;
    r.form = stop_reply_form();
    if (multiprocess()) r.process = static_cast<std::uint64_t>(ev.pid);
    switch (ev.kind) {
    case process::StopEvent::Kind::Exited:
        r.kind = protocol::StopReply::Kind::Exited;
        r.code = ev.exit_code;
        return protocol::encode_stop_reply(r);
    case process::StopEvent::Kind::Killed:
        r.kind = protocol::StopReply::Kind::Killed;
        r.code = protocol::host_to_gdb_signal(ev.signal);
        return protocol::encode_stop_reply(r);
    case process::StopEvent::Kind::Signal:
        break;
    }
    r.process.reset(); // T and w name the process in their thread id instead
    if (ev.thread_exited) {
        r.kind = protocol::StopReply::Kind::ThreadExited;
        r.code = ev.exit_code;
        r.thread = thread_id(ev.tid);
        return protocol::encode_stop_reply(r);
    }
    r.code = protocol::host_to_gdb_signal(ev.signal);
    if (auto* inf = inferior(); inf && inf->has_thread(ev.tid)) {
        const auto& arch = arch::host_architecture();
        std::vector<bool> avail;
        if (auto g = inf->registers().read(ev.tid, avail)) {
            for (int regnum : arch.expedited_registers()) {
                const auto& reg = arch.registers()[static_cast<std::size_t>(regnum)];
                std::string value;
                protocol::append_hex(value, std::span(g->data() + reg.g_offset, reg.size));
                r.registers.emplace_back(regnum, std::move(value));
            }
        }
    }
    r.thread = thread_id(ev.tid);
    r.swbreak = ev.swbreak && gdb_features_.swbreak;
    r.hwbreak = ev.hwbreak && gdb_features_.hwbreak;
    if (ev.watch_addr) r.watch = std::pair(ev.watch_type, *ev.watch_addr);
    if (ev.syscall)
        r.syscall = std::pair(ev.syscall->entry, static_cast<std::uint64_t>(ev.syscall->number));
    r.exec_path = ev.exec_path;
    if (ev.fork_child) {
        r.fork_child = protocol::format_thread_id(*ev.fork_child, *ev.fork_child, true);
        announced_children_.insert(*ev.fork_child);
    }
    r.vfork = ev.vfork;
    r.vfork_done = ev.vfork_done;
    r.thread_created = ev.thread_created;
    return protocol::encode_stop_reply(r);
}

protocol::StopReply::Form Session::stop_reply_form() const {
    const DisabledPackets& off = server_.options().disabled;
    if (off.stop_registers) return protocol::StopReply::Form::SignalOnly;
    return off.stop_thread ? protocol::StopReply::Form::NoThread : protocol::StopReply::Form::Full;
}

std::string Session::acknowledge_stop() {
    if (!stop_notifications_.empty()) stop_notifications_.pop_front();
    if (stop_notifications_.empty()) return protocol::reply_ok();
    return stop_reply(stop_notifications_.front());
}

bool Session::fork_child_announced(pid_t child) const {
    return announced_children_.count(child) != 0 &&
           std::none_of(stop_notifications_.begin(), stop_notifications_.end(),
                        [&](const process::StopEvent& ev) { return ev.fork_child == child; });
}

bool Session::stop_unacknowledged(pid_t tid) const {
    return std::any_of(stop_notifications_.begin(), stop_notifications_.end(),
                       [&](const process::StopEvent& ev) { return ev.tid == tid; });
}

// `?` in non-stop mode: a new sequence, one stop for each stopped thread gdb was told of (its
// last stop; the lead thread's with signal 0, or SIGTRAP for a program started here), the
// first as the reply; OK with none. A thread stopped without gdb hearing of it (all-stop
// stops every thread and reports one; an attach stops them all) runs on instead: gdb 13
// shows it as running, as with gdbserver, and fails an internal check on a `?` sequence
// with several of them.
std::string Session::non_stop_status() {
    // Stops not taken by gdb yet keep what they say (a fork's child, say) in the new sequence.
    std::map<pid_t, process::StopEvent> untaken;
    for (const process::StopEvent& ev : stop_notifications_)
        if (ev.kind == process::StopEvent::Kind::Signal && !ev.thread_exited)
            untaken.emplace(ev.tid, ev);
    stop_notifications_.clear();
    for (process::Target* inf : server_.processes())
        add_stopped_threads(*inf, untaken);
    if (stop_notifications_.empty()) return protocol::reply_ok();
    return stop_reply(stop_notifications_.front());
}

void Session::add_stopped_threads(process::Target& inf,
                                  const std::map<pid_t, process::StopEvent>& untaken) {
    std::vector<process::ThreadResume> unheard;
    for (pid_t tid : inf.thread_ids()) {
        if (!inf.thread_stopped(tid)) continue;
        if (auto it = untaken.find(tid); it != untaken.end()) {
            stop_notifications_.push_back(it->second);
            continue;
        }
        process::StopEvent ev;
        if (auto it = thread_stops_.find(tid); it != thread_stops_.end()) {
            ev = it->second;
        } else if (last_stop_ && last_stop_->kind == process::StopEvent::Kind::Signal &&
                   last_stop_->tid == tid) {
            ev = *last_stop_;
        } else if (tid == inf.pid()) {
            ev.pid = inf.pid();
            ev.tid = tid;
            ev.signal = inf.was_attached() ? 0 : SIGTRAP;
        } else {
            unheard.push_back({tid, false, 0});
            continue;
        }
        ev.fork_child.reset();                // an event gdb has seen already is not repeated
        if (ev.thread_created) ev.signal = 0; // (never resumed since: it has not run)
        ev.vfork = ev.vfork_done = ev.thread_created = false;
        ev.exec_path.reset();
        ev.syscall.reset();
        stop_notifications_.push_back(ev);
    }
    if (!unheard.empty())
        if (auto r = inf.resume(unheard); !r)
            spdlog::warn("threads gdb was not told of stay stopped: {}", r.error().text);
}

void Session::send_notification(const std::string& payload) {
    debug_output::packets().debug("-> %{}",
                                  payload.size() > 200 ? payload.substr(0, 200) + "..." : payload);
    if (!conn_->write(protocol::frame_notification(payload))) spdlog::debug("write to gdb failed");
}

std::string Session::status_reply() {
    if (non_stop() && !exited_program()) return non_stop_status();
    if (const auto* gone = exited_program()) {
        // Stopped, as a program gdb connects to is; the registers are not there to expedite.
        protocol::StopReply r;
        r.form = stop_reply_form();
        r.code = protocol::host_to_gdb_signal(SIGTRAP);
        r.thread = thread_id(gone->end.pid);
        return protocol::encode_stop_reply(r);
    }
    auto* inf = live_inferior();
    if (!inf) {
        if (last_stop_ && last_stop_->kind != process::StopEvent::Kind::Signal)
            return stop_reply(*last_stop_);
        return "W00"; // no process
    }
    if (last_stop_ && last_stop_->kind == process::StopEvent::Kind::Signal &&
        inf->has_thread(last_stop_->tid))
        return stop_reply(*last_stop_);
    process::StopEvent ev;
    ev.pid = inf->pid();
    ev.tid = current_thread();
    ev.signal = inf->was_attached() ? 0 : SIGTRAP;
    return stop_reply(ev);
}

} // namespace tpagent::server
