// What a forked child needs of the process that forked it (the children themselves are kept
// by LinuxForkChildren): its copy of the code put back, and, taken by gdb, a process of its own.
#include "process/linux/linux_process.hpp"
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

namespace tpagent::process {

void LinuxProcess::clean_child(pid_t child) {
    const int mem = ::open(fmt::format("/proc/{}/mem", child).c_str(), O_RDWR | O_CLOEXEC);
    auto put = [&](std::uint64_t addr, std::span<const std::uint8_t> bytes) {
        if (mem < 0 || ::pwrite(mem, bytes.data(), bytes.size(), static_cast<off_t>(addr)) !=
                           static_cast<ssize_t>(bytes.size()))
            spdlog::warn("forked child {}: cannot restore the code at 0x{:x}", child, addr);
    };
    // Breakpoints first: one on a fast tracepoint's jump saved a byte of the jump, which
    // the jump's own original bytes then replace.
    memory_->breakpoints().for_each_original(put);
    fast_sites_.for_each_patch([&](std::uint64_t addr, std::span<const std::uint8_t> original,
                                   std::span<const std::uint8_t>) { put(addr, original); });
    if (mem >= 0) ::close(mem);
}

std::unique_ptr<LinuxProcess> LinuxProcess::forked_child(pid_t child) {
    // Traced since its birth, with the parent's ptrace options, and stopped. Taken as
    // attached: it shares its parent's process group and terminal, neither of them its own
    // (Ctrl-C goes to it alone).
    std::unique_ptr<LinuxProcess> inf(new LinuxProcess(child, true));
    inf->add_thread(child, false);
    inf->finish_setup();
    return inf;
}

} // namespace tpagent::process
