// Host I/O (vFile) state of one session: the files gdb opened through us and the process whose
// filesystem view names are resolved in (vFile:setfs).
#pragma once
#include <set>
#include <string>
#include <sys/types.h>

namespace tpagent::server {

struct HostIoState {
    static constexpr std::size_t kMaxOpenFiles = 64;
    pid_t fs_pid = 0;
    std::set<int> fds;
    void close_all();
    ~HostIoState() { close_all(); }
};

} // namespace tpagent::server
