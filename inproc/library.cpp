// The in-process agent as a shared library (libtpagent-inproc.so, libinproctrace.so): loaded by
// the program's dynamic loader (preloaded, linked, or dlopen'ed by tpagent), it starts in its
// constructor, and the C library tells it of forks.
#include "inproc/inproc.hpp"
#include <pthread.h>
#include <unistd.h>

namespace tpagent::inproc {
namespace {

// Runs in the child after tpagent saw it born: a child the trace follows has its mark from
// tpagent (its own id); any other collects nothing.
void on_fork_child() {
    if (g_process.pid != static_cast<std::uint32_t>(getpid())) g_process.forked = kForkedUntraced;
}

__attribute__((constructor)) void load() {
    if (!start_agent()) return;
    pthread_atfork(nullptr, nullptr, on_fork_child);
    catch_orphan_traps();
}

} // namespace
} // namespace tpagent::inproc
