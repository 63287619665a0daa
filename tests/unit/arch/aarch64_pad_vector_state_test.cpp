// The AArch64 pad's FP/SIMD state save, run in Unicorn (a CPU without SVE: q registers): the
// collector finds fpsr, fpcr and q0..q31 from its frame on, below the block, decoded into gdb's
// v registers; and whatever it does to them, the traced code goes on with the thread's own.
#include "arch/aarch64/jump_pad.hpp"
#include "arch/aarch64/pad_vector_state.hpp"
#include "arch/aarch64/registers.hpp"

#include <catch2/catch.hpp>
#include <unicorn/unicorn.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

namespace a64 = tpagent::arch::aarch64;

namespace {

constexpr std::uint64_t kCode = 0x10000000;
constexpr std::uint64_t kPad = 0x10100000;
constexpr std::uint64_t kCollector = 0x7f00000000;
constexpr std::uint64_t kStack = 0x30000000;
constexpr std::uint64_t kRegion = 0x10000;
constexpr std::uint32_t kRet = 0xd65f03c0;
constexpr std::uint32_t kAddX0One = 0x91000400; // add x0, x0, #1: the traced instruction
constexpr std::uint64_t kFpcr = 1u << 24;       // FZ: not the default
constexpr std::uint64_t kFpsr = 0x0800009f;     // QC and the cumulative exception bits

struct Vectors {
    std::array<std::array<std::uint8_t, 16>, 32> q{};
    std::uint64_t fpsr = 0, fpcr = 0;
};

Vectors read_vectors(uc_engine* uc) {
    Vectors v;
    for (int r = 0; r < 32; ++r)
        uc_reg_read(uc, UC_ARM64_REG_Q0 + r, v.q[static_cast<std::size_t>(r)].data());
    uc_reg_read(uc, UC_ARM64_REG_FPSR, &v.fpsr);
    uc_reg_read(uc, UC_ARM64_REG_FPCR, &v.fpcr);
    return v;
}

struct Seen {
    int calls = 0;
    std::vector<std::string> problems;
    Vectors at_start;
    std::vector<std::uint8_t> g;
    std::vector<bool> placed;
};

void note(Seen& s, bool ok, const std::string& what) {
    if (!ok) s.problems.push_back(what);
}

void collector_hook(uc_engine* uc, std::uint64_t, std::uint32_t, void* user) {
    auto& seen = *static_cast<Seen*>(user);
    ++seen.calls;
    std::uint64_t x1 = 0, x2 = 0, x3 = 0, x30 = 0, sp = 0;
    uc_reg_read(uc, UC_ARM64_REG_X1, &x1);
    uc_reg_read(uc, UC_ARM64_REG_X2, &x2);
    uc_reg_read(uc, UC_ARM64_REG_X3, &x3);
    uc_reg_read(uc, UC_ARM64_REG_X30, &x30);
    uc_reg_read(uc, UC_ARM64_REG_SP, &sp);
    const auto& layout = a64::make_layout(0, false);
    const std::uint32_t bytes = a64::vector_state_bytes(layout);
    note(seen, x1 == x3, "block and anchor are one address");
    note(seen, sp % 16 == 0 && sp + 16 == x2, "the frame is sp + 16, sp aligned");
    note(seen, x2 + bytes <= x1, "the state lies between the frame and the block");
    std::uint64_t slot = 0;
    uc_mem_read(uc, x2 - 8, &slot, 8);
    note(seen, slot == x30, "frame - 8 holds the return address");
    std::uint64_t x0_in_block = 0;
    uc_mem_read(uc, x1, &x0_in_block, 8);
    note(seen, x0_in_block == 41, "x0 in the block");
    std::vector<std::uint8_t> state(bytes);
    uc_mem_read(uc, x2, state.data(), state.size());
    seen.g.assign(layout.g_size, 0);
    a64::vector_state_to_g(layout, state, seen.g, seen.placed);
    // Clobber what the collector may: every vector register, fpsr and fpcr.
    std::array<std::uint8_t, 16> junk;
    junk.fill(0xa5);
    for (int r = 0; r < 32; ++r)
        uc_reg_write(uc, UC_ARM64_REG_Q0 + r, junk.data());
    const std::uint64_t zero = 0;
    uc_reg_write(uc, UC_ARM64_REG_FPSR, &zero);
    uc_reg_write(uc, UC_ARM64_REG_FPCR, &zero);
}

} // namespace

TEST_CASE("aarch64 jump pad: the FP/SIMD state saved for the collector, restored after it",
          "[arch][aarch64]") {
    std::uint8_t original[4];
    std::memcpy(original, &kAddX0One, 4);
    a64::JumpPadSpec spec;
    spec.pad_address = kPad;
    spec.tracepoint_address = kCode;
    spec.collector = kCollector;
    spec.argument = 1;
    spec.original_code = original;
    spec.stage_vector_state = true; // vector_state: no SVE, no SME
    auto pad = a64::emit_jump_pad(spec);
    REQUIRE(pad);

    uc_engine* uc = nullptr;
    REQUIRE(uc_open(UC_ARCH_ARM64, UC_MODE_ARM, &uc) == UC_ERR_OK);
    for (std::uint64_t base : {kCode, kPad, kCollector, kStack})
        REQUIRE(uc_mem_map(uc, base, kRegion, UC_PROT_ALL) == UC_ERR_OK);
    uc_mem_write(uc, kCode, pad->patch.data(), pad->patch.size());
    uc_mem_write(uc, kPad, pad->code.data(), pad->code.size());
    uc_mem_write(uc, kCollector, &kRet, 4);
    const std::uint64_t fpen = 3u << 20; // CPACR_EL1.FPEN: FP/SIMD at EL0 and EL1
    uc_reg_write(uc, UC_ARM64_REG_CPACR_EL1, &fpen);
    Seen seen;
    for (int r = 0; r < 32; ++r) {
        auto& q = seen.at_start.q[static_cast<std::size_t>(r)];
        for (std::size_t i = 0; i < q.size(); ++i)
            q[i] = static_cast<std::uint8_t>(r * 16 + i + 1);
        uc_reg_write(uc, UC_ARM64_REG_Q0 + r, q.data());
    }
    uc_reg_write(uc, UC_ARM64_REG_FPSR, &kFpsr);
    uc_reg_write(uc, UC_ARM64_REG_FPCR, &kFpcr);
    const std::uint64_t x0 = 41, sp = kStack + kRegion / 2;
    uc_reg_write(uc, UC_ARM64_REG_X0, &x0);
    uc_reg_write(uc, UC_ARM64_REG_SP, &sp);
    seen.at_start.fpsr = read_vectors(uc).fpsr;
    seen.at_start.fpcr = read_vectors(uc).fpcr;
    uc_hook hook{};
    uc_hook_add(uc, &hook, UC_HOOK_CODE, reinterpret_cast<void*>(collector_hook), &seen, kCollector,
                kCollector);
    REQUIRE(uc_emu_start(uc, kCode, kCode + 4, 0, 10000) == UC_ERR_OK);
    const Vectors end = read_vectors(uc);
    std::uint64_t x0_end = 0, sp_end = 0;
    uc_reg_read(uc, UC_ARM64_REG_X0, &x0_end);
    uc_reg_read(uc, UC_ARM64_REG_SP, &sp_end);
    uc_close(uc);

    REQUIRE(seen.calls == 1);
    CHECK(seen.problems == std::vector<std::string>{});
    CHECK(seen.at_start.fpcr == kFpcr);
    // Decoded: v0..v31, fpsr and fpcr as the thread had them; nothing else placed.
    const auto& layout = a64::make_layout(0, false);
    for (int r = 0; r < 32; ++r) {
        INFO("v" << r);
        const auto& reg = layout.regs[static_cast<std::size_t>(a64::kFirstVRegnum + r)];
        CHECK(seen.placed[static_cast<std::size_t>(a64::kFirstVRegnum + r)]);
        CHECK(std::memcmp(seen.g.data() + reg.g_offset,
                          seen.at_start.q[static_cast<std::size_t>(r)].data(), 16) == 0);
    }
    std::uint32_t fpsr = 0, fpcr = 0;
    std::memcpy(&fpsr, seen.g.data() + layout.regs[a64::kFpsrRegnum].g_offset, 4);
    std::memcpy(&fpcr, seen.g.data() + layout.regs[a64::kFpcrRegnum].g_offset, 4);
    CHECK(fpsr == seen.at_start.fpsr);
    CHECK(fpcr == seen.at_start.fpcr);
    std::size_t placed = 0;
    for (bool p : seen.placed)
        placed += p;
    CHECK(placed == 34);
    // The traced code goes on with the thread's registers.
    CHECK(x0_end == 42);
    CHECK(sp_end == sp);
    CHECK(end.q == seen.at_start.q);
    CHECK(end.fpsr == seen.at_start.fpsr);
    CHECK(end.fpcr == seen.at_start.fpcr);
}

TEST_CASE("aarch64 pad vector state: an SVE state placed only at the layout's length",
          "[arch][aarch64]") {
    const auto layout = a64::make_layout(64, false); // 512-bit vectors
    const std::uint32_t bytes = a64::vector_state_bytes(layout);
    CHECK(bytes == 16 + 32 * 64 + 17 * 8);
    std::vector<std::uint8_t> state(bytes);
    const std::uint32_t fpsr = 0x08000010, fpcr = 1u << 24;
    std::memcpy(state.data(), &fpsr, 4);
    std::memcpy(state.data() + 4, &fpcr, 4);
    for (std::size_t i = 16; i < state.size(); ++i)
        state[i] = static_cast<std::uint8_t>(i * 7);
    auto placed_with = [&](std::uint32_t vl, std::vector<std::uint8_t>& g) {
        std::memcpy(state.data() + 8, &vl, 4);
        g.assign(layout.g_size, 0);
        std::vector<bool> placed;
        a64::vector_state_to_g(layout, state, g, placed);
        return placed;
    };
    const auto held = a64::vector_state_registers(layout);
    std::vector<std::uint8_t> g;
    const auto all = placed_with(64, g);
    CHECK(all == held);
    const auto& z3 = layout.regs[static_cast<std::size_t>(a64::kFirstVRegnum + 3)];
    CHECK(z3.size == 64);
    CHECK(std::equal(g.begin() + z3.g_offset, g.begin() + z3.g_offset + 64,
                     state.begin() + 16 + 3 * 64));
    const auto& ffr = layout.regs[static_cast<std::size_t>(a64::kFirstPRegnum + 16)];
    CHECK(std::equal(g.begin() + ffr.g_offset, g.begin() + ffr.g_offset + 8,
                     state.begin() + 16 + 32 * 64 + 16 * 8));
    std::uint64_t vg = 0;
    std::memcpy(
        &vg, g.data() + layout.regs[static_cast<std::size_t>(a64::kFirstPRegnum + 17)].g_offset, 8);
    CHECK(vg == 8);
    // Streaming mode (0) or a length of the thread's own: fpsr and fpcr only.
    for (std::uint32_t vl : {0u, 32u, 128u, 0xffffffffu}) {
        INFO(vl);
        const auto some = placed_with(vl, g);
        std::size_t n = 0;
        for (bool p : some)
            n += p;
        CHECK(n == 2);
        CHECK(some[a64::kFpsrRegnum]);
        CHECK(some[a64::kFpcrRegnum]);
    }
}

TEST_CASE("aarch64 pad vector state: the SVE pad's branches around what streaming mode skips",
          "[arch][aarch64]") {
    a64::Emitter save(0), restore(0);
    a64::emit_vector_state_save(save, {true, true}, 16);
    a64::emit_vector_state_restore(restore, {true, true}, 16);
    const auto words = [](std::vector<std::uint8_t> bytes) {
        std::vector<std::uint32_t> out(bytes.size() / 4);
        std::memcpy(out.data(), bytes.data(), bytes.size());
        return out;
    };
    const auto s = words(save.take()), r = words(restore.take());
    const auto find = [](const std::vector<std::uint32_t>& code, std::uint32_t mask,
                         std::uint32_t value) {
        for (std::size_t i = 0; i < code.size(); ++i)
            if ((code[i] & mask) == value) return i;
        return code.size();
    };
    // Streaming (SVCR.SM, bit 0, in w10): on to the store of a zero length, past every SVE access.
    const std::size_t tbnz = find(s, 0xff07ffff & ~0x7ffe0u, 0x3700000a);
    REQUIRE(tbnz < s.size());
    const std::size_t skipped_to = tbnz + ((s[tbnz] >> 5) & 0x3fff);
    REQUIRE(skipped_to < s.size());
    CHECK(s[skipped_to] == 0xb81f829f);                  // stur wzr, [x20, #-8]
    CHECK(find(s, 0xffffffff, 0x2519f000) < skipped_to); // rdffr only where not skipped
    const std::size_t b = skipped_to - 1;
    CHECK((s[b] & 0xfc000000) == 0x14000000);
    CHECK(b + (s[b] & 0x3ffffff) == s.size()); // the saving path jumps over it, to the end
    // Restore: a zero length skips every SVE access (cbz w9 to the end, before sp's restore).
    const std::size_t cbz = find(r, 0xff00001f, 0x34000009);
    REQUIRE(cbz < r.size());
    const std::size_t after = cbz + ((r[cbz] >> 5) & 0x7ffff);
    CHECK(after == r.size() - 1);
    CHECK(r.back() == 0xd100427f);                  // sub sp, x19, #16
    CHECK(find(r, 0xffffffff, 0x25289000) < after); // wrffr inside the skipped part
}
