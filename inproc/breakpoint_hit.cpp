// A hit of gdb's breakpoint whose conditions run in the program: its pad calls here, the
// compiled conditions read the staged registers and the program's memory, and the thread
// stops for tpagent only when one holds (or cannot be evaluated: as gdbserver, gdb then sees
// the hit rather than the agent deciding on a half-read value). A false condition costs the
// pad and these calls, no system call and no stop.
#include "inproc/inproc.hpp"
#include "bytecode/context.hpp"

using namespace tpagent::inproc;

namespace {

struct BreakpointView {
    Header* header;
    const std::uint8_t* block;
};

bool read_breakpoint_register(void* user, unsigned regnum, std::uint64_t* value) {
    const auto* v = static_cast<const BreakpointView*>(user);
    return staged_register(v->header, v->block, regnum, value);
}

} // namespace

extern "C" void tpagent_inproc_break(std::uint64_t record, std::uint8_t* block,
                                     std::uint64_t /*frame*/, const std::uint8_t* anchor) {
    // (A forked child's copy of the code is put back by tpagent; one not yet cleaned runs on.)
    if (!g_shared_buffer || g_forked) return;
    const auto* r = reinterpret_cast<const BreakpointRecord*>(record);
    Header* h = header_of(g_shared_buffer);
    if (r->complete_block) {
        ThreadState* t = this_thread();
        if (!t) {
            tpagent_breakpoint_trap(record); // no room to complete the registers: gdb decides
            return;
        }
        tpagent_thread_constants(t->thread_constants);
        complete_block(h, *t, r->address, block, anchor);
    }
    BreakpointView view{h, block};
    tpagent::bytecode::Context ctx;
    ctx.user = &view;
    ctx.read_memory = read_memory;
    ctx.read_register = read_breakpoint_register;
    ctx.registers = block;
    const std::uint32_t n = r->condition_count <= kMaxBreakpointConditions ? r->condition_count : 0;
    for (std::uint32_t i = 0; i < n; ++i) {
        tpagent::bytecode::EvalOut out;
        const auto status =
            reinterpret_cast<tpagent::bytecode::CompiledFn>(r->conditions[i])(&ctx, &out);
        if (status != tpagent::bytecode::EvalStatus::Ok || out.value != 0) {
            tpagent_breakpoint_trap(record);
            return;
        }
    }
}
