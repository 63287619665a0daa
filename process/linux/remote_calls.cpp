// Running tpagent's own code in a stopped thread of the program: one system call (to map pads,
// say) or a function call (the program's dlopen). Each is a RemoteCall, which puts the thread's
// registers and any overwritten code back however the call ends.
#include "process/linux/remote_calls.hpp"
#include "process/linux/remote_call.hpp"
#include "process/linux/wait_status.hpp"
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

namespace tpagent::process {

namespace {
// Below the thread's stack pointer: x86-64's red zone and more, untouched by the call.
constexpr std::uint64_t kStackSkip = 1024;
// dlopen takes a few milliseconds; one that does not return waits for a lock that a stopped
// thread holds.
constexpr auto kCallTimeout = std::chrono::seconds(10);
} // namespace

pid_t RemoteCalls::thread() const {
    const pid_t lead = lead_thread(threads_, pid_);
    if (lead == 0 || !threads_.at(lead).at_syscall_entry) return lead;
    for (const auto& [tid, t] : threads_)
        if (!t.at_syscall_entry) return tid;
    return 0;
}

Result<std::uint64_t> RemoteCalls::system_call(pid_t tid, long number,
                                               std::span<const std::uint64_t> args,
                                               std::string_view what) {
    auto cur = registers_.snapshot(tid);
    if (!cur) return cur.error();
    const std::uint64_t pc = arch_.pc(**cur);
    RemoteCall call(
        arch_, tid, threads_[tid], **cur,
        [this](std::uint64_t addr, std::span<const std::uint8_t> data) {
            return memory_.write_raw(addr, data);
        },
        fmt::format("system call at 0x{:x}", pc));
    auto insn = arch_.syscall_instruction();
    std::vector<std::uint8_t> original(insn.size());
    std::size_t got = 0;
    if (auto r = memory_.read_raw(pc, original, got); !r || got != original.size())
        return make_error(ErrorCode::MemoryAccess, "cannot read code at the pc");
    if (auto w = memory_.write_raw(pc, insn); !w) return w.error();
    call.overwrote(pc, std::move(original));
    // PTRACE_SINGLESTEP is checked by the wait below: a failed request leaves no stop.
    arch::RegisterSnapshot regs = call.saved();
    arch_.set_syscall(regs, number, args, pc);
    Status result = call.set_registers(regs);
    std::int64_t value = -1;
    if (result) {
        // One step runs the system call; a signal arriving meanwhile is kept for later.
        while (true) {
            ptrace(PTRACE_SINGLESTEP, tid, nullptr, nullptr);
            WaitStatus status;
            if (wait_thread(tid, status, __WALL) != tid || !status.stopped()) {
                result = make_error(ErrorCode::SystemError, "thread vanished during a system call");
                break;
            }
            if (status.stop_signal() == SIGTRAP) break;
            if (status.stop_signal() != SIGSTOP)
                threads_[tid].pending = StopEvent::signal_stop(pid_, tid, status.stop_signal());
            else
                threads_[tid].took_own_sigstop(); // none is on its way now
        }
        arch::RegisterSnapshot after;
        if (result && arch_.read_snapshot(tid, after)) value = arch_.syscall_result(after);
    }
    // If the code or the registers cannot be put back, the thread must not run on.
    if (auto restored = call.finish(); !restored) return restored.error();
    if (!result) return result.error();
    if (value < 0 && value > -4096) // the kernel's -errno
        return make_error(ErrorCode::SystemError,
                          fmt::format("{}: {}", what, std::strerror(static_cast<int>(-value))));
    return static_cast<std::uint64_t>(value);
}

Result<std::uint64_t> RemoteCalls::function_call(pid_t tid, std::uint64_t function,
                                                 std::span<const std::uint64_t> args,
                                                 std::uint64_t landing) {
    auto cur = registers_.snapshot(tid, true);
    if (!cur) return cur.error();
    LinuxThread& t = threads_[tid];
    RemoteCall call(
        arch_, tid, t, **cur,
        [this](std::uint64_t addr, std::span<const std::uint8_t> data) {
            return memory_.write_raw(addr, data);
        },
        "call");
    arch::RegisterSnapshot regs = call.saved();
    const std::uint64_t stack = (arch_.sp(regs) - kStackSkip) & ~std::uint64_t{15};
    const auto pushed = arch_.set_call(regs, function, args, stack, landing);
    Status result = ok_status();
    if (!pushed.empty()) result = memory_.write_raw(arch_.sp(regs), pushed);
    if (result) result = call.set_registers(regs);
    std::uint64_t value = 0;
    const auto deadline = std::chrono::steady_clock::now() + kCallTimeout;
    while (result) {
        if (ptrace(PTRACE_CONT, tid, nullptr, nullptr) != 0) {
            result = make_error(ErrorCode::SystemError,
                                fmt::format("cannot run thread {}: {}", tid, std::strerror(errno)));
            break;
        }
        WaitStatus status;
        pid_t got = 0;
        while ((got = wait_thread(tid, status, __WALL | WNOHANG)) == 0 &&
               std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        if (got == 0) {
            // Taken back where it waits; what it holds by now stays held.
            syscall(SYS_tgkill, pid_, tid, SIGSTOP);
            wait_thread(tid, status, __WALL);
            result = make_error(ErrorCode::SystemError,
                                "the call did not return within 10 s: another thread of the "
                                "program may hold a lock it needs");
            break;
        }
        if (got != tid || !status.stopped()) {
            result = make_error(ErrorCode::SystemError, "the thread ended during the call");
            break;
        }
        t.regs.reset(); // the cache holds what the thread had before the call
        const int sig = status.stop_signal();
        const bool event = status.kind() == WaitStatus::Kind::PtraceEvent;
        if (sig == SIGSTOP && !event) t.took_own_sigstop(); // none is on its way now
        if (event || sig == SIGSTOP) continue;              // an event or a stop of ours
        auto now = registers_.snapshot(tid, false);
        if (!now) {
            result = now.error();
            break;
        }
        const std::uint64_t pc = arch_.pc(**now);
        if (sig == SIGTRAP && pc == arch_.pc_after_breakpoint(landing)) {
            value = arch_.call_result(**now);
            break;
        }
        if (sig == SIGTRAP || sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) {
            result = make_error(ErrorCode::SystemError,
                                fmt::format("the call stopped on signal {} at 0x{:x}", sig, pc));
            break;
        }
        // A signal for the program: kept for later, as an injected system call keeps one.
        if (!t.pending) t.pending = StopEvent::signal_stop(pid_, tid, sig);
    }
    // The registers as they were; if they cannot be, the thread must not run on.
    if (auto restored = call.finish(); !restored) return restored.error();
    if (!result) return result.error();
    return value;
}

} // namespace tpagent::process
