#include "server/session.hpp"
#include "server/packet_handlers.hpp"
#include "server/server.hpp"
#include "target/linux/signals.hpp"
#include "arch/arch.hpp"
#include "protocol/hex.hpp"
#include "protocol/packet.hpp"
#include "protocol/replies.hpp"
#include "protocol/requests.hpp"
#include "protocol/stop_reply.hpp"
#include <algorithm>
#include <new>
#include <utility>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tpagent::agent {

using protocol::FrameEvent;

Session::Session(Server& server, std::unique_ptr<Connection> conn)
    : server_(server), conn_(std::move(conn)) {}

Target* Session::inferior() {
    return server_.inferior();
}

Target* Session::live_inferior() {
    auto* inf = inferior();
    return inf && inf->alive() ? inf : nullptr;
}

bool Session::has_thread(pid_t tid) {
    auto* inf = inferior();
    return inf && inf->has_thread(tid);
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
            server_.session_closed(*this);
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
        spdlog::debug("<- ^C");
        if (auto* inf = inferior()) inf->interrupt();
        return;
    case FrameEvent::Kind::BadChecksum:
        spdlog::debug("<- bad checksum: {}", ev.payload);
        if (!no_ack) {
            conn_->write("-");
            return;
        }
        // Without acks the checksum may be ignored (RSP "Packet Acknowledgment").
        dispatch(ev.payload);
        return;
    case FrameEvent::Kind::Oversize:
        spdlog::debug("<- packet longer than PacketSize");
        if (!no_ack) conn_->write("+");
        send_packet(protocol::reply_error(ErrorCode::TooLarge));
        return;
    case FrameEvent::Kind::Packet:
        if (!no_ack) conn_->write("+");
        dispatch(ev.payload);
        return;
    }
}

void Session::dispatch(const std::string& payload) {
    spdlog::debug("<- {}", payload.size() > 200 ? payload.substr(0, 200) + "..." : payload);
    if (reloc_answer_ && protocol::is_reloc_insn_answer(payload)) {
        AnswerHandler next = std::exchange(reloc_answer_, nullptr);
        send_packet(next(*this, payload));
        return;
    }
    auto view = protocol::classify(payload);
    const auto* handler = packet_table().find(view.name);
    if (!handler) {
        send_packet(protocol::reply_empty());
        return;
    }
    deferred_ = false;
    suppressed_ = false;
    // Fast-tracepoint frames staged in the program come in before anything looks at the trace.
    server_.experiment().poll(server_.inferior());
    std::string reply = run_handler(*handler, view);
    server_.watch_fast_trace(); // the packet may have started one
    if (closed_ || suppressed_) return;
    if (deferred_) {
        waiting_ = true;
        return;
    }
    send_packet(reply);
    if (exit_after_reply) {
        close();
        server_.session_closed(*this);
    }
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

void Session::send_packet(const std::string& payload) {
    spdlog::debug("-> {}", payload.size() > 200 ? payload.substr(0, 200) + "..." : payload);
    bool plain = std::all_of(payload.begin(), payload.end(),
                             [](char c) { return protocol::hex_digit_value(c) >= 0 || c == 'x'; });
    last_frame_ = protocol::frame_packet(plain ? protocol::run_length_encode(payload) : payload);
    if (!conn_->write(last_frame_)) spdlog::debug("write to gdb failed");
}

void Session::on_stop(const StopEvent& ev) {
    last_stop = ev;
    if (ev.kind == StopEvent::Kind::Signal) general_thread = ev.tid;
    if (!waiting_) return;
    waiting_ = false;
    send_packet(stop_reply(ev));
}

std::string Session::thread_id(pid_t tid) {
    auto* inf = inferior();
    return protocol::format_thread_id(inf ? inf->pid() : tid, tid, multiprocess);
}

pid_t Session::current_thread() {
    auto* inf = inferior();
    if (!inf) return 0;
    if (general_thread > 0 && inf->has_thread(general_thread)) return general_thread;
    if (last_stop && inf->has_thread(last_stop->tid)) return last_stop->tid;
    return inf->pid();
}

std::string Session::stop_reply(const StopEvent& ev) {
    protocol::StopReply r;
    if (multiprocess) r.process = static_cast<std::uint64_t>(ev.pid);
    switch (ev.kind) {
    case StopEvent::Kind::Exited:
        r.kind = protocol::StopReply::Kind::Exited;
        r.code = ev.exit_code;
        return protocol::encode_stop_reply(r);
    case StopEvent::Kind::Killed:
        r.kind = protocol::StopReply::Kind::Killed;
        r.code = host_to_gdb_signal(ev.signal);
        return protocol::encode_stop_reply(r);
    case StopEvent::Kind::Signal:
        break;
    }
    r.process.reset(); // T names the process in its thread id instead
    r.code = host_to_gdb_signal(ev.signal);
    if (auto* inf = inferior(); inf && inf->has_thread(ev.tid)) {
        const auto& arch = arch::host_architecture();
        std::vector<bool> avail;
        if (auto g = inf->read_registers(ev.tid, avail)) {
            for (int regnum : arch.expedited_registers()) {
                const auto& reg = arch.registers()[static_cast<std::size_t>(regnum)];
                std::string value;
                protocol::append_hex(value, std::span(g->data() + reg.g_offset, reg.size));
                r.registers.emplace_back(regnum, std::move(value));
            }
        }
    }
    r.thread = thread_id(ev.tid);
    r.swbreak = ev.swbreak && gdb_supports_swbreak;
    r.hwbreak = ev.hwbreak && gdb_supports_hwbreak;
    if (ev.watch_addr) r.watch = std::pair(ev.watch_type, *ev.watch_addr);
    return protocol::encode_stop_reply(r);
}

std::string Session::status_reply() {
    auto* inf = live_inferior();
    if (!inf) {
        if (last_stop && last_stop->kind != StopEvent::Kind::Signal) return stop_reply(*last_stop);
        return "W00"; // no process
    }
    if (last_stop && last_stop->kind == StopEvent::Kind::Signal && inf->has_thread(last_stop->tid))
        return stop_reply(*last_stop);
    StopEvent ev;
    ev.pid = inf->pid();
    ev.tid = current_thread();
    ev.signal = inf->was_attached() ? 0 : SIGTRAP;
    return stop_reply(ev);
}

} // namespace tpagent::agent
