#include "arch/aarch64/jump_pad.hpp"
#include "arch/aarch64/emitter.hpp"
#include "arch/aarch64/encoding.hpp"
#include "arch/aarch64/exclusive_sequence.hpp"
#include "arch/aarch64/inline_collection.hpp"
#include "arch/aarch64/relocator.hpp"
#include <cstring>
#include <fmt/format.h>

namespace tpagent::arch::aarch64 {
namespace {

using namespace enc;

constexpr std::uint32_t kBlockAt = 16;                                 // block offset from sp
constexpr std::uint32_t kBlockRoom = (kCoreBlockBytes + 15) / 16 * 16; // 272
constexpr std::uint32_t kFrameBytes = kBlockAt + kBlockRoom;           // 288, 16-byte multiple
constexpr std::uint32_t kSpSlot = kBlockAt + 31 * 8;
constexpr std::uint32_t kPcSlot = kBlockAt + 32 * 8;
constexpr std::uint32_t kCpsrSlot = kBlockAt + 33 * 8;

std::uint32_t adr(unsigned d, std::int64_t delta) {
    const auto imm = static_cast<std::uint32_t>(delta) & 0x1fffff;
    return 0x10000000 | (imm & 3) << 29 | (imm >> 2) << 5 | d;
}
constexpr std::uint32_t kMrsNzcvX0 = 0xd53b4200;
constexpr std::uint32_t kPushX16 = 0xf81f0ff0; // str x16, [sp, #-16]!: sp moves as it stores
constexpr std::uint32_t kPopX16 = 0xf84107f0;  // ldr x16, [sp], #16
constexpr std::uint32_t kMsrNzcvX0 = 0xd51b4200;

// The thread's words (AgentStacks::thread_slots, in the goroutine's M): x16 and x17 while
// they are the pad's, the agent stack's top (0: none yet, or the thread is in the pad), and
// x15 and x14 while a first hit takes a stack. Five of m.tls's six words.
enum AgentSlot : std::uint32_t {
    kSavedX16 = 0,
    kStackTop = 8,
    kSavedX17 = 16,
    kSavedX15 = 24,
    kSavedX14 = 32
};

// The word at x17 plus what `add` (an add to x15) adds, by load/store-exclusive: x15 the sum,
// x14 the store's status. No flag changes.
void add_exclusively(Emitter& e, std::uint32_t add) {
    const std::size_t retry = e.size();
    e.put(ldxr_x(15, 17));
    e.put(add);
    e.put(stxr_x(14, 15, 17));
    e.put(cbnz_w(14));
    e.link(e.size() - 4, retry);
}

bool power_of_two(std::uint64_t v) {
    return v != 0 && (v & (v - 1)) == 0;
}

// Where a pad on an agent stack switches to it, before anything else: nothing is written to
// the thread's stack (a goroutine's: a few KB, no red zone, and Go keeps the caller's frame
// pointer just below sp). x16 is parked in tpidr_el0 (which a Go program without cgo never
// reads) until x16 holds the thread's words, found from the goroutine in x28 (Go's g
// register). A first hit takes a stack from the pool by load/store-exclusive; none left: the
// hit is counted and only the displaced instruction runs (the returned offset: a B to link).
// After the switch the thread's sp is at [sp] and its words' address at [sp + 8], and
// tpidr_el0 holds that address while the pad runs: the thread's key for the collector's
// per-thread state (the image's thread table), back to 0 when the pad ends. No flag changes.
std::size_t emit_agent_stack_entry(Emitter& e, const AgentStacks& stacks) {
    const std::uint64_t span = stacks.pool_bytes - kAgentStackHeaderBytes;
    e.put(msr_tpidr_el0(16));
    e.put(ldr_x(16, 28, static_cast<std::uint32_t>(stacks.goroutine_m))); // the goroutine's M
    e.put(add_imm(16, 16, static_cast<std::uint32_t>(stacks.thread_slots)));
    e.put(str_x(17, 16, kSavedX17));
    e.put(mrs_tpidr_el0(17));
    e.put(str_x(17, 16, kSavedX16));
    e.put(msr_tpidr_el0(16));
    e.put(ldr_x(17, 16, kStackTop));
    const std::size_t to_switch = e.size();
    e.put(cbnz_x(17));
    // take: x15 = the bytes handed out with this stack's, x14 the store's status.
    e.put(str_x(15, 16, kSavedX15));
    e.put(str_x(14, 16, kSavedX14));
    e.move_wide(17, stacks.pool);
    add_exclusively(e, add_imm_lsl12(15, 15, stacks.stack_bytes >> 12));
    e.put(sub_imm(14, 15, 1)); // beyond the pool when (handed out - 1) >= span
    e.put(lsr_imm(14, 14, static_cast<unsigned>(__builtin_ctzll(span))));
    const std::size_t to_none = e.size();
    e.put(cbnz_x(14));
    e.put(add_reg(17, 17, 15)); // the top: pool + header + handed out
    e.put(add_imm_lsl12(17, 17, kAgentStackHeaderBytes >> 12));
    e.put(ldr_x(15, 16, kSavedX15));
    e.put(ldr_x(14, 16, kSavedX14));
    const std::size_t to_switch2 = e.size();
    e.put(b_unlinked());
    // none: counted at pool + 8.
    e.link(to_none, e.size());
    e.put(add_imm(17, 17, 8));
    add_exclusively(e, add_imm(15, 15, 1));
    e.put(ldr_x(15, 16, kSavedX15));
    e.put(ldr_x(14, 16, kSavedX14));
    e.put(ldr_x(17, 16, kSavedX17));
    e.put(ldr_x(16, 16, kSavedX16));
    e.put(msr_tpidr_el0(kZr));
    const std::size_t to_relocated = e.size();
    e.put(b_unlinked());
    // switch: x16 = the words, x17 = the stack's top.
    e.link(to_switch, e.size());
    e.link(to_switch2, e.size());
    e.put(str_x(kZr, 16, kStackTop)); // taken while in the pad: a nested hit takes another
    e.put(sub_imm(17, 17, 16));
    e.put(str_x(16, 17, 8));
    e.put(add_imm(16, kSp, 0)); // mov x16, sp
    e.put(str_x(16, 17, 0));
    e.put(add_imm(kSp, 17, 0)); // mov sp, x17
    e.put(ldr_x(16, kSp, 8));
    e.put(ldr_x(17, 16, kSavedX17));
    e.put(ldr_x(16, 16, kSavedX16));
    return to_relocated;
}

// The end of a pad on an agent stack, with every register but x16 and x17 restored and sp at
// the frame: x16 and x17 go back through the thread's words, sp through tpidr_el0, and the
// stack is the thread's again for its next hit.
void emit_agent_stack_exit(Emitter& e, std::uint32_t frame_bytes) {
    e.put(ldr_x(16, kSp, frame_bytes + 8)); // the thread's words
    e.put(ldr_x(17, kSp, kBlockAt + 17 * 8));
    e.put(str_x(17, 16, kSavedX17));
    e.put(ldr_x(17, kSp, kBlockAt + 16 * 8));
    e.put(str_x(17, 16, kSavedX16));
    e.put(ldr_x(17, kSp, frame_bytes)); // the thread's sp
    e.put(add_imm(kSp, kSp, frame_bytes + 16));
    e.put(msr_tpidr_el0(17));
    e.put(add_imm(17, kSp, 0)); // the stack's top
    e.put(str_x(17, 16, kStackTop));
    e.put(mrs_tpidr_el0(17));
    e.put(add_imm(kSp, 17, 0));
    e.put(msr_tpidr_el0(kZr));
    e.put(ldr_x(17, 16, kSavedX17));
    e.put(ldr_x(16, 16, kSavedX16));
}

Status check_agent_stacks(const AgentStacks& stacks) {
    const auto in_m = [](std::int32_t offset, std::int32_t most) {
        return offset >= 0 && offset % 8 == 0 && offset <= most;
    };
    if (stacks.stack_bytes % 4096 || stacks.stack_bytes == 0 || stacks.stack_bytes >= (1u << 24) ||
        stacks.pool % 16 || stacks.pool_bytes <= kAgentStackHeaderBytes ||
        !power_of_two(stacks.pool_bytes - kAgentStackHeaderBytes) ||
        (stacks.pool_bytes - kAgentStackHeaderBytes) % stacks.stack_bytes ||
        !in_m(stacks.goroutine_m, 32760) || !in_m(stacks.thread_slots, 4095))
        return make_error(ErrorCode::Unsupported,
                          "pads on agent stacks need stacks of whole pages, a power of two of "
                          "them, and the words' offsets word-aligned and near");
    return ok_status();
}

// The gate: while the 4-byte flag at `gate` is 0 only the displaced instruction runs (the
// returned offset: a B to link to it). x16 alone is saved, and no flag changes.
std::size_t emit_gate(Emitter& e, std::uint64_t gate) {
    e.put(kPushX16);
    e.move_wide(16, gate);
    e.put(ldr_w(16, 16, 0));
    const std::size_t to_on = e.size();
    e.put(cbnz_w(16));
    e.put(kPopX16);
    const std::size_t to_relocated = e.size();
    e.put(b_unlinked());
    e.link(to_on, e.size());
    e.put(kPopX16);
    return to_relocated;
}

} // namespace

bool landing_pad(std::uint32_t insn) {
    return (insn & 0xffffff3f) == 0xd503241f || insn == 0xd503233f || insn == 0xd503237f;
}

Result<EmittedJumpPad> emit_jump_pad(const JumpPadSpec& spec) {
    if (spec.original_code.size() < 4 || spec.tracepoint_address % 4 != 0)
        return make_error(ErrorCode::Unsupported, "not a whole AArch64 instruction");
    std::uint32_t insn = 0;
    std::memcpy(&insn, spec.original_code.data(), 4);
    // The collector's own atomics between a store-exclusive and its load-exclusive clear the
    // monitor (tpagent refuses the whole sequence before: Architecture::interruption_hazard).
    if (store_exclusive(insn))
        return make_error(ErrorCode::Unsupported,
                          fmt::format("0x{:x} is a store-exclusive: collecting between it and "
                                      "its load-exclusive would make it fail every time",
                                      spec.tracepoint_address));
    if (spec.branch_target_guarded && landing_pad(insn))
        return make_error(ErrorCode::Unsupported,
                          fmt::format("0x{:x} is a branch-target landing pad (BTI or PACIASP) in "
                                      "BTI-guarded code: an indirect call landing on the jump "
                                      "would fault; put the fast tracepoint on the next "
                                      "instruction",
                                      spec.tracepoint_address));
    auto jump = encode_branch(spec.tracepoint_address, spec.pad_address);
    if (!jump) return jump.error();

    const bool own_stack = spec.agent_stacks.pool != 0;
    if (own_stack)
        if (auto checked = check_agent_stacks(spec.agent_stacks); !checked) return checked.error();

    Emitter e(spec.pad_address);
    // Branches to the displaced instruction: the gate's while tracing is off, or the agent
    // stack entry's when the pool has none left.
    std::size_t to_relocated = 0;
    std::optional<PadFront> front; // the frame written by the pad itself
    if (own_stack) {
        to_relocated = emit_agent_stack_entry(e, spec.agent_stacks);
    } else if (spec.gate) {
        to_relocated = emit_gate(e, spec.gate);
        if (spec.inline_collection) {
            // Checked before any code is put: one it cannot make is the gate alone.
            auto made = emit_pad_front(e, *spec.inline_collection, spec.tracepoint_address);
            if (made) front = std::move(*made);
        }
    }
    e.put(sub_imm(kSp, kSp, kFrameBytes)); // first: below sp is anybody's (signal frames)
    for (unsigned r = 0; r < 30; r += 2)
        e.put(stp(r, r + 1, kSp, kBlockAt + r * 8));
    e.put(str_x(30, kSp, kBlockAt + 30 * 8));
    // the thread's sp: on an agent stack, where the switch put it
    e.put(own_stack ? ldr_x(0, kSp, kFrameBytes) : add_imm(0, kSp, kFrameBytes));
    e.put(str_x(0, kSp, kSpSlot));
    e.move_wide(0, spec.tracepoint_address);
    e.put(str_x(0, kSp, kPcSlot));
    e.put(kMrsNzcvX0);
    e.put(str_w(0, kSp, kCpsrSlot));
    const bool state = spec.stage_vector_state;
    if (state) emit_vector_state_save(e, spec.vector_state, kBlockAt); // sp moves down
    const std::size_t return_slot_adr = e.size();
    e.put(0);                           // adr x0, <return>: patched below
    e.put(str_x(0, kSp, kBlockAt - 8)); // frame - 8: the frame is at sp + kBlockAt either way
    e.move_wide(0, spec.argument);
    e.put(state ? mov_reg(1, 19) : add_imm(1, kSp, kBlockAt)); // block
    e.put(add_imm(2, kSp, kBlockAt));                          // frame
    e.put(state ? mov_reg(3, 19) : add_imm(3, kSp, kBlockAt)); // anchor
    e.move_wide(16, spec.collector);
    e.put(kBlrX16);
    e.patch(return_slot_adr, adr(0, static_cast<std::int64_t>(e.size() - return_slot_adr)));
    if (state) emit_vector_state_restore(e, spec.vector_state, kBlockAt);

    e.put(ldr_w(0, kSp, kCpsrSlot));
    e.put(kMsrNzcvX0);
    for (unsigned r = 0; r < 30; r += 2)
        if (!own_stack || r != 16) e.put(ldp(r, r + 1, kSp, kBlockAt + r * 8));
    e.put(ldr_x(30, kSp, kBlockAt + 30 * 8));
    if (own_stack)
        emit_agent_stack_exit(e, kFrameBytes);
    else
        e.put(add_imm(kSp, kSp, kFrameBytes));

    EmittedJumpPad pad;
    pad.relocated_offset = e.size();
    if (own_stack || spec.gate) e.link(to_relocated, pad.relocated_offset);
    if (front) {
        for (std::size_t at : front->to_relocated)
            e.link(at, pad.relocated_offset);
        pad.copy = front->copy;
    }
    auto relocated = relocate(spec.original_code.first(4), spec.tracepoint_address,
                              spec.pad_address + pad.relocated_offset);
    if (!relocated) return relocated.error();
    pad.code = e.take();
    pad.code.insert(pad.code.end(), relocated->code.begin(), relocated->code.end());
    pad.relocated = std::move(*relocated);
    pad.patch.resize(4);
    std::memcpy(pad.patch.data(), &*jump, 4);
    return pad;
}

} // namespace tpagent::arch::aarch64
