// Whether a program is written in Go, and how its threads find their own memory: what decides
// whether its fast tracepoints' pads may use the thread's stack (arch::AgentStacks).
//
// Go's goroutines run on stacks of a few KB that the runtime grows by copying; the function
// prologues keep only a few hundred bytes free below the stack pointer and there is no red
// zone, so a pad and its collector must not run there. In a Go program without cgo (statically
// linked, the default), the runtime points each thread's fs base at its M's tls array, one
// word in: the goroutine pointer is at fs:-8 and the four words from fs:0 are unused on
// linux/amd64 (runtime/sys_linux_amd64.s settls, runtime2.go m.tls). The pads keep their
// agent stack there. With cgo, fs is the C library's and nothing there is free.
#pragma once
#include "base/result.hpp"
#include "process/linux/elf_image.hpp"
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <sys/types.h>
#include <vector>

namespace tpagent::process {

enum class GoProgram { NotGo, WithoutCgo, WithCgo };

// The sections a Go linker writes into every Go executable.
bool has_go_sections(const Sections& sections);

// What the program `pid` runs (its executable, /proc/pid/exe).
GoProgram go_program_of(pid_t pid);

// The offset from the fs base of the words a pad on an agent stack uses in a Go program
// without cgo.
inline constexpr std::int32_t kGoThreadSlots = 0;

// The stack of every goroutine the runtime has made (runtime.allgs, a slice of *g; a g starts
// with its stack's bounds, lo and hi), read from the program's memory while it is stopped:
// where a goroutine preempted at any instruction keeps that address (the return address of
// the call the runtime injected). Dead goroutines' stacks are among them (a stale word costs
// a jump, never more). A program not linked at fixed addresses is not read (an error).
// On arm64, where a pad on an agent stack finds its thread's words (arch::AgentStacks): the
// offsets of g.m and of m.tls, which nothing uses on linux/arm64 without cgo (Go keeps g in x28
// and never sets tpidr_el0). Read from the program, not assumed: runtime.g0's m must be
// runtime.m0, m0's procid (right after g0, morebuf and divmod) the main thread's id, and its
// gsignal's m m0 again; m.tls follows gsignal, goSigStack (40 bytes) and sigmask (8) in
// runtime2.go, and all six of its words must read 0. An error says which check failed.
struct CodeRange {
    std::uint64_t start = 0, end = 0;
};
struct GoThreadWords {
    std::int32_t goroutine_m = 0;
    std::int32_t thread_slots = 0;
    // The runtime's code that runs before x28 is the thread's goroutine (runtime.clone's new
    // thread before it sets g, the program's start): no pad there.
    std::vector<CodeRange> g_unset;
};
using ReadMemory = std::function<Result<std::size_t>(std::uint64_t, std::span<std::uint8_t>)>;
Result<GoThreadWords> go_thread_words(pid_t pid, const ReadMemory& read);

struct GoroutineStack {
    std::uint64_t lo = 0, hi = 0;
};
Result<std::vector<GoroutineStack>> goroutine_stacks(pid_t pid, const ReadMemory& read);

} // namespace tpagent::process
