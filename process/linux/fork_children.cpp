// Held fork children (see fork_children.hpp).
#include "process/linux/fork_children.hpp"
#include <cerrno>
#include <csignal>
#include <cstring>
#include <spdlog/spdlog.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

namespace tpagent::process {

namespace {
// The child's next wait status, whatever it is.
void wait_once(pid_t child) {
    int status = 0;
    while (waitpid(child, &status, __WALL) < 0 && errno == EINTR) {
    }
}
} // namespace

void ForkChildren::await(pid_t child) {
    if (!seen_.erase(child)) wait_once(child);
}

void ForkChildren::hold(pid_t child, bool vfork) {
    if (vfork) vfork_.insert(child);
    held_.insert(child);
}

std::optional<bool> ForkChildren::take(pid_t pid) {
    if (!held_.erase(pid)) return std::nullopt;
    return vfork_.erase(pid) != 0;
}

bool ForkChildren::release(pid_t pid, AddressSpace& memory) {
    auto vfork = take(pid);
    if (!vfork) return false;
    // gdb took its own breakpoints out of the shared memory; tpagent's go for the child's life.
    if (*vfork) memory.lift_for_vfork();
    detach(pid);
    return true;
}

void ForkChildren::release_all_but(const std::set<pid_t>& keep, AddressSpace& memory) {
    for (auto it = held_.begin(); it != held_.end();) {
        if (keep.count(*it)) {
            ++it;
            continue;
        }
        if (vfork_.erase(*it)) memory.lift_for_vfork();
        detach(*it);
        it = held_.erase(it);
    }
}

bool ForkChildren::kill(pid_t pid) {
    if (!take(pid)) return false;
    ::kill(pid, SIGKILL);
    wait_once(pid); // its end, reaped
    return true;
}

void ForkChildren::detach(pid_t child) {
    if (ptrace(PTRACE_DETACH, child, nullptr, nullptr) != 0)
        spdlog::warn("forked child {}: cannot detach: {}", child, std::strerror(errno));
    else
        spdlog::debug("forked child {}: code restored, detached", child);
}

} // namespace tpagent::process
