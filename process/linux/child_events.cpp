#include "process/linux/child_events.hpp"
#include <csignal>
#include <sys/signalfd.h>
#include <unistd.h>

namespace tpagent::process {

namespace {
int make_signalfd() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, nullptr);
    return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}
} // namespace

void unblock_child_signal() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

ChildEvents::ChildEvents(boost::asio::io_context& io) : fd_(io, make_signalfd()) {}

ChildEvents::~ChildEvents() {
    cancel();
}

void ChildEvents::watch(std::function<void()> on_event) {
    on_event_ = std::move(on_event);
    wait();
}

void ChildEvents::wait() {
    fd_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                   [this](const boost::system::error_code& ec) {
                       if (ec) return;
                       // One read takes every queued SIGCHLD (they merge; waitpid finds every
                       // change). If more arrive later the descriptor is readable again.
                       signalfd_siginfo info[8];
                       // A failed read loses nothing: waitpid finds every change anyway.
                       (void)!::read(fd_.native_handle(), info, sizeof info);
                       on_event_();
                       wait();
                   });
}

void ChildEvents::cancel() {
    boost::system::error_code ec;
    fd_.cancel(ec);
}

} // namespace tpagent::process
