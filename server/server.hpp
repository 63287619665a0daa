// The process as a whole: options, the event loop, the listener, the current gdb session and the
// inferior. Decides what happens when gdb goes away and when tpagent exits.
#pragma once
#include "base/asio.hpp"
#include "target/linux/child_events.hpp"
#include "target/target.hpp"
#include "server/options.hpp"
#include "server/session.hpp"
#include "tracing/trace_experiment.hpp"
#include "server/transport.hpp"
#include <memory>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace tpagent::agent {

// How programs are started and attached to: Linux processes over ptrace, or fakes in tests.
struct TargetFactory {
    std::function<Result<std::unique_ptr<Target>>(const LaunchSpec&)> launch;
    std::function<Result<std::unique_ptr<Target>>(pid_t)> attach;
};
TargetFactory linux_targets();

class Server {
  public:
    Server(boost::asio::io_context& io, ServerOptions options,
           TargetFactory targets = linux_targets());
    // Starts the program or attaches, binds, and runs the event loop. Returns the exit status.
    int run();

    const ServerOptions& options() const { return options_; }
    Target* inferior() { return inferior_.get(); }
    TraceExperiment& experiment() { return experiment_; }
    boost::asio::io_context& io() { return io_; }

    Status start_program(const std::vector<std::string>& program);
    Status attach_to(pid_t pid);
    Status kill_inferior();
    Status detach_inferior();
    // Drops an inferior that is gone; remembers its exit for later `?` queries.
    void forget_inferior();
    void request_exit() { exit_requested_ = true; }
    void session_closed(Session& s);
    void set_debug(bool on);
    // Fast tracepoints fill the buffer with no event tpagent would see: while a fast trace
    // runs, a timer looks every few ms (armed here after a packet started one; it stops by
    // itself when the trace does).
    void watch_fast_trace();
    // gdb leaves (disconnect or detach) while a trace runs with disconnected tracing on:
    // the program goes on running and tracing, and tpagent waits for the next gdb.
    bool keep_tracing_without_gdb();
    void set_disable_randomization(bool on) { options_.disable_randomization = on; }
    std::set<int> pass_signals; // host numbers, from QPassSignals
    // QEnvironmentHexEncoded / QEnvironmentUnset / QEnvironmentReset: for programs started from
    // now on (NAME -> value, nullopt = unset).
    std::map<std::string, std::optional<std::string>> environment;
    bool stdio_transport() const;

  private:
    void accept_next();
    void wait_for_children();
    void on_inferior_event(const StopEvent& ev);
    void shutdown();

    boost::asio::io_context& io_;
    ServerOptions options_;
    TargetFactory targets_;
    std::unique_ptr<Listener> listener_;
    std::unique_ptr<Session> session_;
    std::unique_ptr<Target> inferior_;
    ChildEvents child_events_;
    boost::asio::steady_timer trace_poll_timer_;
    bool trace_poll_armed_ = false;
    TraceExperiment experiment_;
    bool exit_requested_ = false;
    std::optional<StopEvent> unreported_; // what happened while no gdb was connected
    int exit_status_ = 0;
};

} // namespace tpagent::agent
