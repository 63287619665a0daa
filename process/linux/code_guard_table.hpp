// The code guard's table, shared between tpagent and its watchdog (code_guard.hpp), and what
// the watchdog does with it.
#pragma once
#include "process/linux/code_guard.hpp"
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <sys/types.h>

namespace tpagent::process::code_guard {

// A process's first entry has length 0 and says what to do with it (`flags`); the others are
// its patched bytes.
struct GuardEntry {
    static constexpr std::size_t kBytes = 16;
    static constexpr std::uint32_t kKillWithTpagent = 1;
    static constexpr std::uint32_t kSharedPages = 2; // `shared` names pages to give back
    std::int32_t pid = 0;
    std::uint32_t length = 0;
    std::uint32_t flags = 0;
    std::uint64_t addr = 0;
    std::uint8_t clean[kBytes] = {};   // the program's own bytes
    std::uint8_t current[kBytes] = {}; // tpagent's
    SharedPages shared;                // a process's first entry only
};

// Two sides: tpagent fills the one not in use, then switches `active` to it.
struct GuardTable {
    static constexpr std::uint32_t kCapacity = 8192;
    struct Side {
        std::uint32_t count = 0;
        GuardEntry entries[kCapacity];
    };
    std::atomic<std::uint32_t> active{0};
    Side sides[2];
};

// In the watchdog, once tpagent has ended: each live process in the table is killed if it is to
// end with tpagent, or else stopped (once tpagent's ptrace hold on it is gone), given the
// program's own bytes back where tpagent's still are, given back the shared pages tpagent
// filled, and let run on. Prints a line per process it changed.
void restore_left_patches(const GuardTable& table);

} // namespace tpagent::process::code_guard
