// The AArch64 relocator, checked like the x86-64 one: the original instruction and its
// relocated form run in Unicorn from the same registers, and must leave the same registers
// and reach the same next pc.
#include "arch/aarch64/relocator.hpp"

#include <catch2/catch.hpp>
#include <unicorn/unicorn.h>

#include <array>
#include <cstring>
#include <elf.h>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
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

namespace {

// The executable segment of the arm64 C library the cross toolchain installs: real compiled
// code (empty when it is not there).
std::vector<std::uint8_t> arm64_libc_text() {
    std::ifstream f("/usr/aarch64-linux-gnu/lib/libc.so.6", std::ios::binary);
    const std::vector<std::uint8_t> file((std::istreambuf_iterator<char>(f)),
                                         std::istreambuf_iterator<char>());
    if (file.size() < sizeof(Elf64_Ehdr)) return {};
    Elf64_Ehdr eh;
    std::memcpy(&eh, file.data(), sizeof eh);
    if (eh.e_machine != EM_AARCH64) return {};
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph;
        const std::size_t at = eh.e_phoff + std::size_t{i} * eh.e_phentsize;
        if (at + sizeof ph > file.size()) return {};
        std::memcpy(&ph, file.data() + at, sizeof ph);
        if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && ph.p_offset + ph.p_filesz <= file.size())
            return {file.begin() + static_cast<std::ptrdiff_t>(ph.p_offset),
                    file.begin() + static_cast<std::ptrdiff_t>(ph.p_offset + ph.p_filesz)};
    }
    return {};
}

constexpr std::uint64_t kPage = 0x1000;

// Data pages appear where an instruction reads or writes, filled the same way for both runs.
bool map_on_demand(uc_engine* uc, uc_mem_type, std::uint64_t addr, int size, std::int64_t,
                   void* user) {
    int& budget = *static_cast<int*>(user);
    for (std::uint64_t p = addr & ~(kPage - 1);
         p < addr + static_cast<std::uint64_t>(std::max(size, 1)); p += kPage) {
        if (budget-- <= 0 || uc_mem_map(uc, p, kPage, UC_PROT_ALL) != UC_ERR_OK) return false;
        std::vector<std::uint8_t> page(kPage);
        std::mt19937_64 g(p * 0x9e3779b97f4a7c15ULL);
        for (auto& b : page)
            b = static_cast<std::uint8_t>(g());
        uc_mem_write(uc, p, page.data(), page.size());
    }
    return true;
}

struct Leave {
    std::uint64_t lo, hi;
    int steps = 0;
};
void leave_hook(uc_engine* uc, std::uint64_t addr, std::uint32_t, void* user) {
    auto* s = static_cast<Leave*>(user);
    if (s->steps++ > 0 && (addr < s->lo || addr >= s->hi)) uc_emu_stop(uc);
}

struct State {
    std::array<std::uint64_t, 31> x{};
    std::uint64_t sp = 0, nzcv = 0;
    std::array<std::array<std::uint64_t, 2>, 32> q{};
};

struct Result {
    uc_err err = UC_ERR_OK;
    std::uint64_t pc = 0;
    State state;
    std::map<std::uint64_t, std::vector<std::uint8_t>> memory;
};

// Runs `code` at `at` until it leaves it; the pages of `at` and `other` (the original's
// address, where a pad branches back) are mapped, the rest appears on demand for data only:
// a branch anywhere else ends the run with a fetch fault at its target.
Result run_code(const State& in, const std::vector<std::uint8_t>& code, std::uint64_t at,
                std::uint64_t other) {
    uc_engine* uc = nullptr;
    REQUIRE(uc_open(UC_ARCH_ARM64, UC_MODE_ARM, &uc) == UC_ERR_OK);
    const std::uint64_t base = at & ~(kPage - 1), other_base = other & ~(kPage - 1);
    REQUIRE(uc_mem_map(uc, base, 2 * kPage, UC_PROT_ALL) == UC_ERR_OK);
    if (other_base + 2 * kPage <= base || base + 2 * kPage <= other_base)
        REQUIRE(uc_mem_map(uc, other_base, 2 * kPage, UC_PROT_ALL) == UC_ERR_OK);
    uc_mem_write(uc, at, code.data(), code.size());
    for (int r = 0; r <= 30; ++r)
        uc_reg_write(uc, xreg(r), &in.x[static_cast<std::size_t>(r)]);
    uc_reg_write(uc, UC_ARM64_REG_SP, &in.sp);
    uc_reg_write(uc, UC_ARM64_REG_NZCV, &in.nzcv);
    for (int r = 0; r < 32; ++r)
        uc_reg_write(uc, UC_ARM64_REG_Q0 + r, in.q[static_cast<std::size_t>(r)].data());
    uc_hook h1{}, h2{};
    int budget = 16;
    uc_hook_add(uc, &h1, UC_HOOK_MEM_READ_UNMAPPED | UC_HOOK_MEM_WRITE_UNMAPPED,
                reinterpret_cast<void*>(map_on_demand), &budget, 1, 0);
    Leave leave{at, at + code.size()};
    uc_hook_add(uc, &h2, UC_HOOK_CODE, reinterpret_cast<void*>(leave_hook), &leave, 1, 0);
    Result out;
    out.err = uc_emu_start(uc, at, ~0ULL, 0, 64);
    uc_reg_read(uc, UC_ARM64_REG_PC, &out.pc);
    for (int r = 0; r <= 30; ++r)
        uc_reg_read(uc, xreg(r), &out.state.x[static_cast<std::size_t>(r)]);
    uc_reg_read(uc, UC_ARM64_REG_SP, &out.state.sp);
    uc_reg_read(uc, UC_ARM64_REG_NZCV, &out.state.nzcv);
    for (int r = 0; r < 32; ++r)
        uc_reg_read(uc, UC_ARM64_REG_Q0 + r, out.state.q[static_cast<std::size_t>(r)].data());
    uc_mem_region* regions = nullptr;
    std::uint32_t count = 0;
    uc_mem_regions(uc, &regions, &count);
    for (std::uint32_t i = 0; i < count; ++i) {
        if (regions[i].begin == base || regions[i].begin == other_base) continue; // code
        std::vector<std::uint8_t> b(regions[i].end - regions[i].begin + 1);
        uc_mem_read(uc, regions[i].begin, b.data(), b.size());
        out.memory[regions[i].begin] = std::move(b);
    }
    uc_free(regions);
    uc_close(uc);
    return out;
}

} // namespace

TEST_CASE("aarch64 relocation: random real libc instructions behave the same from a pad",
          "[arch][aarch64]") {
    const auto text = arm64_libc_text();
    if (text.size() < 0x10000) {
        WARN("no arm64 libc at /usr/aarch64-linux-gnu/lib/libc.so.6 (libc6-arm64-cross): skipped");
        return;
    }
    const std::uint64_t seed = GENERATE(1, 2, 3);
    std::mt19937_64 g(seed);
    const std::uint64_t base = 0x40000000; // where the text is placed
    int ran = 0, refused = 0;
    for (int sample = 0; sample < 400; ++sample) {
        const std::size_t offset = (g() % (text.size() / 4)) * 4;
        const std::uint64_t from = base + offset;
        std::uint32_t insn = 0;
        std::memcpy(&insn, text.data() + offset, 4);
        // svc and brk trap; mrs reads clocks and ids Unicorn may not have.
        if ((insn & 0xff000000) == 0xd4000000 || (insn & 0xfff00000) == 0xd5300000) continue;
        const std::int64_t distance = static_cast<std::int64_t>(g() % (120ull << 20)) + 0x10000;
        const std::uint64_t to = (g() & 1 ? from + distance : from - distance) & ~std::uint64_t{3};
        INFO("seed " << seed << " sample " << sample << " libc+0x" << std::hex << offset
                     << " insn 0x" << insn << " to 0x" << to);
        auto r = a64::relocate(bytes_of(insn), from, to);
        if (!r) {
            INFO(r.error().text);
            CHECK(r.error().code == tpagent::ErrorCode::Unsupported);
            ++refused;
            continue;
        }
        State s;
        for (auto& v : s.x)
            v = g() % 4 == 0 ? g() % 64 : 0x20000000 + (g() % 0x10000) * 8;
        s.sp = 0x30000000 + (g() % 0x100) * 16;
        s.nzcv = (g() & 0xf) << 28;
        for (auto& v : s.q)
            v = {g(), g()};
        const Result want = run_code(s, bytes_of(insn), from, to);
        const Result got = run_code(s, r->code, to, from);
        // Gone to unmapped code (a branch's target): as good as leaving, at that pc.
        const auto left = [](uc_err e) { return e == UC_ERR_OK || e == UC_ERR_FETCH_UNMAPPED; };
        CHECK(left(want.err) == left(got.err));
        if (!left(want.err) || !left(got.err)) continue;
        CHECK(got.pc == want.pc);
        CHECK(got.state.sp == want.state.sp);
        CHECK(got.state.nzcv == want.state.nzcv);
        // A register call goes through x17 from the pad (see the relocator).
        const bool register_call =
            (insn & 0xfefff800) == 0xd63f0800 || (insn & 0xfffffc1f) == 0xd63f0000;
        for (std::size_t i = 0; i < want.state.x.size(); ++i) {
            INFO("x" << std::dec << i);
            if (!(register_call && i == 17)) CHECK(got.state.x[i] == want.state.x[i]);
        }
        for (std::size_t i = 0; i < want.state.q.size(); ++i) {
            INFO("q" << std::dec << i);
            CHECK(got.state.q[i] == want.state.q[i]);
        }
        // The SIMD&FP literal loads borrow x16 on the stack, below sp: not the program's.
        auto program_memory = [&](const Result& res) {
            auto m = res.memory;
            std::erase_if(m, [&](const auto& page) {
                return page.first < s.sp && s.sp - 16 < page.first + page.second.size();
            });
            return m;
        };
        CHECK(program_memory(got) == program_memory(want));
        ++ran;
    }
    CHECK(ran > 250);
    CHECK(refused < 10);
}

TEST_CASE("aarch64 relocation: register calls return to the original's next instruction",
          "[arch][aarch64]") {
    const std::uint64_t from = 0x40001000, to = 0x42000000;
    for (unsigned n : {3u, 17u, 30u}) {
        INFO("blr x" << n);
        State s;
        for (std::size_t i = 0; i < s.x.size(); ++i)
            s.x[i] = 0x50000000 + 0x100 * i;
        s.sp = 0x30000000;
        const std::uint32_t blr = 0xd63f0000 | n << 5;
        auto r = a64::relocate(bytes_of(blr), from, to);
        REQUIRE(r);
        const Result want = run_code(s, bytes_of(blr), from, to);
        const Result got = run_code(s, r->code, to, from);
        CHECK(got.pc == want.pc);
        CHECK(got.pc == 0x50000000 + 0x100 * n);
        CHECK(got.state.x[30] == from + 4);
        CHECK(want.state.x[30] == from + 4);
    }
    // blraa x3, x30: the modifier would be gone by the time of the branch.
    auto refused = a64::relocate(bytes_of(0xd73f087e), from, to);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().text.find("modifier") != std::string::npos);
}
