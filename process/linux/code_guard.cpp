#include "process/linux/code_guard.hpp"
#include "process/linux/code_guard_table.hpp"
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <map>
#include <optional>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tpagent::process::code_guard {
namespace {

GuardTable* g_table = nullptr;
int g_pipe = -1; // tpagent's end: closed by the kernel however tpagent ends
struct Process {
    std::vector<CodePatch> patches;
    bool kill_with_tpagent = false;
    std::optional<SharedPages> shared;
};
std::map<pid_t, Process>& published() {
    static std::map<pid_t, Process> processes;
    return processes;
}

// The table not in use is filled, then made the one in use: the watchdog, reading after
// tpagent's end, always finds a whole table.
void write_table() {
    const std::uint32_t next = 1 - g_table->active.load(std::memory_order_relaxed);
    GuardTable::Side& side = g_table->sides[next];
    std::uint32_t count = 0;
    bool full = false;
    auto add = [&]() -> GuardEntry* {
        if (count == GuardTable::kCapacity) {
            full = true;
            return nullptr;
        }
        side.entries[count] = GuardEntry{};
        return &side.entries[count++];
    };
    for (const auto& [pid, process] : published()) {
        GuardEntry* head = add();
        if (!head) break;
        head->pid = pid;
        head->flags = process.kill_with_tpagent ? GuardEntry::kKillWithTpagent : 0;
        if (process.shared) {
            head->flags |= GuardEntry::kSharedPages;
            head->shared = *process.shared;
        }
        for (const CodePatch& patch : process.patches)
            for (std::size_t at = 0; at < patch.clean.size(); at += GuardEntry::kBytes) {
                GuardEntry* e = add();
                if (!e) break;
                const std::size_t n = std::min(GuardEntry::kBytes, patch.clean.size() - at);
                e->pid = pid;
                e->length = static_cast<std::uint32_t>(n);
                e->addr = patch.addr + at;
                std::copy_n(patch.clean.begin() + static_cast<std::ptrdiff_t>(at), n, e->clean);
                std::copy_n(patch.current.begin() + static_cast<std::ptrdiff_t>(at), n, e->current);
            }
    }
    side.count = count;
    g_table->active.store(next, std::memory_order_release);
    static bool warned = false;
    if (full && !warned) {
        warned = true;
        spdlog::warn("the code guard's table is full: past {} patched places, a tpagent that "
                     "dies leaves some in the program",
                     GuardTable::kCapacity);
    }
}

[[noreturn]] void watch(int read_end, GuardTable* table) {
    // Signals meant for tpagent (a terminal's ^C, a hangup) must not end the watchdog before it
    // has done its work; it ends by itself when tpagent does.
    for (int sig : {SIGINT, SIGQUIT, SIGHUP, SIGTERM, SIGTSTP, SIGTTOU, SIGTTIN, SIGPIPE, SIGUSR1})
        std::signal(sig, SIG_IGN);
    prctl(PR_SET_NAME, "tpagent-guard");
    // Nothing of tpagent's stays open here but stderr (for the one line it may print): a reader
    // of tpagent's stdout sees its end when tpagent ends.
    if (read_end != 3) {
        dup2(read_end, 3);
        read_end = 3;
    }
    close_range(4, ~0U, 0);
    if (int null = open("/dev/null", O_RDWR | O_CLOEXEC); null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        close(null);
    }
    char buf[16];
    while (true) {
        ssize_t n = read(read_end, buf, sizeof buf);
        if (n == 0 || (n < 0 && errno != EINTR)) break;
    }
    restore_left_patches(*table);
    _exit(0);
}

} // namespace

void start() {
    if (g_table) return;
    void* mem = mmap(nullptr, sizeof(GuardTable), PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        spdlog::warn("no code guard: cannot map its table");
        return;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        munmap(mem, sizeof(GuardTable));
        spdlog::warn("no code guard: cannot make its pipe");
        return;
    }
    auto* table = new (mem) GuardTable{};
    // Twice forked: the watchdog is nobody's child here, so tpagent's waits for any child
    // never see it.
    const pid_t middle = fork();
    if (middle == 0) {
        close(fds[1]);
        if (fork() == 0) watch(fds[0], table);
        _exit(0);
    }
    close(fds[0]);
    if (middle < 0) {
        close(fds[1]);
        munmap(mem, sizeof(GuardTable));
        spdlog::warn("no code guard: cannot fork");
        return;
    }
    int status = 0;
    while (waitpid(middle, &status, 0) < 0 && errno == EINTR) {
    }
    // Programs tpagent starts must not share the table (they fork from tpagent).
    madvise(mem, sizeof(GuardTable), MADV_DONTFORK);
    g_table = table;
    g_pipe = fds[1];
}

bool running() {
    return g_table != nullptr;
}

void publish(pid_t pid, std::span<const CodePatch> patches, bool kill_with_tpagent) {
    if (!g_table) return;
    Process& p = published()[pid];
    p.patches.assign(patches.begin(), patches.end());
    p.kill_with_tpagent = kill_with_tpagent;
    write_table();
}

void forget(pid_t pid) {
    if (!g_table || !published().erase(pid)) return;
    write_table();
}

void publish_shared_pages(pid_t pid, const SharedPages& pages) {
    if (!g_table) return;
    // (A process tpagent traces is published from the start; one it does not, it has not
    // started: not one to kill.)
    published()[pid].shared = pages;
    write_table();
}

void forget_shared_pages(pid_t pid) {
    if (!g_table) return;
    auto it = published().find(pid);
    if (it == published().end() || !it->second.shared) return;
    it->second.shared.reset();
    write_table();
}

} // namespace tpagent::process::code_guard
