#include "arch/aarch64/jump_pad.hpp"
#include "arch/aarch64/emitter.hpp"
#include "arch/aarch64/encoding.hpp"
#include "arch/aarch64/exclusive_sequence.hpp"
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
constexpr std::uint32_t kMsrNzcvX0 = 0xd51b4200;

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

    Emitter e(spec.pad_address);
    e.put(sub_imm(kSp, kSp, kFrameBytes)); // first: below sp is anybody's (signal frames)
    for (unsigned r = 0; r < 30; r += 2)
        e.put(stp(r, r + 1, kSp, kBlockAt + r * 8));
    e.put(str_x(30, kSp, kBlockAt + 30 * 8));
    e.put(add_imm(0, kSp, kFrameBytes)); // the thread's sp
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
        e.put(ldp(r, r + 1, kSp, kBlockAt + r * 8));
    e.put(ldr_x(30, kSp, kBlockAt + 30 * 8));
    e.put(add_imm(kSp, kSp, kFrameBytes));

    EmittedJumpPad pad;
    pad.relocated_offset = e.size();
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
