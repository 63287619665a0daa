// SIGCHLD as an event-loop readiness: the signal is blocked and read from a signalfd, so a
// ptrace stop costs the loop one read instead of a signal handler and a self-pipe.
#pragma once
#include "base/asio.hpp"
#include <functional>

namespace tpagent::process {

class ChildEvents {
  public:
    explicit ChildEvents(boost::asio::io_context& io);
    ~ChildEvents();
    // Calls `on_event` each time one or more children changed state, until cancel().
    void watch(std::function<void()> on_event);
    void cancel();

  private:
    void wait();
    boost::asio::posix::stream_descriptor fd_;
    std::function<void()> on_event_;
};

// Programs started by tpagent must not inherit the blocked SIGCHLD.
void unblock_child_signal();

} // namespace tpagent::process
