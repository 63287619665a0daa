// Internals of the in-process agent (see shared_buffer.hpp for what it shares with tpagent).
#pragma once
#include "inproc/shared_buffer.hpp"
#include "inproc/thread_state.hpp"
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tpagent::inproc {

// The shared buffer, or null when it could not be created (the collector then does nothing).
extern void* g_shared_buffer;
// This process as its agent knows it (shared_buffer.hpp): whether it is a child forked from the
// traced program (which inherited the pads and the shared mapping), followed by the trace or
// not, and its id.
extern ProcessMark g_process;

// Creates the shared buffer and fills in its header (where the collector, the helpers and the
// copy's labels are): g_shared_buffer, or false. System calls only, no C library.
bool start_agent();

// Takes over SIGTRAP for breakpoints tpagent leaves behind when it dies (orphan_traps.cpp).
void catch_orphan_traps();
// How many times a thread went past tpagent_breakpoint_trap with no tracer to stop it.
extern std::atomic<std::uint64_t> g_orphan_traps;

// Copies len bytes of the program's memory at addr into dst without ever faulting; returns
// how many leading bytes could be read.
std::size_t safe_read(void* dst, std::uint64_t addr, std::size_t len);

// A hit's registers and memory as agent expressions read them (collector.cpp), for the
// collector and for breakpoints evaluated in the program (breakpoint_hit.cpp). The register
// a pad staged, or false when it did not stage that one; safe_read of all len bytes.
inline bool staged_register(const Header* h, const std::uint8_t* block, unsigned regnum,
                            std::uint64_t* value) {
    if (regnum >= kMaxCoreRegisters || h->register_size[regnum] == 0) return false;
    const std::uint8_t* at = block + h->register_offset[regnum];
    std::uint64_t v = 0;
    if (h->register_size[regnum] == 8)
        __builtin_memcpy(&v, at, 8); // the usual base of a memory action: no call
    else
        __builtin_memcpy(&v, at, h->register_size[regnum]);
    *value = v;
    return true;
}
bool read_memory(void* user, std::uint64_t addr, void* out, std::size_t len);
// Fills in what the pad left out of the staged block (Header::completion), for a hit that
// reads registers: the pc, the stack pointer and flags from the pad's anchor, and the thread's
// constants (ThreadState::thread_constants, which the caller has taken).
void complete_block(const Header* h, const ThreadState& t, std::uint64_t pc, std::uint8_t* block,
                    const std::uint8_t* anchor);

// Whether [addr, addr+len) lies inside [start, end).
inline bool covers(std::uint64_t start, std::uint64_t end, std::uint64_t addr, std::size_t len) {
    return start <= addr && addr < end && len <= end - addr;
}
// Whether [addr, addr+len) lies inside the thread's last range, found under the listing's
// sequence `seq`.
inline bool in_last_range(std::uint64_t seq, std::uint64_t addr, std::size_t len) {
    const ThreadState* t = this_thread();
    return t && t->last_range.sequence == seq &&
           covers(t->last_range.start, t->last_range.end, addr, len);
}

} // namespace tpagent::inproc

// The architecture's primitives (arch/*/inproc_primitives.S). The copy, whose faults tpagent
// recovers, returns how many leading bytes it copied; its labels go into the shared header.
// The system call bypasses the C library, so a collecting thread never leaves the library.
extern "C" std::size_t tpagent_fault_recovering_copy(void* dst, const void* src, std::size_t len);
extern "C" long tpagent_syscall(long number, long a1, long a2, long a3, long a4, long a5, long a6);
extern "C" const char tpagent_copy_begin[], tpagent_copy_end[], tpagent_copy_fault[];
// The thread-pointer registers (Header::tail_register_bytes less tail_constant_bytes) into out: by
// instruction when by_instruction, else by system call. Returns the bytes written.
extern "C" std::size_t tpagent_thread_registers(std::uint64_t* out, long by_instruction);
// The registers the pads leave out of the staged block as the same at every hit of a thread
// (Header::completion.constants_size bytes, at most kMaxThreadConstants) into out.
extern "C" std::size_t tpagent_thread_constants(std::uint8_t* out);

namespace tpagent::inproc {

// safe_read, with the common case in line: a read inside the thread's last range is one call
// to the copy (measured: 12 instructions fewer per range collected).
inline std::size_t safe_read_in_line(void* dst, std::uint64_t addr, std::size_t len) {
    if (len != 0 &&
        in_last_range(header_of(g_shared_buffer)->ranges_sequence.load(std::memory_order_acquire),
                      addr, len))
        return tpagent_fault_recovering_copy(dst, reinterpret_cast<const void*>(addr), len);
    return safe_read(dst, addr, len);
}

} // namespace tpagent::inproc

// A conditional breakpoint's condition held (breakpoint_hit.cpp): the trap tpagent takes,
// `record` (its BreakpointRecord) still in the first argument register; 0: a dprintf found
// the ring of lines full (tpagent empties it). With no tracer, the agent's SIGTRAP handler
// steps over it (orphan_traps.cpp).
extern "C" void tpagent_breakpoint_trap(std::uint64_t record);

// What the pad of a gdb breakpoint evaluated in the program calls (breakpoint_hit.cpp).
extern "C" void tpagent_inproc_break(std::uint64_t record, std::uint8_t* block, std::uint64_t frame,
                                     const std::uint8_t* anchor);

// The jump pads' call target.
extern "C" __attribute__((visibility("default"))) void
tpagent_inproc_collect(std::uint64_t record, std::uint8_t* block, std::uint64_t frame,
                       const std::uint8_t* anchor);
