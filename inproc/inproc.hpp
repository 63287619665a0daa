// Internals of the in-process agent (see shared_region.hpp for what it shares with tpagent).
#pragma once
#include "inproc/shared_region.hpp"
#include <cstddef>
#include <cstdint>

namespace tpagent::inproc {

// The shared region, or null when it could not be created (the collector then does nothing).
extern void* g_region;
// True in a child forked from the traced program: it inherited the pads and the shared
// mapping, but its frames would not belong to the trace.
extern bool g_forked;

// Copies len bytes of the program's memory at addr into dst without ever faulting; returns
// how many leading bytes could be read.
std::size_t safe_read(void* dst, std::uint64_t addr, std::size_t len);

} // namespace tpagent::inproc

// The architecture's primitives (arch/*/inproc_primitives.S). The copy, whose faults tpagent
// recovers, returns how many leading bytes it copied; its labels go into the shared header.
// The system call bypasses the C library, so a collecting thread never leaves the library.
extern "C" std::size_t tpagent_fault_recovering_copy(void* dst, const void* src, std::size_t len);
extern "C" long tpagent_syscall(long number, long a1, long a2, long a3, long a4, long a5, long a6);
extern "C" const char tpagent_copy_begin[], tpagent_copy_end[], tpagent_copy_fault[];
// The thread-pointer registers (Header::tail_register_bytes of them) into out: by instruction
// when by_instruction, else by system call. Returns the bytes written.
extern "C" std::size_t tpagent_thread_registers(std::uint64_t* out, long by_instruction);
// A counter every core reads alike (no system call, no shared write): orders frames.
extern "C" std::uint64_t tpagent_timestamp();

namespace tpagent::inproc {} // namespace tpagent::inproc

// The jump pads' call target.
extern "C" __attribute__((visibility("default"))) void
tpagent_inproc_collect(std::uint64_t record, std::uint8_t* block, const std::uint8_t* state);
