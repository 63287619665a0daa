// A hit of gdb's breakpoint whose conditions or commands run in the program: its pad calls
// here, the compiled conditions read the staged registers and the program's memory, and then
// either the thread stops for tpagent, when one holds (or cannot be evaluated: as gdbserver,
// gdb then sees the hit rather than the agent deciding on a half-read value), or, for an
// agent-style dprintf, its commands print into the shared buffer's PrintRing and the thread
// goes on: gdb never sees a dprintf's hit. A false condition, or a dprintf's line, costs the
// pad and these calls, no system call and no stop.
#include "inproc/inproc.hpp"
#include "inproc/print_ring.hpp"
#include "bytecode/context.hpp"

using namespace tpagent::inproc;

namespace {

struct BreakpointView {
    Header* header;
    const std::uint8_t* block;
    const BreakpointRecord* record;
};

bool read_breakpoint_register(void* user, unsigned regnum, std::uint64_t* value) {
    const auto* v = static_cast<const BreakpointView*>(user);
    return staged_register(v->header, v->block, regnum, value);
}

// A slot of the ring for the next line, and its number (try_print_slot), a full ring emptied
// first by tpagent: the thread stops at the breakpoint trap with no record, and tpagent reads
// the ring before it goes on; other threads may fill it again meanwhile (or one that took the
// oldest slot has yet to fill it), and it stops again. With no tracer (the trap skipped in the
// program), or a tpagent that reads nothing for thousands of stops, the line is lost and
// counted: null.
PrintSlot* take_print_slot(std::uint64_t& number) {
    constexpr int kFruitlessWaits = 4096;
    PrintRing* ring = print_ring(g_shared_buffer);
    for (int fruitless = 0; fruitless < kFruitlessWaits;) {
        if (PrintSlot* slot = try_print_slot(g_shared_buffer, number)) return slot;
        const std::uint64_t read = ring->read.load(std::memory_order_relaxed);
        const std::uint64_t orphaned = g_orphan_traps.load(std::memory_order_relaxed);
        ring->waits.fetch_add(1, std::memory_order_relaxed);
        tpagent_breakpoint_trap(0);
        if (g_orphan_traps.load(std::memory_order_relaxed) != orphaned) break;
        fruitless = ring->read.load(std::memory_order_relaxed) == read ? fruitless + 1 : 0;
    }
    ring->dropped.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
}

// A command's line, or why it failed, into the ring.
void put_line(const BreakpointRecord* record, const char* text, std::size_t len,
              tpagent::bytecode::EvalStatus status, const tpagent::bytecode::EvalOut* out) {
    std::uint64_t number = 0;
    PrintSlot* slot = take_print_slot(number);
    if (!slot) return;
    if (len > sizeof slot->text) len = sizeof slot->text;
    slot->breakpoint = record->address;
    slot->status = static_cast<std::uint32_t>(status);
    slot->length = static_cast<std::uint32_t>(len);
    slot->fault_offset = out ? out->fault_offset : 0;
    slot->fault_address = out ? out->fault_address : 0;
    for (std::size_t i = 0; i < len; ++i)
        slot->text[i] = text[i];
    publish_print_slot(slot, number);
}

// printf's output (rt::printf_flat).
bool print_line(void* user, const char* text, std::size_t len) {
    put_line(static_cast<const BreakpointView*>(user)->record, text, len,
             tpagent::bytecode::EvalStatus::Ok, nullptr);
    return true;
}

} // namespace

extern "C" void tpagent_inproc_break(std::uint64_t record, std::uint8_t* block,
                                     std::uint64_t /*frame*/, const std::uint8_t* anchor) {
    using tpagent::bytecode::CompiledFn;
    using tpagent::bytecode::EvalOut;
    using tpagent::bytecode::EvalStatus;
    // (A forked child's copy of the code is put back by tpagent; one not yet cleaned, or one a
    // trace follows, runs on: gdb's breakpoints are the traced process's.)
    if (!g_shared_buffer || g_process.forked) return;
    const auto* r = reinterpret_cast<const BreakpointRecord*>(record);
    const std::uint32_t commands =
        r->command_count <= kMaxBreakpointCommands ? r->command_count : 0;
    Header* h = header_of(g_shared_buffer);
    if (r->complete_block) {
        ThreadState* t = this_thread();
        if (!t) {
            // No room to complete the registers: gdb decides, or a dprintf says it could not.
            if (commands == 0) {
                tpagent_breakpoint_trap(record);
            } else {
                EvalOut out;
                put_line(r, nullptr, 0, EvalStatus::RegisterError, &out);
            }
            return;
        }
        tpagent_thread_constants(t->thread_constants);
        complete_block(h, *t, r->address, block, anchor);
    }
    BreakpointView view{h, block, r};
    tpagent::bytecode::Context ctx;
    ctx.user = &view;
    ctx.read_memory = read_memory;
    ctx.read_register = read_breakpoint_register;
    ctx.print = print_line;
    ctx.registers = block;
    const std::uint32_t n = r->condition_count <= kMaxBreakpointConditions ? r->condition_count : 0;
    bool holds = n == 0;
    for (std::uint32_t i = 0; i < n && !holds; ++i) {
        EvalOut out;
        const auto status = reinterpret_cast<CompiledFn>(r->conditions[i])(&ctx, &out);
        holds = status != EvalStatus::Ok || out.value != 0;
    }
    if (!holds) return;
    if (commands == 0) {
        tpagent_breakpoint_trap(record);
        return;
    }
    // As tpagent runs them: in order, the rest left out after one that fails.
    for (std::uint32_t i = 0; i < commands; ++i) {
        EvalOut out;
        const auto status = reinterpret_cast<CompiledFn>(r->commands[i])(&ctx, &out);
        if (status != EvalStatus::Ok) {
            put_line(r, nullptr, 0, status, &out);
            return;
        }
    }
}
