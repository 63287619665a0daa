// openat2(2), which glibc 2.36 does not wrap: opening a name under a directory with limits on
// how it resolves (RESOLVE_BENEATH, RESOLVE_IN_ROOT...). Returns the fd, or -1 with errno.
#pragma once
#include <cstdint>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace tpagent {

inline int openat2_fd(int dir, const char* name, int flags, mode_t mode, std::uint64_t resolve) {
    open_how how{};
    how.flags = static_cast<std::uint64_t>(flags);
    how.mode = (flags & O_CREAT) ? mode : 0;
    how.resolve = resolve;
    return static_cast<int>(syscall(SYS_openat2, dir, name, &how, sizeof how));
}

} // namespace tpagent
