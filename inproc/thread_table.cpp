// The self-mapped image's per-thread state: a table keyed by the thread pointer
// (thread_state.hpp), for programs where the image has no TLS of its own.
#include "inproc/inproc.hpp"
#include <new>
#include <sys/syscall.h>
#if defined(__x86_64__)
#include <asm/prctl.h>
#endif

namespace tpagent::inproc {

constinit ThreadEntry g_thread_entries[1u << kThreadEntryBits]{};
ThreadPointerSource g_thread_pointer_source = ThreadPointerSource::SystemCall;

std::uint64_t thread_pointer_by_call() {
#if defined(__x86_64__)
    std::uint64_t tp = 0;
    tpagent_syscall(SYS_arch_prctl, ARCH_GET_FS, reinterpret_cast<long>(&tp), 0, 0, 0, 0);
    return tp;
#else
    return thread_pointer();
#endif
}

ThreadState* find_thread(std::uint64_t tp) {
    if (tp == 0) return nullptr;
    constexpr unsigned kEntries = 1u << kThreadEntryBits;
    const unsigned home = thread_home(tp);
    for (unsigned i = 0; i < kEntries; ++i) {
        ThreadEntry& e = g_thread_entries[(home + i) % kEntries];
        std::uint64_t key = e.key.load(std::memory_order_acquire);
        if (key == 0) {
            // Constructed before the key is published: only this thread looks for tp.
            if (!e.key.compare_exchange_strong(key, ~std::uint64_t{0}, std::memory_order_acq_rel))
                continue; // another thread took it now
            new (e.state) ThreadState{};
            e.key.store(tp, std::memory_order_release);
            return reinterpret_cast<ThreadState*>(e.state);
        }
        if (key == tp) return reinterpret_cast<ThreadState*>(e.state);
    }
    return nullptr;
}

} // namespace tpagent::inproc
