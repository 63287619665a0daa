// The in-process agent as a self-mapped image (libtpagent-inproc-image.so): for programs whose
// dynamic loader cannot take the library (a static program, musl's loader) or must not be
// called (another stopped thread may hold its lock, or malloc's). tpagent maps this file's
// segments into the program with injected system calls, applies its relocations (RELATIVE
// only: the build checks), and calls this entry once in one stopped thread. It uses no C
// library: system calls of its own, per-thread state keyed by the thread pointer
// (thread_table.cpp), no constructors; like the library, it catches the SIGTRAPs a killed
// tpagent leaves behind (orphan_traps.cpp). Forks need no hook: tpagent takes its jumps out of a
// forked child's code, or, for a child the trace follows, writes its ProcessMark.
#include "inproc/inproc.hpp"

// 0 when the agent started (the shared buffer is there), else -1. `thread_pointer_source`: a
// ThreadPointerSource.
extern "C" __attribute__((visibility("default"))) long
tpagent_inproc_image_start(long thread_pointer_source) {
    if (tpagent::inproc::g_shared_buffer) return 0; // started before
    using tpagent::inproc::ThreadPointerSource;
    tpagent::inproc::g_thread_pointer_source =
        thread_pointer_source == 2   ? ThreadPointerSource::SelfPointer
        : thread_pointer_source == 1 ? ThreadPointerSource::Instruction
                                     : ThreadPointerSource::SystemCall;
    if (!tpagent::inproc::start_agent()) return -1;
    tpagent::inproc::catch_orphan_traps();
    return 0;
}
