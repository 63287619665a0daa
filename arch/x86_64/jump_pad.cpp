#include "arch/x86_64/jump_pad.hpp"
#include "arch/x86_64/inline_collection.hpp"
#include "arch/x86_64/x86_writer.hpp"
#include "arch/x86_64/relocator.hpp"
#include "arch/x86_64/xsave_layout.hpp"
#include <algorithm>
#include <cpuid.h>
#include <cstring>
#include <fmt/format.h>

namespace tpagent::arch::x86_64 {
namespace {

using x86_writer::Mem;
using x86_writer::Reg;
using x86_writer::X86Writer;
using enum x86_writer::Reg;

constexpr std::size_t kRedZone = 128;
constexpr std::size_t kGprBytes = 16 * 8; // rax..r15 at the start of the `g` block
constexpr std::size_t kStateAlign = 64;   // XSAVE needs 64, FXSAVE 16

std::size_t round_up(std::size_t v, std::size_t to) {
    return (v + to - 1) / to * to;
}

bool fits_rel32(std::int64_t d) {
    return d >= INT32_MIN && d <= INT32_MAX;
}

// op [rsp + disp] with the 0x0f-prefixed opcodes (xsave family, ldmxcsr).
void op0f_rsp(X86Writer& a, bool rex_w, std::uint8_t op, unsigned digit, std::int32_t disp) {
    a.rex(rex_w, 0, RSP);
    a.byte(0x0f);
    a.byte(op);
    a.modrm_mem(digit, Mem{RSP, disp});
}

void lea_rsp(X86Writer& a, std::int32_t delta) { // lea rsp, [rsp + delta]: keeps flags
    a.lea(RSP, Mem{RSP, delta});
}

void fs_store(X86Writer& a, std::int32_t disp, Reg src) {
    a.fs_op(true, {0x89}, src, disp);
}
void fs_load(X86Writer& a, Reg dst, std::int32_t disp) {
    a.fs_op(true, {0x8b}, dst, disp);
}

void patch_rel8(std::vector<std::uint8_t>& code, std::size_t at, std::size_t to) {
    code[at] = static_cast<std::uint8_t>(static_cast<std::int8_t>(to - (at + 1)));
}
void patch_rel32(std::vector<std::uint8_t>& code, std::size_t at, std::size_t to) {
    const auto rel = static_cast<std::uint32_t>(static_cast<std::int32_t>(to - (at + 4)));
    for (int i = 0; i < 4; ++i)
        code[at + i] = static_cast<std::uint8_t>(rel >> (8 * i));
}

// Thread-slot words (JumpPadSpec::agent_stacks).
enum AgentSlot : std::int32_t { kSavedRcx = 0, kStackTop = 8, kSavedRax = 16, kSavedFlags = 24 };

// Where a pad on an agent stack switches to it. rcx is the thread's stack's top (0: none yet);
// emitted before the switch: a first hit takes a stack from the pool, and a hit that finds
// none runs only the displaced instructions (`to_relocated`: the rel32 to patch).
struct AgentStackEntry {
    std::size_t to_relocated = 0;
};
AgentStackEntry emit_agent_stack_entry(X86Writer& a, const AgentStacks& stacks) {
    const std::int32_t slots = stacks.thread_slots;
    fs_store(a, slots + kSavedRcx, RCX);
    fs_load(a, RCX, slots + kStackTop);
    a.byte(0xe3), a.byte(0x02); // jrcxz take: flags are still the thread's
    a.byte(0xeb);               // jmp switch
    const std::size_t to_switch = a.pos();
    a.byte(0);
    // take: a stack from the pool, its flags kept in ax meanwhile.
    fs_store(a, slots + kSavedRax, RAX);
    a.flags_to_ax();
    fs_store(a, slots + kSavedFlags, RAX);
    a.mov_imm(RAX, stacks.pool);
    a.mov_imm(RCX, stacks.stack_bytes);
    a.byte(0xf0), a.byte(0x48), a.byte(0x0f), a.byte(0xc1), a.byte(0x08); // lock xadd [rax], rcx
    const auto last =
        static_cast<std::uint32_t>(stacks.pool_bytes - kAgentStackHeaderBytes - stacks.stack_bytes);
    a.byte(0x48), a.byte(0x81), a.byte(0xf9), a.u32(last); // cmp rcx, last
    a.byte(0x77);                                          // ja none
    const std::size_t to_none = a.pos();
    a.byte(0);
    // lea rcx, [rax + rcx + header + stack_bytes]: the stack's top
    a.byte(0x48), a.byte(0x8d), a.byte(0x8c), a.byte(0x08);
    a.u32(static_cast<std::uint32_t>(kAgentStackHeaderBytes + stacks.stack_bytes));
    fs_load(a, RAX, slots + kSavedFlags);
    a.flags_from_ax();
    fs_load(a, RAX, slots + kSavedRax);
    a.byte(0xeb); // jmp switch
    const std::size_t to_switch2 = a.pos();
    a.byte(0);
    // none: counted, and only the displaced instructions run.
    patch_rel8(a.code(), to_none, a.pos());
    a.byte(0xf0), a.byte(0x48), a.byte(0xff), a.byte(0x40), a.byte(0x08); // lock inc qword [rax+8]
    fs_load(a, RAX, slots + kSavedFlags);
    a.flags_from_ax();
    fs_load(a, RAX, slots + kSavedRax);
    fs_load(a, RCX, slots + kSavedRcx);
    a.byte(0xe9); // jmp the relocated instructions
    AgentStackEntry entry{a.pos()};
    a.u32(0);
    // switch: rsp to the agent stack, the thread's rsp on it first.
    patch_rel8(a.code(), to_switch, a.pos());
    patch_rel8(a.code(), to_switch2, a.pos());
    a.byte(0x48), a.byte(0x87), a.byte(0xcc); // xchg rsp, rcx
    a.push(RCX);
    a.byte(0x64), a.byte(0x48), a.byte(0xc7), a.byte(0x04), a.byte(0x25); // mov qword fs:[top], 0
    a.u32(static_cast<std::uint32_t>(slots + kStackTop));
    a.u32(0);
    fs_load(a, RCX, slots + kSavedRcx);
    return entry;
}

// The core's g offsets, checked against the layout rather than assumed.
struct CoreOffsets {
    std::uint32_t rip = 0;
    std::uint32_t eflags = 0;
    std::array<std::uint32_t, 6> segment{}; // es, cs, ss, ds, fs, gs (the sreg numbers)
};

Result<CoreOffsets> core_offsets(const RegisterLayout& layout) {
    static constexpr const char* kPushed[16] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi",
                                                "rbp", "rsp", "r8",  "r9",  "r10", "r11",
                                                "r12", "r13", "r14", "r15"};
    const auto regs = layout.registers();
    auto at = [&](const char* name, std::uint32_t size) -> int {
        const int i = layout.find(name);
        return i >= 0 && regs[i].size == size ? i : -1;
    };
    // The pushes lay rax..r15 down in this order, so the layout must agree.
    for (int i = 0; i < 16; ++i) {
        const int r = at(kPushed[i], 8);
        if (r < 0 || regs[r].g_offset != static_cast<std::uint32_t>(8 * i))
            return make_error(
                ErrorCode::Unsupported,
                fmt::format("register layout: {} is not at offset {}", kPushed[i], 8 * i));
    }
    CoreOffsets off;
    static constexpr const char* kSegments[6] = {"es", "cs", "ss", "ds", "fs", "gs"};
    const int rip = at("rip", 8);
    const int eflags = at("eflags", 4);
    if (rip < 0 || eflags < 0)
        return make_error(ErrorCode::Unsupported, "register layout: no rip or eflags");
    off.rip = regs[rip].g_offset;
    off.eflags = regs[eflags].g_offset;
    for (int s = 0; s < 6; ++s) {
        const int r = at(kSegments[s], 4);
        if (r < 0)
            return make_error(ErrorCode::Unsupported,
                              fmt::format("register layout: no {}", kSegments[s]));
        off.segment[s] = regs[r].g_offset;
    }
    // Everything the pad writes above the GPRs must sit in the T bytes reserved above them.
    const std::uint32_t end =
        std::max({off.rip + 8, off.eflags + 4, off.segment[0] + 4, off.segment[1] + 4,
                  off.segment[2] + 4, off.segment[3] + 4, off.segment[4] + 4, off.segment[5] + 4});
    if (off.rip < kGprBytes || off.eflags < kGprBytes || end > layout.g_size())
        return make_error(ErrorCode::Unsupported, "register layout: core registers misplaced");
    return off;
}

std::uint32_t core_end(const CoreOffsets& off) {
    std::uint32_t end = std::max(off.rip + 8, off.eflags + 4);
    for (auto s : off.segment)
        end = std::max(end, s + 4);
    return end;
}

Status check_state_save(const StateSave& s) {
    if (s.kind == StateSave::Kind::None) return ok_status();
    if (s.kind == StateSave::Kind::Fxsave) {
        if (s.size < fxsave::kSize)
            return make_error(ErrorCode::BadPacket, "FXSAVE area smaller than 512 bytes");
    } else if (s.size < kXsaveHeaderEnd || (s.mask & 3u) == 0) {
        return make_error(ErrorCode::BadPacket, "XSAVE area or mask too small");
    }
    if (s.size > (1u << 20)) return make_error(ErrorCode::TooLarge, "state save area too large");
    return ok_status();
}

void load_xsave_mask(X86Writer& a, std::uint64_t mask) {
    a.mov_imm(RAX, mask & 0xffffffffu);
    a.mov_imm(RDX, mask >> 32);
}

} // namespace

std::size_t core_block_bytes(const RegisterLayout& layout) {
    auto off = core_offsets(layout);
    return off ? core_end(*off) : 0;
}

Architecture::FastBlockCompletion block_completion(const RegisterLayout& layout) {
    auto off = core_offsets(layout);
    if (!off) return {};
    // tpagent_thread_constants writes cs, ss, ds, es, fs, gs in that order (gdb's).
    static constexpr unsigned kOrder[6] = {1, 2, 3, 0, 4, 5}; // sreg numbers
    for (unsigned i = 1; i < 6; ++i)
        if (off->segment[kOrder[i]] != off->segment[kOrder[0]] + 4 * i) return {};
    Architecture::FastBlockCompletion c;
    c.pc_offset = off->rip;
    c.pc_size = 8;
    c.sp_offset = 7 * 8;
    c.sp_size = 8;
    c.sp_bias = static_cast<std::int32_t>(8 + kRedZone); // the anchor is the pushed rflags
    c.flags_offset = off->eflags;
    c.flags_size = 4;
    c.constants_offset = off->segment[kOrder[0]];
    c.constants_size = 6 * 4;
    return c;
}

Result<std::array<std::uint8_t, kJumpLength>> encode_jump(std::uint64_t from, std::uint64_t to) {
    const auto d = static_cast<std::int64_t>(to - (from + kJumpLength));
    if (!fits_rel32(d))
        return make_error(ErrorCode::Unsupported,
                          fmt::format("jump from {:#x} to {:#x} is beyond rel32", from, to));
    const auto rel = static_cast<std::uint32_t>(static_cast<std::int32_t>(d));
    return std::array<std::uint8_t, kJumpLength>{
        0xe9, static_cast<std::uint8_t>(rel), static_cast<std::uint8_t>(rel >> 8),
        static_cast<std::uint8_t>(rel >> 16), static_cast<std::uint8_t>(rel >> 24)};
}

StateSave state_save_for(const CpuFeatures& cpu, bool os_xsave) {
    if (!os_xsave) return {StateSave::Kind::Fxsave, 0, fxsave::kSize};
    return {StateSave::Kind::Xsave, cpu.xcr0 & kSupportedXcr0,
            std::max(cpu.xstate_size, kXsaveHeaderEnd)};
}

bool has_lahf_sahf() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(0x80000001, &eax, &ebx, &ecx, &edx) && (ecx & 1u);
}

StateSave detect_state_save() {
    // Asked once: each CPUID is a VM exit, and serving a fast frame that holds saved state asks
    // for the mask.
    static const StateSave save = [] {
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        const bool os_xsave = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_OSXSAVE);
        return state_save_for(detect_cpu_features(), os_xsave);
    }();
    return save;
}

std::vector<std::uint8_t> pad_state_as_kernel_xstate(std::span<const std::uint8_t> area,
                                                     std::uint64_t mask) {
    std::vector<std::uint8_t> x(area.begin(), area.end());
    if (x.size() < kXsaveHeaderEnd) return x; // FXSAVE: all of it written
    std::uint64_t live = 0;
    std::memcpy(&live, x.data() + kXstateBvOffset, sizeof live);
    if (!(live & (1u << kX87))) { // FCW 0x37f, every other x87 byte 0 (MXCSR is not x87's)
        std::fill(x.begin(), x.begin() + fxsave::kMxcsr, 0);
        std::fill(x.begin() + fxsave::kSt0, x.begin() + fxsave::kXmm0, 0);
        x[fxsave::kFcw] = 0x7f;
        x[fxsave::kFcw + 1] = 0x03;
    }
    if (!(live & (1u << kSse)))
        std::fill(x.begin() + fxsave::kXmm0, x.begin() + fxsave::kXmm0 + 16 * 16, 0);
    const std::uint64_t held = mask | (1u << kX87) | (1u << kSse);
    std::memcpy(x.data() + kSwBytesOffset, &kSwMagic1, sizeof kSwMagic1);
    std::memcpy(x.data() + kSwBytesOffset + 8, &held, sizeof held);
    return x;
}

Result<JumpPad> emit_jump_pad(const JumpPadSpec& spec) {
    if (!spec.layout) return make_error(ErrorCode::BadPacket, "jump pad: no register layout");
    auto jump = encode_jump(spec.tracepoint_address, spec.pad_address);
    if (!jump) return jump.error();
    auto offsets = core_offsets(*spec.layout);
    if (!offsets) return offsets.error();
    if (block_completion(*spec.layout).pc_size == 0)
        return make_error(ErrorCode::Unsupported, "register layout: segments not in gdb's order");
    if (auto st = check_state_save(spec.state_save); !st) return st.error();
    const CoreOffsets& off = *offsets;
    const StateSave& save = spec.state_save;
    const bool xsave = save.kind == StateSave::Kind::Xsave;
    const bool no_save = save.kind == StateSave::Kind::None;
    const AgentStacks& stacks = spec.agent_stacks;
    const bool own_stack = stacks.pool != 0;
    if (own_stack &&
        (!spec.stage_full_core || !spec.flags_by_sahf || stacks.stack_bytes % 16 ||
         stacks.pool % 16 || stacks.pool_bytes < kAgentStackHeaderBytes + stacks.stack_bytes ||
         stacks.pool_bytes > (1u << 30)))
        return make_error(ErrorCode::Unsupported,
                          "pads on agent stacks need the full core staged, lahf/sahf and a pool "
                          "of 16-byte aligned stacks under 1 GiB");
    // Bytes between the thread's rsp (or the agent stack's top) and the pushed rflags.
    const std::size_t above_flags = own_stack ? 8 : kRedZone;

    // T: block bytes above the GPRs; B = O - 264 - T (see the diagram in the header).
    const std::size_t block = spec.core_block_only ? core_end(off) : spec.layout->g_size();
    const std::size_t upper = round_up(block, 8) - kGprBytes;
    const std::size_t area = no_save ? 0 : round_up(save.size, kStateAlign);
    const auto i32 = [](std::size_t v) { return static_cast<std::int32_t>(v); };

    X86Writer a;
    std::optional<PadFront> front;
    if (spec.gate && !own_stack) {
        const auto completion = block_completion(*spec.layout);
        const InlineCore core{completion.pc_offset, completion.flags_offset,
                              completion.constants_offset, completion.constants_size,
                              core_end(off)};
        // The front restores the flags with sahf; the gate alone changes none.
        const InlineCollection* collection = spec.flags_by_sahf ? spec.inline_collection : nullptr;
        auto made = emit_pad_front(a, spec.gate, collection, spec.tracepoint_address, core);
        if (!made) { // the gate alone, which cannot fail
            a = X86Writer{};
            made = emit_pad_front(a, spec.gate, nullptr, spec.tracepoint_address, core);
        }
        if (made) front = std::move(*made);
    }
    AgentStackEntry entry;
    if (own_stack)
        entry = emit_agent_stack_entry(a, stacks);
    else
        lea_rsp(a, -i32(kRedZone)); // first: leaf code keeps live data below rsp
    a.byte(0x9c);                   // pushfq, before anything below changes a flag
    lea_rsp(a, -i32(upper));
    // The general registers at B = rsp but rsp, which the collector derives from the anchor
    // with the rest of the core (block_completion): the pad's stores are most of its cost.
    for (Reg r : {R15, R14, R13, R12, R11, R10, R9, R8})
        a.push(r);
    lea_rsp(a, -8);
    for (Reg r : {RBP, RDI, RSI, RDX, RCX, RBX, RAX})
        a.push(r);
    if (spec.stage_full_core) { // rax is free now
        if (own_stack) {
            a.load(RAX, Mem{RSP, i32(kGprBytes + upper + 8)}); // pushed first on the switch
        } else {
            a.rex(true, RAX, RSP); // lea rax, [rsp + 264 + T]: the rsp of the thread
            a.byte(0x8d);
            a.modrm_mem(RAX, Mem{RSP, i32(kGprBytes + upper + 8 + kRedZone)});
        }
        a.store(Mem{RSP, 7 * 8}, RAX);
        a.mov_imm(RAX, spec.tracepoint_address);
        a.store(Mem{RSP, i32(off.rip)}, RAX);
        a.load_sized(RAX, Mem{RSP, i32(kGprBytes + upper)}, 4); // the pushed rflags
        a.store32(Mem{RSP, i32(off.eflags)}, RAX);
        for (unsigned s = 0; s < 6; ++s) {
            a.byte(0x8c); // mov eax, sreg (zero-extends)
            a.byte(static_cast<std::uint8_t>(0xc0 | (s << 3)));
            a.store32(Mem{RSP, i32(off.segment[s])}, RAX);
        }
    }

    // State save area at A, 64-byte aligned below the block.
    a.mov(RBX, RSP);
    a.alu_imm(x86_writer::AND, RSP, -i32(kStateAlign));
    lea_rsp(a, -i32(area));
    if (no_save) {
    } else if (xsave) {
        // XSAVE writes only the XSTATE_BV bits it saves and never XCOMP_BV, and XRSTOR faults
        // on stray bits there: the header must start zeroed, not as stale stack bytes.
        a.mov_imm(RAX, 0);
        for (std::uint32_t q = fxsave::kSize; q < kXsaveHeaderEnd; q += 8)
            a.store(Mem{RSP, i32(q)}, RAX);
        load_xsave_mask(a, save.mask);
        op0f_rsp(a, true, 0xae, 4, 0); // xsave64 [rsp]
    } else {
        op0f_rsp(a, true, 0xae, 0, 0); // fxsave64 [rsp]
    }
    a.push(RBX);    // [A-8] = B, the only way back (the collector may break the ABI)
    lea_rsp(a, -8); // rsp = A-16: 16-byte aligned for the call
    // cld only where DF was set (almost never): a cld is 3 cycles even when DF is clear.
    a.byte(0xf6); // test byte [rbx + 128 + T + 1], 4: DF of the pushed rflags
    a.modrm_mem(0, Mem{RBX, i32(kGprBytes + upper + 1)});
    a.byte(0x04);
    a.byte(0x74), a.byte(0x01); // jz +1
    a.byte(0xfc);               // cld
    if (xsave && (save.mask & (1u << kAvx))) {
        a.byte(0xc5), a.byte(0xf8), a.byte(0x77); // vzeroupper
    }

    a.mov_imm(RDI, spec.argument);
    a.mov(RSI, RBX);
    a.mov(RDX, RSP);       // the frame: the return address goes at rdx - 8
    a.rex(true, RCX, RBX); // lea rcx, [rbx + 128 + T]: the anchor, the pushed rflags
    a.byte(0x8d);
    a.modrm_mem(RCX, Mem{RBX, i32(kGprBytes + upper)});
    a.mov_imm(RAX, spec.collector);
    a.call(RAX);
    const std::size_t return_offset = a.pos();

    // Restore: rsp is all the collector had to keep.
    a.load(RBX, Mem{RSP, 8});
    if (no_save) {
    } else if (xsave) {
        load_xsave_mask(a, save.mask);
        op0f_rsp(a, true, 0xae, 5, 16); // xrstor64 [rsp+16]
    } else {
        op0f_rsp(a, true, 0xae, 1, 16); // fxrstor64 [rsp+16]
    }
    a.mov(RSP, RBX);
    if (own_stack) { // the stack is free again for this thread's next hit
        a.rex(true, RAX, RSP);
        a.byte(0x8d); // lea rax, [rsp + 128 + T + 16]: the top
        a.modrm_mem(RAX, Mem{RSP, i32(kGprBytes + upper + 16)});
        fs_store(a, stacks.thread_slots + kStackTop, RAX);
    }
    if (spec.flags_by_sahf) {
        // rax is free until its pop. Nothing after this changes a flag: pops and lea only.
        a.load(RAX, Mem{RSP, i32(kGprBytes + upper)}); // the pushed rflags
        a.byte(0xfc);                                  // cld: DF as saved, below
        a.byte(0xf6), a.byte(0xc4), a.byte(0x04);      // test ah, 4 (DF)
        a.byte(0x74), a.byte(0x01);                    // jz +1
        a.byte(0xfd);                                  // std
        a.byte(0x88), a.byte(0xe0);                    // mov al, ah
        a.byte(0xc0), a.byte(0xe8), a.byte(0x03);      // shr al, 3
        a.byte(0x24), a.byte(0x01);                    // and al, 1 (OF)
        a.byte(0x04), a.byte(0x7f);                    // add al, 0x7f: OF = (al == 1)
        // ah = the low flags byte (rax held bits 8-15 in ah until now); no REX: ah.
        a.byte(0x8a), a.byte(0xa4), a.byte(0x24); // mov ah, [rsp + disp32]
        for (int i = 0; i < 4; ++i)
            a.byte(static_cast<std::uint8_t>(static_cast<std::uint32_t>(kGprBytes + upper) >>
                                             (8 * i)));
        a.byte(0x9e); // sahf: SF ZF AF PF CF
    }
    for (Reg r : {RAX, RBX, RCX, RDX, RSI, RDI, RBP})
        a.pop(r);
    lea_rsp(a, 8); // the rsp slot: rsp comes back by arithmetic
    for (Reg r : {R8, R9, R10, R11, R12, R13, R14, R15})
        a.pop(r);
    lea_rsp(a, i32(upper));
    if (spec.flags_by_sahf)
        lea_rsp(a, 8); // the rflags slot, already restored
    else
        a.byte(0x9d); // popfq
    if (own_stack)
        a.byte(0x5c); // pop rsp: the thread's, pushed first
    else
        lea_rsp(a, i32(kRedZone));

    JumpPad pad;
    pad.relocated_offset = a.pos();
    if (own_stack) patch_rel32(a.code(), entry.to_relocated, pad.relocated_offset);
    if (front) {
        for (std::size_t at : front->to_relocated)
            a.patch(at, pad.relocated_offset);
        pad.copy = front->copy;
    }
    const std::size_t displaced = spec.displaced_minimum ? spec.displaced_minimum : kJumpLength;
    auto relocated = relocate(spec.original_code, spec.tracepoint_address,
                              spec.pad_address + pad.relocated_offset, displaced);
    if (!relocated) return relocated.error();
    pad.code = std::move(a.code());
    pad.code.insert(pad.code.end(), relocated->code.begin(), relocated->code.end());
    pad.relocated = std::move(*relocated);
    if (pad.relocated.covered >= kJumpLength) {
        pad.patch.assign(jump->begin(), jump->end());
        pad.patch.resize(pad.relocated.covered, 0xcc);
    }
    pad.return_offset = return_offset;
    pad.stack_bytes = above_flags + 8 + upper + kGprBytes + (kStateAlign - 1) + area + 16 + 8;
    return pad;
}

} // namespace tpagent::arch::x86_64
