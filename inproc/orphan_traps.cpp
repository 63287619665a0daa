// A breakpoint left behind: when tpagent ends without taking its breakpoints out (killed), its
// watchdog puts the program's code back (process/linux/code_guard.hpp), but a thread that had
// hit a breakpoint just then, stopped for tpagent, gets the SIGTRAP once tpagent's hold ends,
// and a SIGTRAP kills by default. With the agent in the program, that trap comes here: with no
// tracer left, the thread waits for the watchdog to restore the instruction and runs it (a
// single step's trap is dropped). Any other SIGTRAP goes where it went before. System calls
// only: the self-mapped image installs it too.
#include "arch/inproc_trap.hpp"
#include "inproc/inproc.hpp"
#include <csignal>
#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>

// The x86-64 kernel returns from a handler through the restorer the sigaction names
// (inproc_primitives.S); arm64's through the vDSO without one.
extern "C" void tpagent_signal_return();

namespace tpagent::inproc {

std::atomic<std::uint64_t> g_orphan_traps{0};

namespace {

// The kernel's struct sigaction (rt_sigaction): set through the system call, not the C
// library's, which the self-mapped image cannot call.
struct KernelSigaction {
    void* handler;
    unsigned long flags;
    void* restorer;
    std::uint64_t mask;
};
constexpr unsigned long kRestorer = 0x04000000; // SA_RESTORER

KernelSigaction g_previous;

long sys(long number, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0) {
    return tpagent_syscall(number, a1, a2, a3, a4, 0, 0);
}

long set_action(int sig, const KernelSigaction* sa, KernelSigaction* old) {
    return sys(SYS_rt_sigaction, sig, reinterpret_cast<long>(sa), reinterpret_cast<long>(old),
               sizeof(std::uint64_t));
}

// /proc/self/status's TracerPid is not 0; when that cannot be told, as if traced: the trap
// goes on as before.
bool tracer_present() {
    const long fd = sys(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/proc/self/status"),
                        O_RDONLY | O_CLOEXEC);
    if (fd < 0) return true;
    char buf[4096];
    const long n = sys(SYS_read, fd, reinterpret_cast<long>(buf), sizeof buf - 1);
    sys(SYS_close, fd);
    if (n <= 0) return true;
    static constexpr char kKey[] = "\nTracerPid:";
    constexpr long kLength = sizeof kKey - 1;
    for (long i = 0; i + kLength < n; ++i) {
        long k = 0;
        while (k < kLength && buf[i + k] == kKey[k])
            ++k;
        if (k < kLength) continue;
        long at = i + kLength;
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
        // A breakpoint's condition held in the program with nobody to tell: it goes on.
        if (at == reinterpret_cast<std::uint64_t>(&tpagent_breakpoint_trap)) {
            g_orphan_traps.fetch_add(1, std::memory_order_relaxed);
            trap::resume_at(context, at + trap::kBreakpointBytes);
            return;
        }
        // The watchdog may be at it now: up to 2 s.
        for (int i = 0; i < 2000 && trap::breakpoint_at(at); ++i) {
            const timespec ms{0, 1000000};
            sys(SYS_nanosleep, reinterpret_cast<long>(&ms));
        }
        if (!trap::breakpoint_at(at)) {
            trap::resume_at(context, at);
            return;
        }
    }
    const auto handler = reinterpret_cast<void (*)(int)>(g_previous.handler);
    if ((g_previous.flags & SA_SIGINFO) && g_previous.handler) {
        reinterpret_cast<void (*)(int, siginfo_t*, void*)>(g_previous.handler)(sig, info, context);
    } else if (handler != SIG_DFL && handler != SIG_IGN) {
        handler(sig);
    } else {
        // What it would have done without us: end the program with SIGTRAP.
        KernelSigaction dfl{};
        dfl.handler = reinterpret_cast<void*>(SIG_DFL);
        set_action(SIGTRAP, &dfl, nullptr);
        sys(SYS_tgkill, sys(SYS_getpid), sys(SYS_gettid), SIGTRAP);
    }
}

} // namespace

void catch_orphan_traps() {
    KernelSigaction sa{};
    sa.handler = reinterpret_cast<void*>(&on_trap);
    sa.flags = SA_SIGINFO | SA_RESTART;
#if defined(__x86_64__)
    sa.flags |= kRestorer;
    sa.restorer = reinterpret_cast<void*>(&tpagent_signal_return);
#endif
    set_action(SIGTRAP, &sa, &g_previous);
}

} // namespace tpagent::inproc
