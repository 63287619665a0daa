// The in-process agent as a shared library (libtpagent-inproc.so, libinproctrace.so): loaded by
// the program's dynamic loader (preloaded, linked, or dlopen'ed by tpagent), it starts in its
// constructor, and the C library tells it of forks.
#include "inproc/inproc.hpp"
#include <pthread.h>

namespace tpagent::inproc {
namespace {

void on_fork_child() {
    g_forked = true;
}

__attribute__((constructor)) void load() {
    if (!start_agent()) return;
    pthread_atfork(nullptr, nullptr, on_fork_child);
    catch_orphan_traps();
}

} // namespace
} // namespace tpagent::inproc
