// A breakpoint left behind: when tpagent ends without taking its breakpoints out (killed), its
// watchdog puts the program's code back (process/linux/code_guard.hpp), but a thread that had
// hit a breakpoint just then, stopped for tpagent, gets the SIGTRAP once tpagent's hold ends,
// and a SIGTRAP kills by default. With the agent in the program, that trap comes here: with no
// tracer left, the thread waits for the watchdog to restore the instruction and runs it (a
// single step's trap is dropped). Any other SIGTRAP goes where it went before.
#include "arch/inproc_trap.hpp"
#include "inproc/inproc.hpp"
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

namespace tpagent::inproc {
namespace {

struct sigaction g_previous;

// /proc/self/status's TracerPid is not 0 (open and read are async-signal-safe); when that
// cannot be told, as if traced: the trap goes on as before.
bool tracer_present() {
    const int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return true;
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return true;
    static constexpr char kKey[] = "\nTracerPid:";
    constexpr ssize_t kLength = sizeof kKey - 1;
    for (ssize_t i = 0; i + kLength < n; ++i) {
        ssize_t k = 0;
        while (k < kLength && buf[i + k] == kKey[k])
            ++k;
        if (k < kLength) continue;
        ssize_t at = i + kLength;
        while (at < n && (buf[at] == ' ' || buf[at] == '\t'))
            ++at;
        return at >= n || buf[at] != '0';
    }
    return true;
}

void on_trap(int sig, siginfo_t* info, void* context) {
    namespace trap = arch::inproc_trap;
    if ((trap::breakpoint_trap(info) || trap::step_trap(info)) && !tracer_present()) {
        if (trap::step_trap(info)) return; // the step is done; nobody wants to hear of it
        const std::uint64_t at = trap::breakpoint_address(context);
        // The watchdog may be at it now: up to 2 s.
        for (int i = 0; i < 2000 && trap::breakpoint_at(at); ++i) {
            const timespec ms{0, 1000000};
            nanosleep(&ms, nullptr);
        }
        if (!trap::breakpoint_at(at)) {
            trap::resume_at(context, at);
            return;
        }
    }
    if ((g_previous.sa_flags & SA_SIGINFO) && g_previous.sa_sigaction) {
        g_previous.sa_sigaction(sig, info, context);
    } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
        g_previous.sa_handler(sig);
    } else {
        // What it would have done without us: end the program with SIGTRAP.
        struct sigaction dfl = {};
        dfl.sa_handler = SIG_DFL;
        sigaction(SIGTRAP, &dfl, nullptr);
        raise(SIGTRAP);
    }
}

} // namespace

void catch_orphan_traps() {
    struct sigaction sa = {};
    sa.sa_sigaction = on_trap;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTRAP, &sa, &g_previous);
}

} // namespace tpagent::inproc
