// The AArch64 relocator, checked like the x86-64 one: the original instruction and its
// relocated form run in Unicorn from the same registers, and must leave the same registers
// and reach the same next pc.
#include "arch/aarch64/relocator.hpp"

#include <catch2/catch.hpp>
#include <unicorn/unicorn.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

namespace a64 = tpagent::arch::aarch64;

namespace {

constexpr std::uint64_t kFrom = 0x10000000;       // the original instruction
constexpr std::uint64_t kPad = 0x14000000;        // within a B's reach (64 MiB on)
constexpr std::uint64_t kData = 0x10040000;       // what literal loads and ADR reach
constexpr std::uint64_t kRegion = 0x200000;       // mapped at each of the above
constexpr std::uint64_t kTargets = 0x100c0000;    // branch targets (B.cond, CBZ: ±1 MiB): NOPs
constexpr std::uint64_t kNearTarget = 0x10004000; // TBZ targets (±32 KiB): NOPs too
constexpr std::uint64_t kStack = 0x20000000;

struct Outcome {
    std::array<std::uint64_t, 31> x{};
    std::uint64_t sp = 0, pc = 0, nzcv = 0;
    std::array<std::uint64_t, 2> q1{}; // what SIMD&FP literal loads fill
};

int xreg(int n) {
    return n == 29 ? UC_ARM64_REG_X29 : n == 30 ? UC_ARM64_REG_X30 : UC_ARM64_REG_X0 + n;
}

// Runs code placed at `at` from a fixed state until the pc leaves [begin, end).
Outcome run(const std::vector<std::uint8_t>& code, std::uint64_t at, std::uint64_t begin,
            std::uint64_t end, std::uint64_t nzcv) {
    uc_engine* uc = nullptr;
    REQUIRE(uc_open(UC_ARCH_ARM64, UC_MODE_ARM, &uc) == UC_ERR_OK);
    for (std::uint64_t base : {kFrom, kPad, kStack - kRegion})
        REQUIRE(uc_mem_map(uc, base, kRegion, UC_PROT_ALL) == UC_ERR_OK);
    std::vector<std::uint8_t> data(kRegion);
    for (std::size_t i = 0; i < data.size(); ++i)
        data[i] = static_cast<std::uint8_t>(i * 7 + (i >> 8));
    // Data and branch targets share the first region: fill all but the code with a pattern,
    // and the target area with NOPs (0xd503201f).
    uc_mem_write(uc, kFrom + 0x1000, data.data(), kRegion - 0x1000);
    std::vector<std::uint8_t> nops(0x1000);
    for (std::size_t i = 0; i < nops.size(); i += 4) {
        const std::uint32_t nop = 0xd503201f;
        std::memcpy(nops.data() + i, &nop, 4);
    }
    for (std::uint64_t t : {kTargets, kNearTarget})
        uc_mem_write(uc, t - 0x800, nops.data(), nops.size());
    uc_mem_write(uc, at, code.data(), code.size());
    for (int r = 0; r <= 30; ++r) {
        std::uint64_t v = 0x1000 * static_cast<std::uint64_t>(r) + 3;
        uc_reg_write(uc, xreg(r), &v);
    }
    std::uint64_t sp = kStack - 0x100;
    uc_reg_write(uc, UC_ARM64_REG_SP, &sp);
    uc_reg_write(uc, UC_ARM64_REG_NZCV, &nzcv);
    std::uint64_t pc = at;
    for (int steps = 0; steps < 16 && pc >= begin && pc < end; ++steps) {
        REQUIRE(uc_emu_start(uc, pc, 0, 0, 1) == UC_ERR_OK);
        uc_reg_read(uc, UC_ARM64_REG_PC, &pc);
    }
    Outcome o;
    for (int r = 0; r <= 30; ++r)
        uc_reg_read(uc, xreg(r), &o.x[static_cast<std::size_t>(r)]);
    uc_reg_read(uc, UC_ARM64_REG_SP, &o.sp);
    uc_reg_read(uc, UC_ARM64_REG_NZCV, &o.nzcv);
    uc_reg_read(uc, UC_ARM64_REG_Q1, o.q1.data());
    o.pc = pc;
    uc_close(uc);
    return o;
}

std::vector<std::uint8_t> bytes_of(std::uint32_t insn) {
    std::vector<std::uint8_t> b(4);
    std::memcpy(b.data(), &insn, 4);
    return b;
}

// imm19 / imm26 word offsets from kFrom to a target.
std::uint32_t words(std::uint64_t target, unsigned bits) {
    return static_cast<std::uint32_t>((target - kFrom) >> 2) & ((1u << bits) - 1);
}

void check_same(std::uint32_t insn, std::uint64_t nzcv, const std::string& what) {
    INFO(what);
    auto reloc = a64::relocate(bytes_of(insn), kFrom, kPad);
    REQUIRE(reloc);
    CHECK(reloc->covered == 4);
    const Outcome want = run(bytes_of(insn), kFrom, kFrom, kFrom + 4, nzcv);
    const Outcome got = run(reloc->code, kPad, kPad, kPad + reloc->code.size(), nzcv);
    CHECK(got.pc == want.pc);
    CHECK(got.sp == want.sp);
    CHECK(got.nzcv == want.nzcv);
    CHECK(got.q1 == want.q1);
    for (std::size_t r = 0; r < want.x.size(); ++r) {
        INFO("x" << r);
        CHECK(got.x[r] == want.x[r]);
    }
}

} // namespace

TEST_CASE("aarch64 relocation: branches go where the original's did", "[arch][aarch64]") {
    const std::uint64_t target = kTargets;
    check_same(0x14000000 | words(target, 26), 0, "b");
    check_same(0x94000000 | words(target, 26), 0, "bl (x30 = the original's return address)");
    for (std::uint64_t nzcv : {std::uint64_t{0}, std::uint64_t{1} << 30}) { // Z clear, Z set
        check_same(0x54000000 | words(target, 19) << 5 | 0x0, nzcv, "b.eq");
        check_same(0x54000000 | words(target, 19) << 5 | 0x1, nzcv, "b.ne");
    }
    check_same(0xb4000000 | words(target, 19) << 5 | 3, 0, "cbz x3 (not taken)");
    check_same(0xb5000000 | words(target, 19) << 5 | 3, 0, "cbnz x3 (taken)");
    check_same(0x36000000 | words(kNearTarget, 14) << 5 | 3, 0, "tbz w3, #0 (not taken)");
    check_same(0x37000000 | words(kNearTarget, 14) << 5 | 3, 0, "tbnz w3, #0 (taken)");
}

TEST_CASE("aarch64 relocation: pc-relative addresses and literal loads", "[arch][aarch64]") {
    const std::uint64_t delta = kData - kFrom; // within ADR's ±1 MiB
    const auto immlo = static_cast<std::uint32_t>(delta & 3),
               immhi = static_cast<std::uint32_t>((delta >> 2) & 0x7ffff);
    check_same(0x10000000 | immlo << 29 | immhi << 5 | 5, 0, "adr x5");
    check_same(0x90000000 | 1u << 5 | 7, 0, "adrp x7, the next page");
    check_same(0x18000000 | words(kData, 19) << 5 | 9, 0, "ldr w9, literal");
    check_same(0x58000000 | words(kData + 8, 19) << 5 | 10, 0, "ldr x10, literal");
    check_same(0x98000000 | words(kData + 16, 19) << 5 | 11, 0, "ldrsw x11, literal");
    check_same(0xd8000000 | words(kData, 19) << 5, 0, "prfm, literal");
    check_same(0x1c000000 | words(kData + 4, 19) << 5 | 1, 0, "ldr s1, literal (x16 borrowed)");
    check_same(0x5c000000 | words(kData + 8, 19) << 5 | 1, 0, "ldr d1, literal");
    check_same(0x9c000000 | words(kData + 16, 19) << 5 | 1, 0, "ldr q1, literal");
    check_same(0x8b020020, 0, "add x0, x1, x2 (no pc in it)");
}

TEST_CASE("aarch64 relocation: what cannot move says so", "[arch][aarch64]") {
    // An unallocated literal-load encoding (opc 11 with V set).
    auto bad = a64::relocate(bytes_of(0xdc000000 | words(kData, 19) << 5 | 1), kFrom, kPad);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().text.find("not an instruction") != std::string::npos);
    // A branch from a pad out of B's ±128 MiB reach.
    auto far = a64::relocate(bytes_of(0x8b020020), kFrom, kFrom + (std::uint64_t{1} << 28));
    CHECK_FALSE(far);
}
