// The AArch64 fast-tracepoint pad, run in Unicorn like the x86-64 one: code patched with the
// tracepoint's B must end in the same state as the original code (registers, NZCV, the stack
// the code uses), and the collector -- a `ret` with a hook that checks what it was given and
// then clobbers every register it may -- must see the thread's registers in the `g` block.
#include "arch/aarch64/jump_pad.hpp"
#include "unicorn_aarch64.hpp"

#include <catch2/catch.hpp>
#include <unicorn/unicorn.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

namespace a64 = tpagent::arch::aarch64;

namespace {

using namespace tpagent::test::unicorn_a64;

constexpr std::uint64_t kCode = 0x10000000;
constexpr std::uint64_t kPad = 0x17f00000;         // 127 MiB above: within a B's reach
constexpr std::uint64_t kCollector = 0x7f00000000; // absolute: far from everything
constexpr std::uint64_t kStack = 0x30000000;
constexpr std::uint64_t kRegion = 0x10000;
constexpr std::uint64_t kArg = 0x5eed5eed12345678;

constexpr std::uint64_t kEnd = kCode + 4 * kTraced.size();

struct Observed {
    Machine at_tracepoint;
    std::uint64_t return_address = 0; // after the pad's blr
    int calls = 0;
    std::vector<std::string> problems;
};

void note(Observed& o, bool ok, const std::string& what) {
    if (!ok) o.problems.push_back(what);
}

void tracepoint_hook(uc_engine* uc, std::uint64_t, std::uint32_t, void* user) {
    static_cast<Observed*>(user)->at_tracepoint = read_machine(uc);
}

void collector_hook(uc_engine* uc, std::uint64_t, std::uint32_t, void* user) {
    auto& o = *static_cast<Observed*>(user);
    ++o.calls;
    const Machine m = read_machine(uc);
    note(o, m.x[0] == kArg, "x0 is the argument");
    note(o, m.x[1] == m.x[2] && m.x[2] == m.x[3], "block, frame and anchor are one address");
    note(o, m.sp % 16 == 0 && m.sp < m.x[1], "sp is aligned and below the block");
    note(o, m.x[30] == o.return_address, "the return address is after the blr");
    std::uint64_t slot = 0;
    uc_mem_read(uc, m.x[2] - 8, &slot, 8);
    note(o, slot == m.x[30], "frame - 8 holds the return address");
    std::vector<std::uint8_t> block(a64::kCoreBlockBytes);
    uc_mem_read(uc, m.x[1], block.data(), block.size());
    const Machine& t = o.at_tracepoint;
    for (int r = 0; r <= 30; ++r)
        note(o, load<std::uint64_t>(block, 8 * r) == t.x[static_cast<std::size_t>(r)],
             "x" + std::to_string(r) + " in the block");
    note(o, load<std::uint64_t>(block, 248) == t.sp, "sp in the block");
    note(o, load<std::uint64_t>(block, 256) == t.pc, "pc in the block");
    note(o, load<std::uint32_t>(block, 264) == (t.nzcv & 0xf0000000), "cpsr in the block");
    // Clobber all the collector may (and the callee-saved ones too), and the stack below.
    for (int r = 0; r < 30; ++r) {
        const std::uint64_t junk = 0xdead000000000000 | static_cast<std::uint64_t>(r);
        uc_reg_write(uc, xreg(r), &junk);
    }
    const std::uint64_t nzcv = t.nzcv ^ 0xf0000000;
    uc_reg_write(uc, UC_ARM64_REG_NZCV, &nzcv);
    std::vector<std::uint8_t> junk(512, 0xa5);
    uc_mem_write(uc, m.sp - junk.size(), junk.data(), junk.size());
}

struct Run {
    Machine end;
    std::vector<std::uint8_t> stack;       // the part the traced code uses: [sp - 16, sp + 64)
    std::vector<std::uint8_t> whole_stack; // the thread's stack region
    Observed observed;
    std::uint64_t tpidr_at_collector = 0, tpidr_at_end = 0;
    std::array<std::uint64_t, 6> slots{}; // the thread's words after the run
    std::array<std::uint64_t, 2> pool_header{};
};

// A Go thread for pads on agent stacks: x28 is the goroutine, whose M (at +48) has the
// thread's words at +136; a pool of 4 stacks of 4 KiB.
constexpr std::uint64_t kGoroutine = 0x40000000;
constexpr std::uint64_t kM = kGoroutine + 0x1000;
constexpr std::uint64_t kPool = 0x50000000;
constexpr tpagent::arch::AgentStacks kGoStacks{
    kPool, tpagent::arch::kAgentStackHeaderBytes + 4 * 4096, 4096, 136, 48};
// The agent's tracing flag, for gated pads.
constexpr std::uint64_t kFlag = 0x60000000;

struct GoThread {
    std::uint64_t handed_out = 0; // the pool's first word before the run
    std::uint64_t stack_top = 0;  // the thread's word before the run
};

void tpidr_hook(uc_engine* uc, std::uint64_t, std::uint32_t, void* user) {
    uc_reg_read(uc, UC_ARM64_REG_TPIDR_EL0, user);
}

Run run(std::uint64_t x0, std::uint64_t x1, std::uint64_t nzcv,
        const tpagent::arch::EmittedJumpPad* pad, std::size_t tp_offset,
        const GoThread* go = nullptr, std::uint32_t tracing = 1) {
    uc_engine* uc = nullptr;
    REQUIRE(uc_open(UC_ARCH_ARM64, UC_MODE_ARM, &uc) == UC_ERR_OK);
    for (std::uint64_t base : {kCode, kPad & ~(kRegion - 1), kCollector, kStack, kFlag})
        REQUIRE(uc_mem_map(uc, base, kRegion, UC_PROT_ALL) == UC_ERR_OK);
    uc_mem_write(uc, kFlag + 4, &tracing, 4);
    std::vector<std::uint8_t> pattern(kRegion);
    for (std::size_t i = 0; i < pattern.size(); ++i)
        pattern[i] = static_cast<std::uint8_t>(i * 7 + 3);
    uc_mem_write(uc, kStack, pattern.data(), pattern.size());
    if (go) {
        REQUIRE(uc_mem_map(uc, kGoroutine, 0x2000, UC_PROT_READ | UC_PROT_WRITE) == UC_ERR_OK);
        REQUIRE(uc_mem_map(uc, kPool, kGoStacks.pool_bytes, UC_PROT_READ | UC_PROT_WRITE) ==
                UC_ERR_OK);
        uc_mem_write(uc, kGoroutine + 48, &kM, 8);
        uc_mem_write(uc, kM + 136 + 8, &go->stack_top, 8);
        uc_mem_write(uc, kPool, &go->handed_out, 8);
    }
    std::vector<std::uint8_t> code(4 * kTraced.size());
    std::memcpy(code.data(), kTraced.data(), code.size());
    uc_mem_write(uc, kCode, code.data(), code.size());
    const std::uint64_t literal = 0x1122334455667788;
    uc_mem_write(uc, kCode + 0x800, &literal, 8);
    uc_mem_write(uc, kCollector, &kRet, 4);
    Run out;
    uc_hook h1{}, h2{};
    if (pad) {
        uc_mem_write(uc, kPad, pad->code.data(), pad->code.size());
        uc_mem_write(uc, kCode + tp_offset, pad->patch.data(), pad->patch.size());
        uc_hook_add(uc, &h1, UC_HOOK_CODE, reinterpret_cast<void*>(tracepoint_hook), &out.observed,
                    kCode + tp_offset, kCode + tp_offset);
        uc_hook_add(uc, &h2, UC_HOOK_CODE, reinterpret_cast<void*>(collector_hook), &out.observed,
                    kCollector, kCollector);
        // The return address: the instruction after the pad's only blr.
        for (std::size_t at = 0; at < pad->relocated_offset; at += 4)
            if (load<std::uint32_t>(pad->code, at) == 0xd63f0200)
                out.observed.return_address = kPad + at + 4;
    }
    for (int r = 0; r <= 30; ++r) {
        const std::uint64_t v = 0x1000 * static_cast<std::uint64_t>(r) + 7;
        uc_reg_write(uc, xreg(r), &v);
    }
    uc_reg_write(uc, UC_ARM64_REG_X0, &x0);
    uc_reg_write(uc, UC_ARM64_REG_X1, &x1);
    uc_hook h3{};
    if (go) {
        uc_reg_write(uc, UC_ARM64_REG_X28, &kGoroutine);
        if (pad)
            uc_hook_add(uc, &h3, UC_HOOK_CODE, reinterpret_cast<void*>(tpidr_hook),
                        &out.tpidr_at_collector, kCollector, kCollector);
    }
    const std::uint64_t sp = kStack + kRegion / 2;
    uc_reg_write(uc, UC_ARM64_REG_SP, &sp);
    uc_reg_write(uc, UC_ARM64_REG_NZCV, &nzcv);
    REQUIRE(uc_emu_start(uc, kCode, kEnd, 0, 10000) == UC_ERR_OK);
    out.end = read_machine(uc);
    out.stack.resize(80);
    uc_mem_read(uc, sp - 16, out.stack.data(), out.stack.size());
    out.whole_stack.resize(kRegion);
    uc_mem_read(uc, kStack, out.whole_stack.data(), out.whole_stack.size());
    uc_reg_read(uc, UC_ARM64_REG_TPIDR_EL0, &out.tpidr_at_end);
    if (go) {
        uc_mem_read(uc, kM + 136, out.slots.data(), sizeof out.slots);
        uc_mem_read(uc, kPool, out.pool_header.data(), sizeof out.pool_header);
    }
    uc_close(uc);
    return out;
}

// The collector saw what it should, and the program ends as it does without the pad.
void check_ends_as_without(const Run& got, const Run& want) {
    for (const auto& p : got.observed.problems)
        FAIL_CHECK(p);
    check_same_machine(got.end, want.end);
}

a64::JumpPadSpec spec_at(std::size_t tp_offset, std::span<const std::uint8_t> original) {
    a64::JumpPadSpec spec;
    spec.pad_address = kPad;
    spec.tracepoint_address = kCode + tp_offset;
    spec.collector = kCollector;
    spec.argument = kArg;
    spec.original_code = original;
    return spec;
}

} // namespace

TEST_CASE("aarch64 jump pad: the program ends as without it, the collector sees the registers",
          "[arch][aarch64]") {
    struct Start {
        std::uint64_t x0, x1, nzcv;
        const char* what;
    };
    const Start starts[] = {{5, 7, 0, "b.eq not taken"},
                            {5, ~std::uint64_t{4}, 0, "b.eq taken (x0 + x1 == 0)"},
                            {~std::uint64_t{0}, 1, 0x30000000, "carry out, C and V set before"}};
    for (const Start& s : starts) {
        const Run want = run(s.x0, s.x1, s.nzcv, nullptr, 0);
        for (std::size_t tp = 0; tp < 4 * kTraced.size(); tp += 4) {
            INFO(s.what << ", tracepoint at +" << tp);
            std::uint8_t original[4];
            std::memcpy(original, &kTraced[tp / 4], 4);
            auto pad = a64::emit_jump_pad(spec_at(tp, original));
            REQUIRE(pad);
            CHECK(pad->patch.size() == 4);
            CHECK(pad->relocated.covered == 4);
            const Run got = run(s.x0, s.x1, s.nzcv, &*pad, tp);
            // b.eq taken jumps over the tracepoint at +12.
            const bool skipped = tp == 12 && s.x0 + s.x1 == 0;
            CHECK(got.observed.calls == (skipped ? 0 : 1));
            check_ends_as_without(got, want);
            CHECK(got.stack == want.stack);
        }
    }
}

TEST_CASE("aarch64 jump pad: what it refuses", "[arch][aarch64]") {
    const std::uint32_t stlxr = 0xc80bfc0a; // stlxr w11, x10, [x0]
    std::uint8_t original[4];
    std::memcpy(original, &stlxr, 4);
    auto refused = a64::emit_jump_pad(spec_at(0, original));
    REQUIRE_FALSE(refused);
    CHECK(refused.error().text.find("store-exclusive") != std::string::npos);

    std::memcpy(original, &kTraced[0], 4);
    auto far = spec_at(0, original);
    far.pad_address = kCode + (std::uint64_t{1} << 27); // just beyond B's +128 MiB
    CHECK_FALSE(a64::emit_jump_pad(far));
    auto ldaxr_ok = spec_at(0, original);
    const std::uint32_t ldaxr = 0xc85ffc0a; // ldaxr x10, [x0]: the load may move
    std::memcpy(original, &ldaxr, 4);
    CHECK(a64::emit_jump_pad(ldaxr_ok));

    // Landing pads stay where BTI is enforced: bti, bti c, bti jc, paciasp, pacibsp.
    for (std::uint32_t pad : {0xd503241fu, 0xd503245fu, 0xd50324dfu, 0xd503233fu, 0xd503237fu}) {
        INFO(std::hex << pad);
        std::memcpy(original, &pad, 4);
        auto spec = spec_at(0, original);
        CHECK(a64::emit_jump_pad(spec)); // not guarded: a hint like any other
        spec.branch_target_guarded = true;
        auto guarded = a64::emit_jump_pad(spec);
        REQUIRE_FALSE(guarded);
        CHECK(guarded.error().text.find("landing pad") != std::string::npos);
    }
    const std::uint32_t nop = 0xd503201f; // a hint that is no landing pad
    std::memcpy(original, &nop, 4);
    auto spec = spec_at(0, original);
    spec.branch_target_guarded = true;
    CHECK(a64::emit_jump_pad(spec));
}

TEST_CASE("aarch64 jump pad on an agent stack: the thread's stack untouched, a stack taken once",
          "[arch][aarch64]") {
    const std::uint64_t span = kGoStacks.pool_bytes - tpagent::arch::kAgentStackHeaderBytes;
    const std::uint64_t first_top = kPool + tpagent::arch::kAgentStackHeaderBytes + 4096;
    struct Case {
        GoThread before;
        bool collected;
        std::uint64_t top_after, handed_out_after, missed_after;
        const char* what;
    };
    const Case cases[] = {
        {{0, 0}, true, first_top, 4096, 0, "a first hit takes the pool's first stack"},
        {{3 * 4096, 0}, true, first_top + 3 * 4096, span, 0, "the pool's last stack"},
        {{2 * 4096, first_top}, true, first_top, 2 * 4096, 0, "a later hit: the thread's stack"},
        {{span, 0}, false, 0, span + 4096, 1, "none left: counted, not collected"},
    };
    for (const Case& c : cases) {
        const Run want = run(5, 7, 0x20000000, nullptr, 0, &c.before);
        for (std::size_t tp = 0; tp < 4 * kTraced.size(); tp += 4) {
            INFO(c.what << ", tracepoint at +" << tp);
            std::uint8_t original[4];
            std::memcpy(original, &kTraced[tp / 4], 4);
            auto spec = spec_at(tp, original);
            spec.agent_stacks = kGoStacks;
            auto pad = a64::emit_jump_pad(spec);
            REQUIRE(pad);
            const Run got = run(5, 7, 0x20000000, &*pad, tp, &c.before);
            CHECK(got.observed.calls == (c.collected ? 1 : 0));
            check_ends_as_without(got, want);
            CHECK(got.whole_stack == want.whole_stack); // not a byte below sp either
            CHECK(got.tpidr_at_end == 0);
            if (c.collected) CHECK(got.tpidr_at_collector == kM + 136);
            CHECK(got.slots[1] == c.top_after);
            CHECK(got.pool_header[0] == c.handed_out_after);
            CHECK(got.pool_header[1] == c.missed_after);
        }
    }
    auto spec = spec_at(0, {reinterpret_cast<const std::uint8_t*>(kTraced.data()), 4});
    spec.agent_stacks = kGoStacks;
    spec.agent_stacks.pool_bytes += 4096; // 5 stacks: not a power of two
    CHECK_FALSE(a64::emit_jump_pad(spec));
}

TEST_CASE("aarch64 jump pad with a gate: tracing off runs only the displaced instruction",
          "[arch][aarch64]") {
    const Run want = run(5, 7, 0x90000000, nullptr, 0);
    for (std::size_t tp = 0; tp < 4 * kTraced.size(); tp += 4) {
        std::uint8_t original[4];
        std::memcpy(original, &kTraced[tp / 4], 4);
        auto spec = spec_at(tp, original);
        spec.gate = kFlag + 4;
        auto pad = a64::emit_jump_pad(spec);
        REQUIRE(pad);
        for (std::uint32_t tracing : {1u, 0u, 2u}) {
            INFO("tracepoint at +" << tp << ", tracing " << tracing);
            const Run got = run(5, 7, 0x90000000, &*pad, tp, nullptr, tracing);
            CHECK(got.observed.calls == (tracing ? 1 : 0));
            check_ends_as_without(got, want);
            CHECK(got.stack == want.stack);
        }
    }
}
