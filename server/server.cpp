#include "server/server.hpp"
#include "target/linux/inferior.hpp"
#include "base/proc_files.hpp"
#include <cstdlib>
#include <unistd.h>
#include <csignal>
#include <cstring>
#include <utility>
#include <cstdio>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tpagent::agent {

namespace asio = boost::asio;

namespace {
// --inproc's library: as given, or libtpagent-inproc.so beside the tpagent executable.
Result<std::string> inproc_library_path(const std::string& given) {
    std::string path = given;
    if (path.empty()) {
        std::string self = read_link("/proc/self/exe");
        path = self.substr(0, self.rfind('/') + 1) + "libtpagent-inproc.so";
    }
    if (access(path.c_str(), R_OK) != 0)
        return make_error(ErrorCode::NotFound,
                          fmt::format("--inproc: cannot read {}: {}", path, std::strerror(errno)));
    // The dynamic loader resolves a relative name against the program's directory.
    if (path.front() != '/') {
        char* full = realpath(path.c_str(), nullptr);
        if (full) {
            path = full;
            std::free(full);
        }
    }
    return path;
}
} // namespace

TargetFactory linux_targets() {
    return {[](const LaunchSpec& spec) -> Result<std::unique_ptr<Target>> {
                auto inferior = Inferior::launch(spec);
                if (!inferior) return inferior.error();
                return std::unique_ptr<Target>(std::move(*inferior));
            },
            [](pid_t pid) -> Result<std::unique_ptr<Target>> {
                auto inferior = Inferior::attach(pid);
                if (!inferior) return inferior.error();
                return std::unique_ptr<Target>(std::move(*inferior));
            }};
}

Server::Server(asio::io_context& io, ServerOptions options, TargetFactory targets)
    : io_(io), options_(std::move(options)), targets_(std::move(targets)), child_events_(io),
      trace_poll_timer_(io), experiment_(arch::host_architecture()) {}

void Server::watch_fast_trace() {
    if (trace_poll_armed_ || !experiment_.fast_running()) return;
    trace_poll_armed_ = true;
    trace_poll_timer_.expires_after(std::chrono::milliseconds(5));
    trace_poll_timer_.async_wait([this](const boost::system::error_code& ec) {
        trace_poll_armed_ = false;
        if (ec) return;
        if (experiment_.fast_running()) experiment_.poll(inferior_.get());
        watch_fast_trace();
    });
}
bool Server::stdio_transport() const {
    return options_.comm == "-";
}

void Server::set_debug(bool on) {
    spdlog::set_level(on ? spdlog::level::debug : spdlog::level::warn);
}

Status Server::start_program(const std::vector<std::string>& program) {
    LaunchSpec spec;
    spec.program = program;
    spec.wrapper = options_.wrapper;
    spec.disable_randomization = options_.disable_randomization;
    spec.stdio_is_protocol = stdio_transport();
    spec.environment = environment;
    if (options_.inproc) {
        auto lib = inproc_library_path(*options_.inproc);
        if (!lib) return lib.error();
        spec.preload = *lib;
    }
    auto inf = targets_.launch(spec);
    if (!inf) return inf.error();
    inferior_ = std::move(*inf);
    inferior_->set_pass_signals(pass_signals);
    fmt::print(stderr, "Process {} created; pid = {}\n", program.front(), inferior_->pid());
    std::fflush(stderr);
    return ok_status();
}

Status Server::attach_to(pid_t pid) {
    auto inf = targets_.attach(pid);
    if (!inf) return inf.error();
    inferior_ = std::move(*inf);
    inferior_->set_pass_signals(pass_signals);
    fmt::print(stderr, "Attached; pid = {}\n", pid);
    std::fflush(stderr);
    return ok_status();
}

Status Server::kill_inferior() {
    if (!inferior_) return ok_status();
    if (experiment_.running())
        experiment_.stop_for({TraceStopReason::Kind::Unknown, {}, 0}, inferior_.get());
    auto s = inferior_->kill();
    inferior_.reset();
    return s;
}

Status Server::detach_inferior() {
    if (!inferior_) return make_error(ErrorCode::NoProcess, "no process to detach from");
    if (experiment_.running())
        experiment_.stop_for({TraceStopReason::Kind::Unknown, {}, 0}, inferior_.get());
    fmt::print(stderr, "Detaching from process {}\n", inferior_->pid());
    std::fflush(stderr);
    auto s = inferior_->detach();
    inferior_.reset();
    return s;
}

void Server::forget_inferior() {
    inferior_.reset();
}

void Server::wait_for_children() {
    child_events_.watch([this] {
        while (inferior_ && inferior_->alive()) {
            auto ev = inferior_->poll();
            if (!ev) break;
            on_inferior_event(*ev);
        }
    });
}

void Server::on_inferior_event(const StopEvent& ev) {
    if (ev.kind == StopEvent::Kind::Exited) {
        fmt::print(stderr, "\nChild exited with status {}\n", ev.exit_code);
    } else if (ev.kind == StopEvent::Kind::Killed) {
        const char* abbrev = sigabbrev_np(ev.signal);
        fmt::print(stderr, "\nChild terminated with signal = 0x{:x} (SIG{})\n", ev.signal,
                   abbrev ? abbrev : "UNKNOWN");
    }
    std::fflush(stderr);
    if (ev.kind != StopEvent::Kind::Signal && experiment_.running())
        experiment_.stop_for({TraceStopReason::Kind::Unknown, {}, 0},
                             nullptr); // the traced process is gone
    if (ev.kind == StopEvent::Kind::Signal) experiment_.poll(inferior_.get());
    if (session_ && !session_->closed())
        session_->on_stop(ev);
    else
        unreported_ = ev;
    if (ev.kind != StopEvent::Kind::Signal) forget_inferior();
}

void Server::accept_next() {
    listener_->async_accept([this](std::unique_ptr<Connection> conn) {
        if (!conn) {
            shutdown();
            return;
        }
        session_ = std::make_unique<Session>(*this, std::move(conn));
        // All-stop: gdb starts talking to a stopped program.
        if (inferior_ && inferior_->running()) {
            if (auto ev = inferior_->stop_all_now()) {
                if (ev->kind != StopEvent::Kind::Signal)
                    on_inferior_event(*ev);
                else
                    unreported_ = ev;
            }
        }
        if (unreported_) session_->last_stop = std::exchange(unreported_, std::nullopt);
        session_->start();
    });
}

void Server::session_closed(Session&) {
    // The session object may be mid-call: destroy it later, from the event loop.
    asio::post(io_, [this] {
        std::unique_ptr<Session> old = std::move(session_);
        // A QTStart still waiting for gdb's qRelocInsn answers never started anything.
        experiment_.abandon_relocation(inferior_.get());
        bool stay = !exit_requested_ && !options_.once &&
                    listener_->endpoint().kind == Endpoint::Kind::Tcp &&
                    (options_.multi || (inferior_ && inferior_->alive()));
        if (!stay) {
            shutdown();
            return;
        }
        // gdb went away without detaching: the program stays, stopped, for the next gdb -
        // unless a trace is to go on without gdb.
        if (!keep_tracing_without_gdb()) {
            if (experiment_.running())
                experiment_.stop_for({TraceStopReason::Kind::Disconnected, {}, 0}, inferior_.get());
            if (inferior_ && inferior_->running()) inferior_->interrupt();
        }
        fmt::print(stderr,
                   "Remote side has terminated connection.  tpagent will reopen the connection.\n");
        std::fflush(stderr);
        listener_->announce();
        accept_next();
    });
}

bool Server::keep_tracing_without_gdb() {
    if (!experiment_.running() || !experiment_.disconnected_tracing() || !inferior_ ||
        !inferior_->alive())
        return false;
    if (!inferior_->running())
        if (auto r = inferior_->resume_all(); !r) {
            spdlog::warn("the program cannot run on without gdb: {}", r.error().text);
            return false;
        }
    return true;
}

void Server::shutdown() {
    // Programs we started die with us; programs we attached to go on running.
    if (inferior_ && inferior_->alive()) {
        Status s = inferior_->was_attached() ? detach_inferior() : kill_inferior();
        if (!s) spdlog::warn("leaving the program: {}", s.error().text);
    }
    listener_->close();
    child_events_.cancel();
    trace_poll_timer_.cancel();
    io_.stop();
}

int Server::run() {
    auto ep = parse_endpoint(options_.comm);
    if (!ep) {
        fmt::print(stderr, "{}\n", ep.error().text);
        return 1;
    }
    if (options_.attach_pid) {
        if (auto s = attach_to(*options_.attach_pid); !s) {
            fmt::print(stderr, "{}\nExiting\n", s.error().text);
            return 1;
        }
    } else if (!options_.program.empty()) {
        if (auto s = start_program(options_.program); !s) {
            fmt::print(stderr, "{}\nExiting\n", s.error().text);
            return 1;
        }
    }
    listener_ = std::make_unique<Listener>(io_, *ep, options_.baud);
    if (auto s = listener_->open(); !s) {
        fmt::print(stderr, "{}\nExiting\n", s.error().text);
        if (inferior_)
            if (auto k = kill_inferior(); !k) spdlog::warn("{}", k.error().text);
        return 1;
    }
    wait_for_children();
    accept_next();
    // An exception out of an event handler must not end tpagent (the program would die with
    // it): it is logged and the loop goes on. Packet handlers answer theirs as E.text.
    while (true) {
        try {
            io_.run();
            break;
        } catch (const std::exception& e) {
            spdlog::error("internal error, serving on: {}", e.what());
        }
    }
    return exit_status_;
}

} // namespace tpagent::agent
