#include "process/linux/code_guard_table.hpp"
#include "base/proc_files.hpp"
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <string>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace tpagent::process::code_guard {
namespace {

// tpagent's ptrace hold ends a moment after its pipe closes (the kernel closes files first):
// false if the process is gone or still traced after that.
bool wait_untraced(pid_t pid) {
    for (int i = 0; i < 5000; ++i) {
        const std::string state = status_field(pid, "State");
        if (state.empty() || state[0] == 'Z' || state[0] == 'X') return false;
        if (status_field(pid, "TracerPid") == "0") return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
}

// Every thread held still by a ptrace interrupt (threads started meanwhile too); each maps to
// the signal to hand back when it is let go.
std::map<pid_t, int> hold_threads(pid_t pid) {
    std::map<pid_t, int> held;
    for (bool added = true; added;) {
        added = false;
        for (pid_t tid : list_tasks(pid)) {
            if (held.count(tid)) continue;
            if (ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) continue;
            ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr);
            held[tid] = 0;
            added = true;
        }
    }
    for (auto it = held.begin(); it != held.end();) {
        int status = 0;
        pid_t r = 0;
        while ((r = waitpid(it->first, &status, __WALL)) < 0 && errno == EINTR) {
        }
        if (r != it->first || !WIFSTOPPED(status)) {
            it = held.erase(it); // gone
            continue;
        }
        // A signal that arrived first is passed on when the thread is let go.
        if ((status >> 16) != PTRACE_EVENT_STOP) it->second = WSTOPSIG(status);
        ++it;
    }
    return held;
}

// Writes the program's bytes back where tpagent's still are; how many places changed.
std::size_t restore_bytes(pid_t pid, const GuardTable::Side& side) {
    const std::string path = "/proc/" + std::to_string(pid) + "/mem";
    const int mem = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (mem < 0) return 0;
    std::size_t restored = 0;
    for (std::uint32_t i = 0; i < side.count; ++i) {
        const GuardEntry& e = side.entries[i];
        if (e.pid != pid || e.length == 0 || e.length > GuardEntry::kBytes) continue;
        std::uint8_t now[GuardEntry::kBytes];
        const auto off = static_cast<off_t>(e.addr);
        if (pread(mem, now, e.length, off) != static_cast<ssize_t>(e.length)) continue;
        // Byte by byte: only what is still tpagent's (the program may have changed its code
        // since, or the place may be clean already).
        bool changed = false;
        for (std::uint32_t b = 0; b < e.length; ++b)
            if (now[b] == e.current[b] && now[b] != e.clean[b]) {
                now[b] = e.clean[b];
                changed = true;
            }
        if (changed && pwrite(mem, now, e.length, off) == static_cast<ssize_t>(e.length))
            ++restored;
    }
    close(mem);
    return restored;
}

// The file behind `pages`, opened for writing through one of the process's open files or
// mappings; -1 if it has neither now.
int open_shared_file(pid_t pid, const SharedPages& pages) {
    return open_process_file(pid, [&](const std::string& entry) {
        struct stat st {};
        return stat(entry.c_str(), &st) == 0 && st.st_dev == pages.device &&
               st.st_ino == pages.inode;
    });
}

bool punch_buffer(int fd, const SharedPages& pages) {
    return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                     static_cast<off_t>(pages.offset), static_cast<off_t>(pages.bytes)) == 0;
}

// Collection off, then the pages punched out of the file: the program's mapping stays, and
// holds no memory. Whether they were.
bool give_back_shared_pages(pid_t pid, const SharedPages& pages) {
    const int fd = open_shared_file(pid, pages);
    if (fd < 0) return false;
    const std::uint32_t off = 0;
    (void)!pwrite(fd, &off, sizeof off, static_cast<off_t>(pages.off_flag));
    const bool done = punch_buffer(fd, pages);
    close(fd);
    return done;
}

// Punches the buffer out again if it is still off: not if a new tpagent has begun a run in it.
void give_back_again(pid_t pid, const SharedPages& pages) {
    const int fd = open_shared_file(pid, pages);
    if (fd < 0) return;
    std::uint32_t tracing = 1;
    if (pread(fd, &tracing, sizeof tracing, static_cast<off_t>(pages.off_flag)) ==
            static_cast<ssize_t>(sizeof tracing) &&
        tracing == 0)
        (void)punch_buffer(fd, pages);
    close(fd);
}

} // namespace

void restore_left_patches(const GuardTable& table) {
    const GuardTable::Side& side = table.sides[table.active.load(std::memory_order_acquire) & 1];
    std::vector<pid_t> pids;
    std::map<pid_t, SharedPages> shared;
    for (std::uint32_t i = 0; i < side.count && i < GuardTable::kCapacity; ++i) {
        const GuardEntry& e = side.entries[i];
        if (e.length != 0 || e.pid <= 0) continue;
        if (e.flags & GuardEntry::kSharedPages) shared[e.pid] = e.shared;
        if (e.flags & GuardEntry::kKillWithTpagent) {
            kill(e.pid, SIGKILL);
        } else {
            // Stopped at once, before tpagent's hold ends: a SIGSTOP sent while it is traced
            // waits for the tracer, whose end lets it through (a group stop), so that no thread
            // runs into a breakpoint meanwhile. A thread that had stopped at a breakpoint
            // tpagent had not handled yet still gets its SIGTRAP then.
            kill(e.pid, SIGSTOP);
            pids.push_back(e.pid);
        }
    }
    std::vector<pid_t> given_back_to;
    for (pid_t pid : pids) {
        if (!wait_untraced(pid)) continue;
        auto held = hold_threads(pid);
        const std::size_t restored = restore_bytes(pid, side);
        const bool given_back = shared.count(pid) && give_back_shared_pages(pid, shared.at(pid));
        for (const auto& [tid, sig] : held)
            ptrace(PTRACE_DETACH, tid, nullptr,
                   reinterpret_cast<void*>(static_cast<long>(sig == SIGSTOP ? 0 : sig)));
        kill(pid, SIGCONT);
        if (restored > 0)
            dprintf(2,
                    "tpagent-guard: tpagent ended with its breakpoints or jumps in process %d: "
                    "%zu place(s) restored; the process runs on\n",
                    pid, restored);
        if (given_back) {
            dprintf(2, "tpagent-guard: the trace buffer's memory in process %d given back\n", pid);
            given_back_to.push_back(pid);
        }
    }
    // A thread held inside the collector finishes its hit once resumed, writing its frame into
    // pages just given back (which the write maps again): punched again once such hits are
    // over. Nothing reads that buffer any more.
    for (const int ms : {100, 1000}) {
        if (given_back_to.empty()) break;
        usleep(static_cast<useconds_t>(ms) * 1000);
        for (pid_t pid : given_back_to)
            give_back_again(pid, shared.at(pid));
    }
}

} // namespace tpagent::process::code_guard
