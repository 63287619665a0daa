// Loading the in-process agent: create the shared buffer and say where everything is.
#include "inproc/inproc.hpp"
#include "bytecode/runtime.hpp"
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

namespace tpagent::inproc {

void* g_shared_buffer = nullptr;
bool g_forked = false;

namespace {

void on_fork_child() {
    g_forked = true;
}

template <class F> std::uint64_t address_of(F* f) {
    return reinterpret_cast<std::uint64_t>(f);
}

__attribute__((constructor)) void load() {
    // The fd stays open: tpagent finds the shared buffer through it (its name) in /proc/PID/fd.
    const int fd = memfd_create(kMemfdName, MFD_CLOEXEC);
    if (fd < 0) return;
    if (ftruncate(fd, kSharedBufferBytes) != 0) {
        close(fd);
        return;
    }
    void* shared = mmap(nullptr, kSharedBufferBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (shared == MAP_FAILED) {
        close(fd);
        return;
    }
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
        .printf = 0, // no printf in the program: it would need the C library's stdio
    };
    h->general_registers_only = 1;
    h->copy_begin = reinterpret_cast<std::uint64_t>(tpagent_copy_begin);
    h->copy_end = reinterpret_cast<std::uint64_t>(tpagent_copy_end);
    h->copy_fault = reinterpret_cast<std::uint64_t>(tpagent_copy_fault);
    pthread_atfork(nullptr, nullptr, on_fork_child);
    catch_orphan_traps();
    __atomic_store_n(&h->magic, kMagic, __ATOMIC_RELEASE); // last: the header is complete
    g_shared_buffer = shared;
}

} // namespace
} // namespace tpagent::inproc
