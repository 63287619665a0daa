#include "process/linux/wait_status.hpp"
#include <catch2/catch.hpp>
#include <csignal>
#include <sys/ptrace.h>
#include <sys/wait.h>

using tpagent::process::WaitStatus;
using Kind = WaitStatus::Kind;

TEST_CASE("a wait status says what happened to the thread", "[wait_status]") {
    const WaitStatus exit = WaitStatus::exited(3);
    CHECK(exit.kind() == Kind::Exited);
    CHECK(exit.ended());
    CHECK(exit.exit_code() == 3);
    CHECK_FALSE(exit.stopped());

    const WaitStatus killed = WaitStatus::killed(SIGKILL);
    CHECK(killed.kind() == Kind::Killed);
    CHECK(killed.ended());
    CHECK(killed.fatal_signal() == SIGKILL);

    const WaitStatus signal = WaitStatus::stopped(SIGSEGV);
    CHECK(signal.kind() == Kind::SignalStop);
    CHECK(signal.stopped());
    CHECK(signal.stop_signal() == SIGSEGV);
    CHECK(signal.ptrace_event() == 0);

    const WaitStatus clone = WaitStatus::stopped(SIGTRAP, PTRACE_EVENT_CLONE);
    CHECK(clone.kind() == Kind::PtraceEvent);
    CHECK(clone.ptrace_event() == PTRACE_EVENT_CLONE);
    CHECK(clone.stop_signal() == SIGTRAP);

    const WaitStatus syscall = WaitStatus::stopped(SIGTRAP | 0x80);
    CHECK(syscall.kind() == Kind::SyscallStop);
    CHECK(syscall.stopped());

    CHECK(WaitStatus(0xffff).kind() == Kind::Continued);
}

TEST_CASE("a wait status decodes as the libc macros do", "[wait_status]") {
    for (int raw : {0x0300, 0x0009, 0x0b7f, 0x0580 | 0x7f, (PTRACE_EVENT_EXEC << 16) | 0x057f,
                    0xffff, 0x008b}) {
        const WaitStatus s(raw);
        CHECK(s.exited() == WIFEXITED(raw));
        CHECK(s.killed() == WIFSIGNALED(raw));
        CHECK(s.stopped() == WIFSTOPPED(raw));
        if (WIFEXITED(raw)) CHECK(s.exit_code() == WEXITSTATUS(raw));
        if (WIFSIGNALED(raw)) CHECK(s.fatal_signal() == WTERMSIG(raw));
        if (WIFSTOPPED(raw)) CHECK(s.stop_signal() == WSTOPSIG(raw));
        CHECK(s.ptrace_event() == raw >> 16);
    }
}
