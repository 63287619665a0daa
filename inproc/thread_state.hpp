// What the collector keeps per program thread, and how a thread finds its own. The library
// (libtpagent-inproc.so, loaded by the program's dynamic loader) has it in initial-exec TLS: one
// %fs-relative access. The self-mapped image (TPAGENT_INPROC_IMAGE: placed by tpagent in a
// program that has no loader for it) has no TLS of its own: a thread's state is the entry of a
// table keyed by its thread pointer (thread_table.cpp).
#pragma once
#include "inproc/frame_chunks.hpp"
#include "inproc/shared_buffer.hpp"
#include <atomic>
#include <cstdint>

namespace tpagent::inproc {

// The readable range (of tpagent's listing) the thread's last read fell in, valid while the
// listing's sequence is the one it was found under: a collector reading the same variables
// hit after hit skips the search.
struct LastRange {
    std::uint64_t sequence = 1; // odd: never a listing's sequence, so empty
    std::uint64_t start = 0;
    std::uint64_t end = 0;
};

struct ThreadState {
    ChunkWriter writer;
    ThreadSlot* slot = nullptr;     // this run's slot, or null (slots ran out)
    HitCounter* counters = nullptr; // the slot's row, or null: the records' shared counters
    std::uint64_t slot_generation = 0;
    // The process it joined the run in (ProcessMark::pid): in a forked child, the state copied
    // from the parent's thread (its slot, its chunk) is not the child's.
    std::uint32_t process = 0;
    // The R block's tail, taken when the thread joined the run: the process's constant
    // registers (Header::tail_constants), then the thread-pointer registers (read at each hit,
    // even by instruction, they cost 2.5 ns, and a thread's, glibc's TCB, never changes).
    std::uint64_t tail_registers[4] = {};
    std::uint32_t tail_bytes = 0; // of tail_registers; kNoTail: the header's made no sense
    // The registers the pads leave out as the same at every hit (tpagent_thread_constants),
    // read when the thread joined the run.
    alignas(8) std::uint8_t thread_constants[kMaxThreadConstants] = {};
    bool busy = false; // a hit nested inside a hit (signal handler) is dropped
    bool key_set = false;
    LastRange last_range;
};

#if TPAGENT_INPROC_IMAGE
// The image's table: an entry per thread pointer, claimed by the thread's first hit and kept
// (the image sees no thread end; a thread pointer is one live thread's at a time, so the next
// thread the C library gives an ended one's pointer takes its entry over, chunk and all).
struct alignas(64) ThreadEntry {
    std::atomic<std::uint64_t> key; // the thread pointer; 0: free
    alignas(ThreadState) unsigned char state[sizeof(ThreadState)];
};
inline constexpr unsigned kThreadEntryBits = 10;
extern ThreadEntry g_thread_entries[1u << kThreadEntryBits];
// How the image reads the thread pointer (x86-64's fs_base; tpagent tells at the image's start):
enum class ThreadPointerSource : long {
    SystemCall = 0,  // arch_prctl(ARCH_GET_FS): works everywhere, a kernel entry a hit
    Instruction = 1, // rdfsbase, where the kernel enabled FSGSBASE (about 6 ns here)
    // The load at fs:0: the C library's TCB starts with a pointer to itself (x86-64 ABI; glibc
    // and musl), which tpagent checked in every thread at the start. One load.
    SelfPointer = 2,
};
extern ThreadPointerSource g_thread_pointer_source;
std::uint64_t thread_pointer_by_call();
// The thread's entry after a miss at its home slot: found further on, or claimed; null when
// the table is full (the thread's hits are dropped) or the thread has no thread pointer.
ThreadState* find_thread(std::uint64_t tp);

inline std::uint64_t thread_pointer() {
#if defined(__x86_64__)
    std::uint64_t tp;
    if (__builtin_expect(g_thread_pointer_source == ThreadPointerSource::SelfPointer, 1)) {
        asm volatile("mov %%fs:0, %0" : "=r"(tp));
        return tp;
    }
    if (g_thread_pointer_source != ThreadPointerSource::Instruction)
        return thread_pointer_by_call();
    asm volatile("rdfsbase %0" : "=r"(tp));
    return tp;
#elif defined(__aarch64__)
    std::uint64_t tp;
    asm volatile("mrs %0, tpidr_el0" : "=r"(tp));
    return tp;
#else
#error "no thread pointer for this architecture"
#endif
}

inline unsigned thread_home(std::uint64_t tp) {
    return static_cast<unsigned>((tp * 0x9e3779b97f4a7c15ull) >> (64 - kThreadEntryBits));
}

// The calling thread's state: its thread pointer's entry.
inline ThreadState* this_thread() {
    const std::uint64_t tp = thread_pointer();
    ThreadEntry& e = g_thread_entries[thread_home(tp)];
    if (__builtin_expect(e.key.load(std::memory_order_relaxed) == tp && tp != 0, 1))
        return reinterpret_cast<ThreadState*>(e.state);
    return find_thread(tp);
}
#else
extern constinit __attribute__((tls_model("initial-exec"))) thread_local ThreadState t_state;
inline ThreadState* this_thread() {
    return &t_state;
}
#endif

} // namespace tpagent::inproc
