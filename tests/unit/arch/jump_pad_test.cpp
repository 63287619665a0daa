// The jump pad, run in Unicorn: code patched with the tracepoint jump must end in the same
// state as the original code (registers, flags, xmm, MXCSR, memory incl. the red zone), and
// the collector, a `ret` with a hook that checks what it was given and then clobbers every
// register, must see the thread's registers in the `g` block.
// Unicorn does not implement XSAVE (its CPUID lacks it: xsave is #UD), so the runs use the
// FXSAVE form; the XSAVE form is checked instruction by instruction with Zydis.
#include "arch/x86_64/jump_pad.hpp"
#include "tests/unit/arch/unicorn_x86_64.hpp"
#include "tests/unit/skip.hpp"
#include "tests/unit/test_bytes.hpp"

#include <catch2/catch.hpp>
#include <unicorn/unicorn.h>

#include <Zydis/Zydis.h>
#include <array>
#include <cstring>
#include <map>
#include <optional>
#include <sys/mman.h>
#include <string>
#include <vector>

namespace x86 = tpagent::arch::x86_64;
using namespace tpagent::test;

namespace {

constexpr std::uint64_t kCode = 0x10001000;          // the traced code
constexpr std::uint64_t kData = 0x10100000;          // its rip-relative data
constexpr std::uint64_t kPad = 0x70000100;           // 1.5 GiB above the code
constexpr std::uint64_t kCollector = 0x7f0000000000; // absolute: far from everything
constexpr std::uint64_t kStack = 0x30000000;
constexpr std::uint64_t kRegion = 0x10000;
constexpr std::uint64_t kArg = 0x5eed5eed12345678;
// Agent stacks: the thread pointer (fs base) and the pool.
constexpr std::uint64_t kThread = 0x40000000;
constexpr std::int32_t kThreadSlots = 0x40;
constexpr std::uint64_t kPool = 0x50000000;
constexpr std::uint64_t kGate = kPool + 0x800;     // the agent's tracing flag, for gated pads
constexpr std::uint32_t kAgentStackBytes = 0x4000; // 3 in the pool after its header

// es, cs, ss, ds, fs, gs: the pad's order.
constexpr std::array<int, 6> kSegments = {UC_X86_REG_ES, UC_X86_REG_CS, UC_X86_REG_SS,
                                          UC_X86_REG_DS, UC_X86_REG_FS, UC_X86_REG_GS};
constexpr const char* kSegmentNames[6] = {"es", "cs", "ss", "ds", "fs", "gs"};

constexpr std::uint64_t kCF = 0x1, kPF = 0x4, kAF = 0x10, kZF = 0x40, kSF = 0x80, kDF = 0x400,
                        kOF = 0x800;

template <typename T> T load(const Bytes& b, std::size_t at) {
    T v;
    std::memcpy(&v, b.data() + at, sizeof v);
    return v;
}

// Leaf code with a prologue, a rip-relative load, and red-zone reads and writes:
//   push rbp; mov rbp,rsp; mov rax,[rip+d]; add rax,rbx; mov rcx,[rbp-16]; mov [rbp-8],rax;
//   imul rcx,rdx; movups xmm0,[rbp-32]; pxor xmm1,xmm0; cmp rcx,rax; pop rbp; hlt
// Offsets 0, 1 and 4 start instructions; tracepoints go there.
Bytes traced_code() {
    return cat(
        {{0x55, 0x48, 0x89, 0xe5, 0x48, 0x8b, 0x05},
         le32(static_cast<std::int64_t>(kData + 0x40 - (kCode + 11))),
         {0x48, 0x01, 0xd8, 0x48, 0x8b, 0x4d, 0xf0, 0x48, 0x89, 0x45, 0xf8, 0x48, 0x0f, 0xaf,
          0xca, 0x0f, 0x10, 0x45, 0xe0, 0x66, 0x0f, 0xef, 0xc8, 0x48, 0x39, 0xc1, 0x5d, 0xf4}});
}

struct Machine {
    std::array<std::uint64_t, 16> gpr{};
    std::uint64_t rflags = 0;
    std::array<std::array<std::uint64_t, 2>, 16> xmm{};
    std::uint32_t mxcsr = 0;
    std::array<std::uint64_t, 6> segment{};
};

Machine read_machine(uc_engine* uc) {
    Machine m;
    for (int i = 0; i < 16; ++i)
        uc_reg_read(uc, kGprs[i], &m.gpr[i]);
    uc_reg_read(uc, UC_X86_REG_RFLAGS, &m.rflags);
    for (int i = 0; i < 16; ++i)
        uc_reg_read(uc, UC_X86_REG_XMM0 + i, m.xmm[i].data());
    uc_reg_read(uc, UC_X86_REG_MXCSR, &m.mxcsr);
    for (int i = 0; i < 6; ++i)
        uc_reg_read(uc, kSegments[i], &m.segment[i]);
    return m;
}

Bytes read_mem(uc_engine* uc, std::uint64_t at, std::size_t n) {
    Bytes b(n);
    uc_mem_read(uc, at, b.data(), n);
    return b;
}

struct Setup {
    std::uint64_t rsp = kStack + kRegion / 2;
    std::uint64_t rflags = 0x202;
    std::size_t tp_offset = 0; // tracepoint at kCode + tp_offset
    std::uint64_t probe = 0;   // where the flags are read the first time it is reached
    // Agent stacks: the thread's stack top slot and the pool's bytes handed out, at the start.
    std::uint64_t agent_stack_top = 0;
    std::uint64_t pool_used = 0;
    std::uint32_t tracing = 1; // at kGate
};

// What the collector hook saw; problems are collected, not thrown through Unicorn.
struct Observed {
    std::uint64_t tracepoint = 0;
    const x86::JumpPad* pad = nullptr;
    const x86::RegisterLayout* layout = nullptr;
    Machine at_tracepoint;
    Bytes red_zone_at_tracepoint;
    bool full_core = false;   // the pad stages the whole core: nothing to fill in
    bool agent_stack = false; // the pad runs on a stack from the pool
    int calls = 0;
    std::vector<std::string> problems;
};

void note(Observed& o, bool ok, const std::string& what) {
    if (!ok) o.problems.push_back(what);
}

void tracepoint_hook(uc_engine* uc, std::uint64_t, std::uint32_t, void* user) {
    auto& o = *static_cast<Observed*>(user);
    o.at_tracepoint = read_machine(uc);
    o.red_zone_at_tracepoint = read_mem(uc, o.at_tracepoint.gpr[7] - 128, 128);
}

void collector_hook(uc_engine* uc, std::uint64_t, std::uint32_t, void* user) {
    auto& o = *static_cast<Observed*>(user);
    ++o.calls;
    const Machine now = read_machine(uc);
    const Machine& at = o.at_tracepoint;
    const std::uint64_t rsp = now.gpr[7];
    const std::uint64_t block = now.gpr[4];  // rsi
    const std::uint64_t frame = now.gpr[3];  // rdx
    const std::uint64_t anchor = now.gpr[2]; // rcx
    const std::uint64_t state = frame + 16;  // the save area, above the restore pointer
    note(o, rsp % 16 == 8, "rsp not 16-aligned before the call: " + hex(rsp));
    note(o, frame == rsp + 8, "frame is not the rsp the pad called with: " + hex(frame));
    note(o, load<std::uint64_t>(read_mem(uc, rsp, 8), 0) == kPad + o.pad->return_offset,
         "return address");
    note(o, now.gpr[5] == kArg, "rdi is not the argument");
    note(o, state % 64 == 0, "state area not 64-aligned: " + hex(state));
    note(o, (now.rflags & kDF) == 0, "DF set at the call");
    const std::uint64_t orig_rsp = at.gpr[7];
    if (o.agent_stack) {
        const auto in_pool = [](std::uint64_t a) {
            return a >= kPool + tpagent::arch::kAgentStackHeaderBytes && a < kPool + kRegion;
        };
        note(o, in_pool(rsp) && in_pool(state) && in_pool(block) && in_pool(anchor + 8),
             "pad data outside the pool: rsp " + hex(rsp));
        note(o, load<std::uint64_t>(read_mem(uc, anchor + 8, 8), 0) == orig_rsp,
             "the thread's rsp is not above the anchor");
        note(o, load<std::uint64_t>(read_mem(uc, kThread + kThreadSlots + 8, 8), 0) == 0,
             "the stack is not marked taken");
    } else {
        note(o, state < orig_rsp - 128 && block < orig_rsp - 128 && anchor + 8 <= orig_rsp - 128,
             "pad data in the red zone");
        note(o, rsp >= orig_rsp - o.pad->stack_bytes, "stack use beyond stack_bytes");
    }
    note(o, read_mem(uc, orig_rsp - 128, 128) == o.red_zone_at_tracepoint, "red zone changed");

    // The g block: every GPR, rip, eflags and segment as the thread had them, once the
    // collector filled in what the pad leaves to it (block_completion), from the anchor, the
    // tracepoint address and the thread's segment selectors (cs, ss, ds, es, fs, gs).
    Bytes g = read_mem(uc, block, o.layout->g_size());
    const auto c = x86::block_completion(*o.layout);
    REQUIRE(c.pc_size == 8);
    REQUIRE(c.constants_size == 24);
    if (!o.full_core) {
        const std::uint64_t sp = anchor + static_cast<std::uint64_t>(c.sp_bias);
        std::memcpy(g.data() + c.pc_offset, &o.tracepoint, 8);
        std::memcpy(g.data() + c.sp_offset, &sp, 8);
        const Bytes saved_flags = read_mem(uc, anchor, c.flags_size);
        std::memcpy(g.data() + c.flags_offset, saved_flags.data(), c.flags_size);
        static constexpr int kConstantOrder[6] = {1, 2, 3, 0, 4, 5}; // es, cs, ss, ds, fs, gs
        for (int i = 0; i < 6; ++i) {
            const auto v = static_cast<std::uint32_t>(at.segment[kConstantOrder[i]]);
            std::memcpy(g.data() + c.constants_offset + 4 * i, &v, 4);
        }
    }
    const auto regs = o.layout->registers();
    for (int i = 0; i < 16; ++i) {
        const auto v = load<std::uint64_t>(g, regs[i].g_offset);
        note(o, v == at.gpr[i],
             std::string("block ") + kGprNames[i] + " " + hex(v) + " vs " + hex(at.gpr[i]));
    }
    const auto reg = [&](const char* name) { return regs[o.layout->find(name)]; };
    note(o, load<std::uint64_t>(g, reg("rip").g_offset) == o.tracepoint, "block rip");
    note(o, load<std::uint32_t>(g, reg("eflags").g_offset) == static_cast<std::uint32_t>(at.rflags),
         "block eflags " + hex(load<std::uint32_t>(g, reg("eflags").g_offset)) + " vs " +
             hex(at.rflags));
    for (int s = 0; s < 6; ++s)
        note(o, load<std::uint32_t>(g, reg(kSegmentNames[s]).g_offset) == at.segment[s],
             std::string("block ") + kSegmentNames[s]);

    // The FXSAVE area holds the vector state as it was.
    const Bytes fx = read_mem(uc, state, 512);
    for (int i = 0; i < 16; ++i)
        note(o,
             load<std::uint64_t>(fx, 160 + 16 * i) == at.xmm[i][0] &&
                 load<std::uint64_t>(fx, 168 + 16 * i) == at.xmm[i][1],
             "state xmm" + std::to_string(i));
    note(o, load<std::uint32_t>(fx, 24) == at.mxcsr, "state mxcsr");

    // A collector that keeps nothing but rsp: the pad must restore it all.
    for (int i = 0; i < 16; ++i) {
        if (i == 7) continue;
        const std::uint64_t junk = 0xdead000000000000ULL | (0x1111ULL * (i + 1));
        uc_reg_write(uc, kGprs[i], &junk);
    }
    const std::uint64_t flags = 0x202 | kCF | kPF | kZF | kSF | kDF | kOF;
    uc_reg_write(uc, UC_X86_REG_RFLAGS, &flags);
    for (int i = 0; i < 16; ++i) {
        const std::array<std::uint64_t, 2> junk = {0xbad0bad0bad0bad0ULL + i, ~0ULL - i};
        uc_reg_write(uc, UC_X86_REG_XMM0 + i, junk.data());
    }
    const std::uint64_t mxcsr = 0x7f80; // round toward zero
    uc_reg_write(uc, UC_X86_REG_MXCSR, &mxcsr);
    // The clobbering took (else "the state came back" would prove nothing).
    const Machine after = read_machine(uc);
    note(o,
         after.rflags == flags && after.mxcsr == mxcsr && after.gpr[0] >> 48 == 0xdead &&
             after.xmm[3][0] == 0xbad0bad0bad0bad3ULL,
         "clobbering did not take");
}

struct Outcome {
    uc_err err = UC_ERR_OK;
    std::uint64_t rip = 0;
    Machine m;
    Bytes stack, data;
    bool probed = false;
    std::uint64_t probe_rflags = 0;
    Bytes thread_slots, pool_header; // agent stacks
};

constexpr std::size_t kMaxSteps = 2000;

void probe_hook(uc_engine* uc, std::uint64_t, std::uint32_t, void* user) {
    auto* o = static_cast<Outcome*>(user);
    if (!o->probed) uc_reg_read(uc, UC_X86_REG_RFLAGS, &o->probe_rflags);
    o->probed = true;
}

// Runs from kCode to the final hlt, with the pad in place when `pad` is given.
Outcome run(const Setup& s, const x86::JumpPad* pad, Observed* seen) {
    uc_engine* uc = nullptr;
    REQUIRE(uc_open(UC_ARCH_X86, UC_MODE_64, &uc) == UC_ERR_OK);
    for (std::uint64_t base :
         {kCode & ~(kRegion - 1), kData, kStack, kPad & ~(kRegion - 1), kCollector, kThread, kPool})
        REQUIRE(uc_mem_map(uc, base, kRegion, UC_PROT_ALL) == UC_ERR_OK);
    uc_reg_write(uc, UC_X86_REG_FS_BASE, &kThread);
    uc_mem_write(uc, kThread + kThreadSlots + 8, &s.agent_stack_top, 8);
    uc_mem_write(uc, kPool, &s.pool_used, 8);
    uc_mem_write(uc, kGate, &s.tracing, 4);
    Bytes fill(kRegion);
    for (std::size_t i = 0; i < fill.size(); ++i)
        fill[i] = static_cast<std::uint8_t>(i * 7 + (i >> 8));
    uc_mem_write(uc, kData, fill.data(), fill.size());
    uc_mem_write(uc, kStack, fill.data(), fill.size());
    Bytes red_zone(128); // sentinels the code and the checks read back
    for (std::size_t i = 0; i < red_zone.size(); ++i)
        red_zone[i] = static_cast<std::uint8_t>(0xa0 ^ i);
    uc_mem_write(uc, s.rsp - 128, red_zone.data(), red_zone.size());

    Bytes code = traced_code();
    if (pad) std::copy(pad->patch.begin(), pad->patch.end(), code.begin() + s.tp_offset);
    uc_mem_write(uc, kCode, code.data(), code.size());
    if (pad) uc_mem_write(uc, kPad, pad->code.data(), pad->code.size());
    const std::uint8_t ret = 0xc3;
    uc_mem_write(uc, kCollector, &ret, 1);

    for (int i = 0; i < 16; ++i) {
        const std::uint64_t v = i == 7 ? s.rsp : 0x0101010101010101ULL * (i + 1) + i;
        uc_reg_write(uc, kGprs[i], &v);
    }
    uc_reg_write(uc, UC_X86_REG_RFLAGS, &s.rflags);
    for (int i = 0; i < 16; ++i) {
        const std::array<std::uint64_t, 2> v = {0x0123456789abcdefULL * (i + 1), ~0ULL * i};
        uc_reg_write(uc, UC_X86_REG_XMM0 + i, v.data());
    }
    const std::uint64_t mxcsr = 0x1f80;
    uc_reg_write(uc, UC_X86_REG_MXCSR, &mxcsr);

    // CR4.OSFXSR, as Linux sets it: without it FXSAVE/FXRSTOR leave out xmm and MXCSR.
    std::uint64_t cr4 = 0;
    uc_reg_read(uc, UC_X86_REG_CR4, &cr4);
    cr4 |= 1u << 9;
    uc_reg_write(uc, UC_X86_REG_CR4, &cr4);

    Outcome o;
    uc_hook h1, h2, h3;
    // The flags where the code goes on after the displaced instructions: the code after them
    // may overwrite them, so the final state alone would not show a wrong restore.
    if (s.probe)
        uc_hook_add(uc, &h3, UC_HOOK_CODE, reinterpret_cast<void*>(probe_hook), &o, s.probe,
                    s.probe);
    if (seen) {
        const std::uint64_t tp = kCode + s.tp_offset;
        uc_hook_add(uc, &h1, UC_HOOK_CODE, reinterpret_cast<void*>(tracepoint_hook), seen, tp, tp);
        uc_hook_add(uc, &h2, UC_HOOK_CODE, reinterpret_cast<void*>(collector_hook), seen,
                    kCollector, kCollector);
    }
    o.err = uc_emu_start(uc, kCode, kCode + code.size() - 1, 0, kMaxSteps);
    uc_reg_read(uc, UC_X86_REG_RIP, &o.rip);
    o.m = read_machine(uc);
    o.stack = read_mem(uc, kStack, kRegion);
    o.data = read_mem(uc, kData, kRegion);
    o.thread_slots = read_mem(uc, kThread + kThreadSlots, 32);
    o.pool_header = read_mem(uc, kPool, 16);
    uc_close(uc);
    return o;
}

// The first difference between the original run and the pad run, or "". The pad may write
// only its own scratch space: [rsp - stack_bytes, rsp - 128) at the tracepoint.
std::string difference(const Outcome& a, const Outcome& b, std::uint64_t scratch_lo,
                       std::uint64_t scratch_hi) {
    if (a.err != b.err)
        return std::string("error ") + uc_strerror(a.err) + " vs " + uc_strerror(b.err);
    if (a.rip != b.rip) return "rip " + hex(a.rip) + " vs " + hex(b.rip);
    for (int i = 0; i < 16; ++i)
        if (a.m.gpr[i] != b.m.gpr[i])
            return std::string(kGprNames[i]) + " " + hex(a.m.gpr[i]) + " vs " + hex(b.m.gpr[i]);
    if (a.m.rflags != b.m.rflags) return "rflags " + hex(a.m.rflags) + " vs " + hex(b.m.rflags);
    if (a.probed != b.probed || a.probe_rflags != b.probe_rflags)
        return "rflags after the displaced code " + hex(a.probe_rflags) + " vs " +
               hex(b.probe_rflags);
    for (int i = 0; i < 16; ++i)
        if (a.m.xmm[i] != b.m.xmm[i]) return "xmm" + std::to_string(i);
    if (a.m.mxcsr != b.m.mxcsr) return "mxcsr " + hex(a.m.mxcsr) + " vs " + hex(b.m.mxcsr);
    if (a.data != b.data) return "data memory";
    for (std::size_t k = 0; k < a.stack.size(); ++k) {
        const std::uint64_t addr = kStack + k;
        if (a.stack[k] != b.stack[k] && !(addr >= scratch_lo && addr < scratch_hi))
            return "stack memory at " + hex(addr);
    }
    return "";
}

const x86::RegisterLayout& sse_layout() {
    static const x86::RegisterLayout layout(x86::cpu_features_for_xcr0(3));
    return layout;
}

x86::JumpPadSpec fxsave_spec(const Bytes& code, std::size_t tp_offset) {
    x86::JumpPadSpec spec;
    spec.pad_address = kPad;
    spec.tracepoint_address = kCode + tp_offset;
    spec.collector = kCollector;
    spec.argument = kArg;
    spec.original_code = std::span(code).subspan(tp_offset);
    spec.layout = &sse_layout();
    spec.state_save = {x86::StateSave::Kind::Fxsave, 0, 512};
    return spec;
}

// Runs the original code and the patched code from `s`; returns the difference ("" if none).
std::string compare_runs(const Setup& s, const x86::JumpPad& pad, Observed& seen) {
    seen.tracepoint = kCode + s.tp_offset;
    seen.pad = &pad;
    seen.layout = &sse_layout();
    Setup probed = s;
    probed.probe = kCode + s.tp_offset + pad.relocated.covered;
    const Outcome direct = run(probed, nullptr, nullptr);
    const Outcome padded = run(probed, &pad, &seen);
    INFO("direct run: " << uc_strerror(direct.err) << " at " << hex(direct.rip));
    CHECK(direct.err == UC_ERR_OK);
    CHECK(direct.rip == kCode + traced_code().size() - 1);
    const std::uint64_t rsp = seen.at_tracepoint.gpr[7];
    return difference(direct, padded, rsp - pad.stack_bytes, rsp - 128);
}

std::vector<ZydisMnemonic> mnemonics(const Bytes& code, std::size_t end) {
    ZydisDecoder d;
    ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    std::vector<ZydisMnemonic> out;
    for (std::size_t off = 0; off < end;) {
        ZydisDecodedInstruction insn;
        if (ZYAN_FAILED(
                ZydisDecoderDecodeInstruction(&d, nullptr, code.data() + off, end - off, &insn)))
            return {};
        out.push_back(insn.mnemonic);
        off += insn.length;
    }
    return out;
}

} // namespace

TEST_CASE("encode_jump writes jmp rel32 within ±2 GiB", "[jump_pad]") {
    auto j = x86::encode_jump(0x1000, 0x2000);
    REQUIRE(j.ok());
    CHECK(*j == std::array<std::uint8_t, 5>{0xe9, 0xfb, 0x0f, 0x00, 0x00});
    auto back = x86::encode_jump(0x2000, 0x1000);
    REQUIRE(back.ok());
    CHECK(*back == std::array<std::uint8_t, 5>{0xe9, 0xfb, 0xef, 0xff, 0xff});
    CHECK(x86::encode_jump(0x10000000, 0x10000000 + 0x7fffffffULL + 5).ok());
    auto far = x86::encode_jump(0x10000000, 0x10000000 + 0x80000000ULL + 5);
    REQUIRE_FALSE(far.ok());
    CHECK(far.error().code == tpagent::ErrorCode::Unsupported);
    CHECK_FALSE(x86::encode_jump(0x700000000000, 0x10000000).ok());
    CHECK(x86::min_insn_len() == 5);
}

TEST_CASE("the pad runs the collector and leaves no trace", "[jump_pad]") {
    const Bytes code = traced_code();
    // Tracepoints at the prologue (covers push rbp; mov rbp,rsp; the rip-relative mov), one
    // byte in (mov rbp,rsp; mov ...), and at the rip-relative mov alone.
    const std::size_t tp_offset = GENERATE(0u, 1u, 4u);
    // Every rsp alignment mod 64 class an 8-aligned rsp has, so the area alignment varies.
    const std::uint64_t rsp_adjust = GENERATE(0u, 8u, 16u, 24u, 40u, 56u);
    const std::uint64_t rflags =
        GENERATE(0x202u, 0x202u | kCF | kPF | kAF | kZF | kSF | kOF, 0x202u | kDF | kCF,
                 0x202u | kOF, 0x202u | kDF | kZF | kOF);
    const bool sahf = GENERATE(false, true);
    const bool full = GENERATE(false, true);
    // Gated (tracing on): on a CPU without lahf/sahf too, the gate alone before the pad.
    const bool gated = GENERATE(false, true);
    auto spec = fxsave_spec(code, tp_offset);
    spec.flags_by_sahf = sahf;
    spec.stage_full_core = full;
    spec.gate = gated ? kGate : 0;
    auto pad = x86::emit_jump_pad(spec);
    REQUIRE(pad.ok());
    CHECK(pad->patch.size() == pad->relocated.covered);
    CHECK(pad->patch[0] == 0xe9);
    CHECK(pad->relocated.covered >= 5);

    Setup s;
    s.rsp = kStack + kRegion / 2 - rsp_adjust;
    s.rflags = rflags;
    s.tp_offset = tp_offset;
    Observed seen;
    seen.full_core = full;
    INFO("tracepoint +" << tp_offset << " rsp " << hex(s.rsp) << " rflags " << hex(rflags)
                        << (sahf ? " sahf" : " popfq") << (full ? " full core" : "")
                        << (gated ? " gated" : ""));
    CHECK(compare_runs(s, *pad, seen) == "");
    CHECK(seen.calls == 1);
    for (const auto& p : seen.problems)
        FAIL_CHECK(p);
}

TEST_CASE("a gated pad with tracing off runs only the displaced instructions", "[jump_pad]") {
    const Bytes code = traced_code();
    const std::size_t tp_offset = GENERATE(0u, 1u, 4u);
    const std::uint64_t rflags = GENERATE(0x202u, 0x202u | kCF | kZF | kOF, 0x202u | kDF | kSF);
    const bool sahf = GENERATE(false, true);
    const std::uint32_t tracing = GENERATE(0u, 2u); // only 1 is on
    auto spec = fxsave_spec(code, tp_offset);
    spec.flags_by_sahf = sahf;
    spec.gate = kGate;
    auto pad = x86::emit_jump_pad(spec);
    REQUIRE(pad.ok());
    Setup s;
    s.rflags = rflags;
    s.tp_offset = tp_offset;
    s.tracing = tracing;
    Observed seen;
    INFO("tracepoint +" << tp_offset << " rflags " << hex(rflags) << (sahf ? " sahf" : " popfq")
                        << " tracing " << tracing);
    CHECK(compare_runs(s, *pad, seen) == "");
    CHECK(seen.calls == 0);
}

namespace {

x86::JumpPadSpec agent_stack_spec(const Bytes& code, std::size_t tp_offset) {
    auto spec = fxsave_spec(code, tp_offset);
    spec.stage_full_core = true;
    spec.flags_by_sahf = true;
    spec.agent_stacks = {kPool, kRegion, kAgentStackBytes, kThreadSlots};
    return spec;
}

// The original code and the patched one from `s`: not one byte of the thread's stack may
// change (no scratch space there). The outcome of the patched run, and the difference.
std::pair<Outcome, std::string> compare_agent_runs(const Setup& s, const x86::JumpPad& pad,
                                                   Observed& seen) {
    seen.tracepoint = kCode + s.tp_offset;
    seen.pad = &pad;
    seen.layout = &sse_layout();
    seen.full_core = true;
    seen.agent_stack = true;
    Setup probed = s;
    probed.probe = kCode + s.tp_offset + pad.relocated.covered;
    const Outcome direct = run(probed, nullptr, nullptr);
    Outcome padded = run(probed, &pad, &seen);
    std::string diff = difference(direct, padded, 0, 0);
    return {std::move(padded), std::move(diff)};
}

} // namespace

TEST_CASE("a pad on an agent stack leaves the thread's stack untouched", "[jump_pad]") {
    const Bytes code = traced_code();
    const std::size_t tp_offset = GENERATE(0u, 1u, 4u);
    const std::uint64_t rflags =
        GENERATE(0x202u, 0x202u | kCF | kPF | kAF | kZF | kSF | kOF, 0x202u | kDF | kCF,
                 0x202u | kOF, 0x202u | kDF | kZF | kOF);
    // 0: the thread's first hit takes a stack; else the one it took before.
    const std::uint64_t top =
        GENERATE(std::uint64_t{0}, kPool + tpagent::arch::kAgentStackHeaderBytes +
                                       3 * std::uint64_t{kAgentStackBytes});
    auto pad = x86::emit_jump_pad(agent_stack_spec(code, tp_offset));
    REQUIRE(pad.ok());
    Setup s;
    s.tp_offset = tp_offset;
    s.rflags = rflags;
    s.agent_stack_top = top;
    s.pool_used = 2 * kAgentStackBytes; // stacks 0 and 1 are other threads'
    Observed seen;
    INFO("tracepoint +" << tp_offset << " rflags " << hex(rflags) << " top " << hex(top));
    const auto [outcome, diff] = compare_agent_runs(s, *pad, seen);
    CHECK(diff == "");
    CHECK(seen.calls == 1);
    for (const auto& p : seen.problems)
        FAIL_CHECK(p);
    // The thread keeps its stack (stack 2 when it took one), free again.
    const std::uint64_t expected_top =
        kPool + tpagent::arch::kAgentStackHeaderBytes + 3 * std::uint64_t{kAgentStackBytes};
    CHECK(load<std::uint64_t>(outcome.thread_slots, 8) == expected_top);
    CHECK(load<std::uint64_t>(outcome.pool_header, 0) ==
          (top ? 2 : 3) * std::uint64_t{kAgentStackBytes});
    CHECK(load<std::uint64_t>(outcome.pool_header, 8) == 0);
}

TEST_CASE("a hit that finds the agent stacks used up runs the displaced code, counted",
          "[jump_pad]") {
    const Bytes code = traced_code();
    const std::size_t tp_offset = GENERATE(0u, 4u);
    const std::uint64_t rflags = GENERATE(0x202u, 0x202u | kCF | kZF | kOF | kDF);
    auto pad = x86::emit_jump_pad(agent_stack_spec(code, tp_offset));
    REQUIRE(pad.ok());
    Setup s;
    s.tp_offset = tp_offset;
    s.rflags = rflags;
    s.pool_used = 3 * kAgentStackBytes; // all three taken
    Observed seen;
    const auto [outcome, diff] = compare_agent_runs(s, *pad, seen);
    CHECK(diff == "");
    CHECK(seen.calls == 0);
    CHECK(load<std::uint64_t>(outcome.thread_slots, 8) == 0);
    CHECK(load<std::uint64_t>(outcome.pool_header, 8) == 1);
}

TEST_CASE("pads on agent stacks: what emit_jump_pad needs", "[jump_pad]") {
    const Bytes code = traced_code();
    auto spec = agent_stack_spec(code, 0);
    spec.stage_full_core = false; // the collector would derive rsp from the agent stack
    CHECK_FALSE(x86::emit_jump_pad(spec).ok());
    spec = agent_stack_spec(code, 0);
    spec.flags_by_sahf = false;
    CHECK_FALSE(x86::emit_jump_pad(spec).ok());
    spec = agent_stack_spec(code, 0);
    spec.agent_stacks.pool_bytes = tpagent::arch::kAgentStackHeaderBytes; // no room for one stack
    CHECK_FALSE(x86::emit_jump_pad(spec).ok());
    spec = agent_stack_spec(code, 0);
    auto pad = x86::emit_jump_pad(spec);
    REQUIRE(pad.ok());
    // The stack is switched before the first push: nothing goes to the thread's stack.
    const auto m = mnemonics(pad->code, pad->relocated_offset);
    REQUIRE_FALSE(m.empty());
    CHECK(m[0] == ZYDIS_MNEMONIC_MOV);
    CHECK(m[2] == ZYDIS_MNEMONIC_JRCXZ);
    CHECK(std::find(m.begin(), m.end(), ZYDIS_MNEMONIC_XCHG) <
          std::find(m.begin(), m.end(), ZYDIS_MNEMONIC_PUSH));
}

TEST_CASE("the harness notices a pad that writes into the red zone", "[jump_pad]") {
    const Bytes code = traced_code();
    auto pad = x86::emit_jump_pad(fxsave_spec(code, 4));
    REQUIRE(pad.ok());
    // The first instruction is lea rsp,[rsp-128]; without it the pushes land in the red zone.
    REQUIRE(pad->code[0] == 0x48);
    REQUIRE(pad->code[1] == 0x8d);
    x86::JumpPad broken = *pad;
    const std::uint8_t nop5[] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
    std::copy(std::begin(nop5), std::end(nop5), broken.code.begin());
    // Ending where the original lea would also restore rsp - 128 would break rsp; the red
    // zone check is what must fire.
    Setup s;
    s.tp_offset = 4;
    Observed seen;
    compare_runs(s, broken, seen);
    bool red_zone_noticed = false;
    for (const auto& p : seen.problems)
        red_zone_noticed |= p == "red zone changed" || p == "pad data in the red zone";
    CHECK(red_zone_noticed);
}

// Offset and length of the first `mn` in the pad's own code.
std::pair<std::size_t, std::size_t> locate(const x86::JumpPad& pad, ZydisMnemonic mn) {
    ZydisDecoder d;
    ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    for (std::size_t off = 0; off < pad.relocated_offset;) {
        ZydisDecodedInstruction insn;
        if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(&d, nullptr, pad.code.data() + off,
                                                      pad.relocated_offset - off, &insn)))
            break;
        if (insn.mnemonic == mn) return {off, insn.length};
        off += insn.length;
    }
    return {0, 0};
}

TEST_CASE("the harness notices a pad that does not restore", "[jump_pad]") {
    const Bytes code = traced_code();
    auto pad = x86::emit_jump_pad(fxsave_spec(code, 0));
    REQUIRE(pad.ok());
    // The collector hook clobbers registers; dropping one restore must show in the outcome.
    Observed seen;
    auto without = [&](ZydisMnemonic mn, std::uint64_t rflags = 0x202) {
        x86::JumpPad broken = *pad;
        const auto [off, len] = locate(broken, mn);
        REQUIRE(len != 0);
        std::fill_n(broken.code.begin() + off, len, 0x90);
        Setup s;
        s.rflags = rflags;
        seen = Observed{};
        return compare_runs(s, broken, seen);
    };
    CHECK(without(ZYDIS_MNEMONIC_FXRSTOR64).rfind("xmm", 0) == 0);
    CHECK(without(ZYDIS_MNEMONIC_POP).rfind("rax", 0) == 0);
    without(ZYDIS_MNEMONIC_CLD, 0x202 | kDF);
    CHECK(std::count(seen.problems.begin(), seen.problems.end(), "DF set at the call") == 1);
}

TEST_CASE("the pad's layout", "[jump_pad]") {
    const Bytes code = traced_code();
    auto pad = x86::emit_jump_pad(fxsave_spec(code, 0));
    REQUIRE(pad.ok());
    CHECK(pad->relocated_offset + pad->relocated.code.size() == pad->code.size());
    CHECK(Bytes(pad->code.begin() + pad->relocated_offset, pad->code.end()) == pad->relocated.code);
    CHECK(pad->code[pad->return_offset - 2] == 0xff); // call rax ends there
    CHECK(pad->code[pad->return_offset - 1] == 0xd0);
    // lea rsp,[rsp-128] first, pushfq second.
    CHECK(Bytes(pad->code.begin(), pad->code.begin() + 6) ==
          Bytes{0x48, 0x8d, 0x64, 0x24, 0x80, 0x9c});
    const auto m = mnemonics(pad->code, pad->relocated_offset);
    REQUIRE_FALSE(m.empty());
    CHECK(std::count(m.begin(), m.end(), ZYDIS_MNEMONIC_FXSAVE64) == 1);
    CHECK(std::count(m.begin(), m.end(), ZYDIS_MNEMONIC_FXRSTOR64) == 1);
    CHECK(std::count(m.begin(), m.end(), ZYDIS_MNEMONIC_SYSCALL) == 0);
    CHECK(std::count(m.begin(), m.end(), ZYDIS_MNEMONIC_CLD) == 1);
    CHECK(std::count(m.begin(), m.end(), ZYDIS_MNEMONIC_VZEROUPPER) == 0);
}

TEST_CASE("the XSAVE form: mask in edx:eax, header zeroed, area aligned", "[jump_pad]") {
    const Bytes code = traced_code();
    // AVX and AVX-512 enabled: vzeroupper before the call.
    const std::uint64_t mask = 0xe7; // x87 SSE AVX opmask ZMM_Hi256 Hi16_ZMM
    const auto cpu = x86::cpu_features_for_xcr0(mask);
    const x86::RegisterLayout layout(cpu);
    auto spec = fxsave_spec(code, 0);
    spec.layout = &layout;
    spec.state_save = x86::state_save_for(cpu, true);
    CHECK(spec.state_save.kind == x86::StateSave::Kind::Xsave);
    CHECK(spec.state_save.mask == mask);
    CHECK(spec.state_save.size == 2688);
    auto pad = x86::emit_jump_pad(spec);
    REQUIRE(pad.ok());

    ZydisDecoder d;
    ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
    struct Insn {
        ZydisDecodedInstruction i;
        std::array<ZydisDecodedOperand, ZYDIS_MAX_OPERAND_COUNT> ops;
    };
    std::vector<Insn> insns;
    for (std::size_t off = 0; off < pad->relocated_offset;) {
        Insn x;
        REQUIRE(ZYAN_SUCCESS(ZydisDecoderDecodeFull(
            &d, pad->code.data() + off, pad->relocated_offset - off, &x.i, x.ops.data())));
        insns.push_back(x);
        off += x.i.length;
    }
    auto find = [&](ZydisMnemonic mn, std::size_t from = 0) {
        for (std::size_t k = from; k < insns.size(); ++k)
            if (insns[k].i.mnemonic == mn) return k;
        return insns.size();
    };
    auto imm_to = [&](std::size_t k, ZydisRegister reg) -> std::optional<std::uint64_t> {
        const auto& x = insns[k];
        if (x.ops[0].reg.value != reg) return std::nullopt;
        if (x.i.mnemonic == ZYDIS_MNEMONIC_MOV && x.ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
            return x.ops[1].imm.value.u;
        if (x.i.mnemonic == ZYDIS_MNEMONIC_XOR && x.ops[1].reg.value == reg) return 0;
        return std::nullopt;
    };
    // and rsp, -64 then the area: xsave64 [rsp] right after eax/edx = the mask.
    const std::size_t align = find(ZYDIS_MNEMONIC_AND);
    REQUIRE(align < insns.size());
    CHECK(insns[align].ops[0].reg.value == ZYDIS_REGISTER_RSP);
    CHECK(insns[align].ops[1].imm.value.s == -64);
    const std::size_t save = find(ZYDIS_MNEMONIC_XSAVE64);
    REQUIRE(save < insns.size());
    REQUIRE(save >= 2);
    CHECK(imm_to(save - 2, ZYDIS_REGISTER_EAX) == (mask & 0xffffffff));
    CHECK(imm_to(save - 1, ZYDIS_REGISTER_EDX) == (mask >> 32));
    CHECK(insns[save].ops[0].mem.base == ZYDIS_REGISTER_RSP);
    CHECK(insns[save].ops[0].mem.disp.value == 0);
    // Between the alignment and the save: only rsp lowered by a multiple of 64, and the 64
    // header bytes at [rsp+512, rsp+576) zeroed.
    std::vector<std::int64_t> zeroed;
    for (std::size_t k = align + 1; k < save - 2; ++k) {
        const auto& x = insns[k];
        if (x.i.mnemonic == ZYDIS_MNEMONIC_LEA) {
            CHECK(x.ops[0].reg.value == ZYDIS_REGISTER_RSP);
            CHECK(x.ops[1].mem.disp.value % 64 == 0);
            CHECK(-x.ops[1].mem.disp.value >= 2688);
        } else if (x.i.mnemonic == ZYDIS_MNEMONIC_MOV &&
                   x.ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY) {
            CHECK(x.ops[0].mem.base == ZYDIS_REGISTER_RSP);
            CHECK(x.ops[1].reg.value == ZYDIS_REGISTER_RAX);
            zeroed.push_back(x.ops[0].mem.disp.value);
        } else {
            CHECK(imm_to(k, ZYDIS_REGISTER_EAX) == 0u);
        }
    }
    CHECK(zeroed == std::vector<std::int64_t>{512, 520, 528, 536, 544, 552, 560, 568});
    // vzeroupper and cld before the call; xrstor64 [rsp+16] with the same mask after it.
    const std::size_t call = find(ZYDIS_MNEMONIC_CALL);
    CHECK(find(ZYDIS_MNEMONIC_VZEROUPPER) < call);
    CHECK(find(ZYDIS_MNEMONIC_CLD) < call);
    const std::size_t restore = find(ZYDIS_MNEMONIC_XRSTOR64);
    REQUIRE(restore < insns.size());
    CHECK(restore > call);
    CHECK(imm_to(restore - 2, ZYDIS_REGISTER_EAX) == (mask & 0xffffffff));
    CHECK(imm_to(restore - 1, ZYDIS_REGISTER_EDX) == (mask >> 32));
    CHECK(insns[restore].ops[0].mem.base == ZYDIS_REGISTER_RSP);
    CHECK(insns[restore].ops[0].mem.disp.value == 16);
    CHECK(find(ZYDIS_MNEMONIC_FXSAVE64) == insns.size());
    // The collector's third argument is the rsp it is called with: the area is 16 above it.
    bool rdx_is_rsp = false;
    for (std::size_t k = save; k < call; ++k)
        rdx_is_rsp |= insns[k].i.mnemonic == ZYDIS_MNEMONIC_MOV &&
                      insns[k].ops[0].reg.value == ZYDIS_REGISTER_RDX &&
                      insns[k].ops[1].reg.value == ZYDIS_REGISTER_RSP;
    CHECK(rdx_is_rsp);
    CHECK(pad->stack_bytes >= 128 + 8 + (layout.g_size() + 7) / 8 * 8 + 2688 + 16);
}

TEST_CASE("the XSAVE mask leaves out what the agent does not know", "[jump_pad]") {
    x86::CpuFeatures cpu = x86::cpu_features_for_xcr0(3);
    cpu.xcr0 |= (1u << 17) | (1u << 18); // AMX tiles: not saved
    const auto s = x86::state_save_for(cpu, true);
    CHECK(s.mask == 3);
    CHECK(s.size == 576); // legacy area and the header
    const auto fx = x86::state_save_for(cpu, false);
    CHECK(fx.kind == x86::StateSave::Kind::Fxsave);
    CHECK(fx.size == 512);
}

TEST_CASE("emit_jump_pad refuses what it cannot do", "[jump_pad]") {
    const Bytes code = traced_code();
    auto spec = fxsave_spec(code, 0);
    spec.pad_address = 0x700000000000; // beyond rel32 of the tracepoint
    CHECK(x86::emit_jump_pad(spec).error().code == tpagent::ErrorCode::Unsupported);
    spec = fxsave_spec(code, 0);
    spec.layout = nullptr;
    CHECK_FALSE(x86::emit_jump_pad(spec).ok());
    spec = fxsave_spec(code, 0);
    spec.state_save = {x86::StateSave::Kind::Xsave, 3, 512}; // no room for the header
    CHECK_FALSE(x86::emit_jump_pad(spec).ok());
    spec = fxsave_spec(code, 0);
    const Bytes short_code = {0x90, 0x90}; // fewer bytes than the jump
    spec.original_code = short_code;
    CHECK_FALSE(x86::emit_jump_pad(spec).ok());
}

// The XSAVE form on this CPU: a small function patched with the pad's jump is called natively
// with known xmm (and ymm upper) contents and r8-r11; the collector checks what it was given
// and clobbers all of them; the caller must get them back.
namespace {

struct NativeSeen {
    std::uint64_t tracepoint = 0;
    std::uint64_t arg = 0;
    std::uint64_t mask = 0;
    int calls = 0;
    std::vector<std::string> problems;
    Bytes block;
    Bytes state;
    std::uint64_t sp = 0; // the rsp at the tracepoint, from the anchor
    const x86::RegisterLayout* layout = nullptr;
};
NativeSeen g_native;

extern "C" void native_collector(std::uint64_t arg, std::uint8_t* block, std::uint64_t frame,
                                 const std::uint8_t* anchor) {
    NativeSeen& n = g_native;
    ++n.calls;
    if (arg != kArg) n.problems.push_back("argument");
    const auto* state = reinterpret_cast<const std::uint8_t*>(frame + 16);
    if (reinterpret_cast<std::uintptr_t>(state) % 64 != 0) n.problems.push_back("state alignment");
    if (load<std::uint64_t>(Bytes(reinterpret_cast<const std::uint8_t*>(frame - 8),
                                  reinterpret_cast<const std::uint8_t*>(frame)),
                            0) != reinterpret_cast<std::uint64_t>(__builtin_return_address(0)))
        n.problems.push_back("frame - 8 is not the return address");
    n.block.assign(block, block + n.layout->g_size());
    n.sp = reinterpret_cast<std::uint64_t>(anchor) +
           static_cast<std::uint64_t>(x86::block_completion(*n.layout).sp_bias);
    n.state.assign(state, state + x86::kXsaveHeaderEnd);
    // Clobber what the ABI lets a callee clobber.
    __asm__ volatile("pcmpeqd %%xmm0, %%xmm0\n\t"
                     "pcmpeqd %%xmm7, %%xmm7\n\t"
                     "pcmpeqd %%xmm15, %%xmm15\n\t"
                     "mov $-1, %%r8\n\t"
                     "mov $-1, %%r11\n\t" ::
                         : "xmm0", "xmm7", "xmm15", "r8", "r11");
    if (n.mask & (1u << x86::kAvx))
        __asm__ volatile("vpcmpeqd %%ymm1, %%ymm1, %%ymm1\n\t"
                         "vpcmpeqd %%ymm8, %%ymm8, %%ymm8\n\t"
                         "vzeroupper" ::
                             : "xmm1", "xmm8");
}

// Calls fn(arg) with xmm0-15 (ymm0-15 when `avx`) and r8-r11 loaded from `in`, stores them to
// `out` afterwards. 128 bytes are skipped so the call cannot touch a red zone of this frame.
std::uint64_t call_with_vectors(std::uint64_t fn, std::uint64_t arg, const std::uint8_t* in,
                                std::uint8_t* out, bool avx) {
    std::uint64_t ret;
#define TP_EACH16(M)                                                                               \
    M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)
#define TP_LOADX(i) "movdqu " #i "*32(%[in]), %%xmm" #i "\n\t"
#define TP_STOREX(i) "movdqu %%xmm" #i ", " #i "*32(%[out])\n\t"
#define TP_LOADY(i) "vmovdqu " #i "*32(%[in]), %%ymm" #i "\n\t"
#define TP_STOREY(i) "vmovdqu %%ymm" #i ", " #i "*32(%[out])\n\t"
#define TP_GPRS_IN                                                                                 \
    "mov 512(%[in]), %%r8\n\tmov 520(%[in]), %%r9\n\tmov 528(%[in]), %%r10\n\t"                    \
    "mov 536(%[in]), %%r11\n\t"
#define TP_GPRS_OUT                                                                                \
    "mov %%r8, 512(%[out])\n\tmov %%r9, 520(%[out])\n\tmov %%r10, 528(%[out])\n\t"                 \
    "mov %%r11, 536(%[out])\n\t"
#define TP_CLOBBERS                                                                                \
    "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", \
        "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",      \
        "memory", "cc"
    if (avx) {
        __asm__ volatile(TP_EACH16(TP_LOADY) TP_GPRS_IN "sub $128, %%rsp\n\t"
                                                        "call *%[fn]\n\t"
                                                        "add $128, %%rsp\n\t" TP_EACH16(TP_STOREY)
                                                            TP_GPRS_OUT "vzeroupper\n\t"
                         : "=a"(ret), "+D"(arg)
                         : [fn] "r"(fn), [in] "r"(in), [out] "r"(out)
                         : TP_CLOBBERS);
    } else {
        __asm__ volatile(TP_EACH16(TP_LOADX) TP_GPRS_IN "sub $128, %%rsp\n\t"
                                                        "call *%[fn]\n\t"
                                                        "add $128, %%rsp\n\t" TP_EACH16(TP_STOREX)
                                                            TP_GPRS_OUT
                         : "=a"(ret), "+D"(arg)
                         : [fn] "r"(fn), [in] "r"(in), [out] "r"(out)
                         : TP_CLOBBERS);
    }
    return ret;
}

} // namespace

TEST_CASE("the XSAVE pad runs natively and restores vector state", "[jump_pad][native]") {
    const x86::StateSave save = x86::detect_state_save();
    if (save.kind != x86::StateSave::Kind::Xsave) {
        tpagent::test::skip("no XSAVE on this machine");
        return;
    }
    const x86::RegisterLayout layout(x86::detect_cpu_features());
    const bool avx = save.mask & (1u << x86::kAvx);

    constexpr std::size_t kSize = 0x2000;
    void* mem = mmap(nullptr, kSize, PROT_READ | PROT_WRITE | PROT_EXEC,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(mem != MAP_FAILED);
    auto* base = static_cast<std::uint8_t*>(mem);
    const auto addr = reinterpret_cast<std::uint64_t>(base);
    // fn: push rbp; mov rbp,rsp; mov rax,[rip+d]; add rax,rdi; pop rbp; ret
    const std::uint64_t data = addr + 0x800;
    const Bytes fn = cat({{0x55, 0x48, 0x89, 0xe5, 0x48, 0x8b, 0x05},
                          le32(static_cast<std::int64_t>(data - (addr + 11))),
                          {0x48, 0x01, 0xf8, 0x5d, 0xc3}});
    std::copy(fn.begin(), fn.end(), base);
    const std::uint64_t constant = 0x1000000000000001;
    std::memcpy(base + 0x800, &constant, 8);

    x86::JumpPadSpec spec;
    spec.pad_address = addr + 0x1000;
    spec.tracepoint_address = addr;
    spec.collector = reinterpret_cast<std::uint64_t>(&native_collector);
    spec.argument = kArg;
    spec.original_code = fn;
    spec.layout = &layout;
    spec.state_save = save;
    auto pad = x86::emit_jump_pad(spec);
    REQUIRE(pad.ok());
    REQUIRE(pad->code.size() <= 0x1000);
    std::copy(pad->code.begin(), pad->code.end(), base + 0x1000);

    std::array<std::uint8_t, 544> in{}, direct{}, patched{};
    for (std::size_t i = 0; i < in.size(); ++i)
        in[i] = static_cast<std::uint8_t>(i * 13 + 1);
    const std::uint64_t arg = 0x42;
    const std::uint64_t r1 = call_with_vectors(addr, arg, in.data(), direct.data(), avx);
    std::copy(pad->patch.begin(), pad->patch.end(), base);
    g_native = NativeSeen{};
    g_native.layout = &layout;
    g_native.mask = save.mask;
    const std::uint64_t r2 = call_with_vectors(addr, arg, in.data(), patched.data(), avx);
    munmap(mem, kSize);

    CHECK(r1 == constant + arg);
    CHECK(r2 == r1);
    CHECK(g_native.calls == 1);
    for (const auto& p : g_native.problems)
        FAIL_CHECK(p);
    CHECK(direct == in);
    CHECK(patched == in); // xmm/ymm and r8-r11 all came back
    REQUIRE(g_native.block.size() == layout.g_size());
    CHECK(load<std::uint64_t>(g_native.block, 5 * 8) == arg); // rdi
    CHECK(load<std::uint64_t>(g_native.block, 8 * 8) ==
          load<std::uint64_t>(Bytes(in.begin(), in.end()), 512)); // r8
    // rsp, as the collector finds it from the anchor: this thread's stack, as the callee saw
    // it (the call's alignment is the compiler's).
    const std::uint64_t rsp = g_native.sp;
    const auto here = reinterpret_cast<std::uint64_t>(__builtin_frame_address(0));
    CHECK(rsp % 8 == 0);
    CHECK(rsp < here);
    CHECK(here - rsp < 65536);
    // The XSAVE area: xmm0 as loaded, XSTATE_BV within the mask, XCOMP_BV zero.
    const Bytes& st = g_native.state;
    CHECK(Bytes(st.begin() + 160, st.begin() + 176) == Bytes(in.begin(), in.begin() + 16));
    CHECK((load<std::uint64_t>(st, 512) & ~save.mask) == 0);
    CHECK(load<std::uint64_t>(st, 520) == 0);
}
