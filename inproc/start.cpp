// Starting the in-process agent: create the shared buffer and say where everything is. System
// calls only: the self-mapped image runs this in programs whose C library it cannot call.
#include "inproc/inproc.hpp"
#include "bytecode/runtime.hpp"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

namespace tpagent::inproc {

void* g_shared_buffer = nullptr;
ProcessMark g_process{};

namespace {

template <class F> std::uint64_t address_of(F* f) {
    return reinterpret_cast<std::uint64_t>(f);
}

long sys(long number, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0, long a5 = 0,
         long a6 = 0) {
    return tpagent_syscall(number, a1, a2, a3, a4, a5, a6);
}

} // namespace

bool start_agent() {
    if (g_shared_buffer) return true;
    // The fd stays open: tpagent finds the shared buffer through it (its name) in /proc/PID/fd.
    const long fd = sys(SYS_memfd_create, reinterpret_cast<long>(kMemfdName), MFD_CLOEXEC);
    if (fd < 0) return false;
    if (sys(SYS_ftruncate, fd, static_cast<long>(kSharedBufferBytes)) != 0) {
        sys(SYS_close, fd);
        return false;
    }
    const long mapped = sys(SYS_mmap, 0, static_cast<long>(kSharedBufferBytes),
                            PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mapped < 0 && mapped > -4096) {
        sys(SYS_close, fd);
        return false;
    }
    void* shared = reinterpret_cast<void*>(mapped);
    Header* h = header_of(shared);
    h->version = kVersion;
    h->shared_buffer_bytes = static_cast<std::uint32_t>(kSharedBufferBytes);
    h->shared_buffer_address = reinterpret_cast<std::uint64_t>(shared);
    h->collector = address_of(&tpagent_inproc_collect);
    namespace rt = bytecode::rt;
    h->helpers = bytecode::HelperAddresses{
        .read = address_of(&rt::read),
        .reg = address_of(&rt::reg),
        .getv = address_of(&rt::getv),
        .setv = address_of(&rt::setv),
        .tracev = address_of(&rt::tracev),
        .trace = address_of(&rt::trace),
        .tracenz = address_of(&rt::tracenz),
        // From formats tpagent flattens into the program: no C library (agent-style dprintf).
        .printf = address_of(&rt::printf_flat),
    };
    h->general_registers_only = 1;
    h->copy_begin = reinterpret_cast<std::uint64_t>(tpagent_copy_begin);
    h->copy_end = reinterpret_cast<std::uint64_t>(tpagent_copy_end);
    h->copy_fault = reinterpret_cast<std::uint64_t>(tpagent_copy_fault);
    h->breakpoint_entry = address_of(&tpagent_inproc_break);
    h->breakpoint_trap = address_of(&tpagent_breakpoint_trap);
    g_process.pid = static_cast<std::uint32_t>(sys(SYS_getpid));
    h->forked_flag = reinterpret_cast<std::uint64_t>(&g_process);
#if !TPAGENT_INPROC_IMAGE && defined(__x86_64__)
    // Initial-exec TLS: the same distance from the thread pointer (glibc's and musl's TCB
    // start with a pointer to itself) in every thread.
    std::uint64_t tp;
    asm("mov %%fs:0, %0" : "=r"(tp));
    h->thread_state_offset =
        static_cast<std::int64_t>(reinterpret_cast<std::uint64_t>(this_thread()) - tp);
#elif !TPAGENT_INPROC_IMAGE && defined(__aarch64__)
    // Initial-exec TLS: the same distance from tpidr_el0 in every thread.
    std::uint64_t tp;
    asm("mrs %0, tpidr_el0" : "=r"(tp));
    h->thread_state_offset =
        static_cast<std::int64_t>(reinterpret_cast<std::uint64_t>(this_thread()) - tp);
#elif TPAGENT_INPROC_IMAGE
    static_assert(offsetof(ThreadEntry, key) == 0);
    // Keyed by the thread pointer a pad reads in one instruction: x86-64's fs:0 where the
    // threads' TCB points to itself, arm64's tpidr_el0 always.
#if defined(__aarch64__)
    constexpr bool kKeyedInOneLoad = true;
#else
    const bool kKeyedInOneLoad = g_thread_pointer_source == ThreadPointerSource::SelfPointer;
#endif
    if (kKeyedInOneLoad) {
        h->thread_table = reinterpret_cast<std::uint64_t>(&g_thread_entries[0]);
        h->thread_table_bits = kThreadEntryBits;
        h->thread_entry_bytes = sizeof(ThreadEntry);
        h->thread_entry_state = offsetof(ThreadEntry, state);
    }
#endif
    __atomic_store_n(&h->magic, kMagic, __ATOMIC_RELEASE); // last: the header is complete
    g_shared_buffer = shared;
    return true;
}

} // namespace tpagent::inproc
