// The code guard: if tpagent dies without cleaning up (SIGKILL, a crash), a program it was
// tracing must not be left with breakpoints and fast-tracepoint jumps in its code (the next hit
// of a breakpoint with no tracer kills it with SIGTRAP), nor be killed with tpagent. A watchdog
// process, started before anything else, shares a table with tpagent: every byte tpagent changed
// in program code, and per process whether it ends with tpagent (a program tpagent started and
// traces nothing in, as PTRACE_O_EXITKILL would have it). When tpagent's end closes the pipe
// between them, the watchdog kills those, and stops each other program, writes the original
// bytes back where tpagent's are still in place, and lets it run on. Pads stay mapped: a thread
// in one finishes it and jumps back. Memory tpagent shares with such a program (the in-process
// agent's trace buffer) is given back then too.
#pragma once
#include <cstdint>
#include <span>
#include <sys/types.h>
#include <vector>

namespace tpagent::process {

// A run of patched bytes: what the program's code holds without tpagent (`clean`) and what
// tpagent has written there (`current`).
struct CodePatch {
    std::uint64_t addr = 0;
    std::vector<std::uint8_t> clean;
    std::vector<std::uint8_t> current;
};

// Pages of a file (a memfd) that tpagent filled in a program's mapping of it: from `offset`,
// `bytes` of them. The watchdog first clears the 4-byte flag at `off_flag` (the agent's
// `tracing`), then punches the pages out of the file, which frees them in the program too.
struct SharedPages {
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;
    std::uint64_t off_flag = 0;
};

namespace code_guard {

// Starts the watchdog; call once, early, while tpagent has no other thread or child. Without it
// (or if it cannot start) the functions below do nothing.
void start();
// Whether the watchdog runs (else a program tpagent starts should die with it by
// PTRACE_O_EXITKILL).
bool running();
// The patches now in process `pid`'s code, replacing the ones published before for it, and
// whether it ends with tpagent. Publish a patch before writing it and drop it after taking it
// out, so that the table never misses one that is in memory. `forget` when tpagent lets the
// process go.
void publish(pid_t pid, std::span<const CodePatch> patches, bool kill_with_tpagent);
void forget(pid_t pid);
// The shared pages to give back in process `pid` if tpagent dies (one file per process), and
// when there are none any more.
void publish_shared_pages(pid_t pid, const SharedPages& pages);
void forget_shared_pages(pid_t pid);

} // namespace code_guard
} // namespace tpagent::process
