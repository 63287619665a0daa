// Register numbering and g offsets of the x86-64 layout for each CPU feature set.
#include "arch/x86_64/architecture.hpp"
#include "arch/x86_64/cpu_features.hpp"
#include "arch/x86_64/registers.hpp"
#include "arch/x86_64/x87_tag.hpp"
#include "arch/x86_64/xsave_layout.hpp"
#include "tests/unit/skip.hpp"
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <sys/user.h>
#include <string>

using namespace tpagent::arch;
using namespace tpagent::arch::x86_64;

namespace {

constexpr std::uint64_t kSseXcr0 = 0x3;
constexpr std::uint64_t kAvxXcr0 = 0x7;
constexpr std::uint64_t kAllXcr0 = 0x2ff; // x87 sse avx mpx avx512 pkru

std::uint32_t offset_of(const RegisterLayout& l, const char* name) {
    const int r = l.find(name);
    REQUIRE(r >= 0);
    return l.registers()[r].g_offset;
}

template <typename T> void put(std::vector<std::uint8_t>& buf, std::size_t off, T v) {
    std::memcpy(buf.data() + off, &v, sizeof v);
}
template <typename T> T get(std::span<const std::uint8_t> buf, std::size_t off) {
    T v;
    std::memcpy(&v, buf.data() + off, sizeof v);
    return v;
}

} // namespace

namespace {

// gdb's numbers of some registers and where their bytes are in the g block, per feature set
// (-1: not checked).
struct Placement {
    std::uint64_t xcr0;
    const char* name;
    int regnum;
    int g_offset;
};
constexpr Placement kPlacements[] = {
    {kSseXcr0, "rax", 0, -1},          {kSseXcr0, "rbp", kRbpRegnum, -1},
    {kSseXcr0, "rsp", kRspRegnum, -1}, {kSseXcr0, "rip", kRipRegnum, 128},
    {kSseXcr0, "eflags", 17, 136},     {kSseXcr0, "gs", -1, 160},
    {kSseXcr0, "st0", 24, 164},        {kSseXcr0, "st7", -1, 234},
    {kSseXcr0, "fctrl", 32, 244},      {kSseXcr0, "fop", -1, 272},
    {kSseXcr0, "xmm0", 40, 276},       {kSseXcr0, "xmm15", -1, 516},
    {kSseXcr0, "mxcsr", 56, 532},      {kSseXcr0, "orig_rax", 57, 536},
    {kSseXcr0, "fs_base", 58, 544},    {kSseXcr0, "gs_base", 59, 552},
    {kAvxXcr0, "ymm0h", 60, 560},      {kAvxXcr0, "ymm15h", -1, 800},
    {kAllXcr0, "bnd0raw", 76, -1},     {kAllXcr0, "bndstatus", 81, -1},
    {kAllXcr0, "xmm16", 82, -1},       {kAllXcr0, "ymm16h", 98, -1},
    {kAllXcr0, "k0", 114, -1},         {kAllXcr0, "zmm0h", 122, -1},
    {kAllXcr0, "zmm31h", 153, -1},     {kAllXcr0, "pkru", 154, 2496},
};

// The placements listed for `xcr0`, in its layout `l`.
void check_placements(const RegisterLayout& l, std::uint64_t xcr0) {
    for (const Placement& p : kPlacements) {
        if (p.xcr0 != xcr0) continue;
        INFO(p.name);
        if (p.regnum >= 0) CHECK(l.find(p.name) == p.regnum);
        if (p.g_offset >= 0) CHECK(offset_of(l, p.name) == static_cast<std::uint32_t>(p.g_offset));
    }
}

} // namespace

TEST_CASE("x86-64 core+sse+linux+segments layout matches gdb's amd64-linux numbering") {
    RegisterLayout l(cpu_features_for_xcr0(kSseXcr0));
    CHECK(l.registers().size() == 60);
    CHECK(l.g_size() == 560);
    check_placements(l, kSseXcr0);
}

TEST_CASE("x86-64 AVX adds ymm0h-ymm15h after gs_base") {
    RegisterLayout l(cpu_features_for_xcr0(kAvxXcr0));
    CHECK(l.registers().size() == 76);
    CHECK(l.g_size() == 816);
    check_placements(l, kAvxXcr0);
}

TEST_CASE("x86-64 full XCR0 layout: mpx, avx512, pkeys in gdbserver's order") {
    RegisterLayout l(cpu_features_for_xcr0(kAllXcr0));
    CHECK(l.registers().size() == 155);
    CHECK(l.g_size() == 2500);
    check_placements(l, kAllXcr0);
    std::size_t sum = 0;
    for (const RegisterDesc& d : l.registers())
        sum += d.size;
    CHECK(sum == l.g_size());
}

TEST_CASE("x87 full tag word is rebuilt from the abridged tag and TOP") {
    std::vector<std::uint8_t> area(fxsave::kSize, 0);
    // TOP = 5: st0 is physical 5, st1 physical 6, st2 physical 7.
    put<std::uint16_t>(area, fxsave::kFsw, 5u << 11);
    area[fxsave::kFtw] = 0b1110'0000;
    // st0 = +0.0 (zero), st1 = 1.0 (valid), st2 = infinity (special).
    put<std::uint64_t>(area, fxsave::kSt0 + 16, 0x8000000000000000ull);
    put<std::uint16_t>(area, fxsave::kSt0 + 16 + 8, 0x3fff);
    put<std::uint64_t>(area, fxsave::kSt0 + 32, 0x8000000000000000ull);
    put<std::uint16_t>(area, fxsave::kSt0 + 32 + 8, 0x7fff);
    const std::uint16_t tag = full_x87_tag(area);
    CHECK(tag == ((0x3ffu) | (1u << 10) | (0u << 12) | (2u << 14)));
    CHECK(abridged_x87_tag(tag) == 0b1110'0000);
    CHECK(full_x87_tag(std::vector<std::uint8_t>(fxsave::kSize, 0)) == 0xffff);
}

TEST_CASE("x86-64 snapshot and g convert both ways, fields at the documented offsets") {
    X86_64Architecture arch(cpu_features_for_xcr0(kAvxXcr0));
    RegisterSnapshot s;
    s.gpr.assign(sizeof(user_regs_struct), 0);
    s.xstate.assign(arch.layout().cpu().xstate_size, 0);
    put<std::uint64_t>(s.gpr, offsetof(user_regs_struct, rax), 0x1122334455667788ull);
    put<std::uint64_t>(s.gpr, offsetof(user_regs_struct, rip), 0x401000);
    put<std::uint64_t>(s.gpr, offsetof(user_regs_struct, eflags), 0x246);
    put<std::uint64_t>(s.gpr, offsetof(user_regs_struct, orig_rax), ~0ull);
    put<std::uint16_t>(s.xstate, fxsave::kFcw, 0x37f);
    put<std::uint16_t>(s.xstate, fxsave::kFop, 0xf8d9); // only 11 bits are the opcode
    put<std::uint32_t>(s.xstate, fxsave::kMxcsr, 0x1f80);
    put<std::uint64_t>(s.xstate, fxsave::kXmm0, 0xabcdef);
    put<std::uint64_t>(s.xstate, 576 + 16, 0x5150); // ymm1h
    put<std::uint64_t>(s.xstate, kXstateBvOffset, 0x7);

    std::vector<std::uint8_t> g(arch.g_size());
    std::vector<bool> available;
    arch.snapshot_to_g(s, g, available);
    CHECK(std::count(available.begin(), available.end(), true) == 76);
    CHECK(get<std::uint64_t>(g, 0) == 0x1122334455667788ull);
    CHECK(get<std::uint64_t>(g, 128) == 0x401000);
    CHECK(get<std::uint32_t>(g, 136) == 0x246);
    CHECK(get<std::uint32_t>(g, 244) == 0x37f);
    CHECK(get<std::uint32_t>(g, 252) == 0xffff); // all empty
    CHECK(get<std::uint32_t>(g, 272) == (0xf8d9 & 0x7ff));
    CHECK(get<std::uint64_t>(g, 276) == 0xabcdef);
    CHECK(get<std::uint32_t>(g, 532) == 0x1f80);
    CHECK(get<std::uint64_t>(g, 536) == ~0ull);
    CHECK(get<std::uint64_t>(g, 576) == 0x5150);
    CHECK(arch.pc(s) == 0x401000);

    RegisterSnapshot back;
    back.gpr.assign(s.gpr.size(), 0);
    back.xstate.assign(s.xstate.size(), 0);
    put<std::uint64_t>(back.xstate, kXstateBvOffset, 0x7);
    arch.g_to_snapshot(g, back);
    CHECK(back.gpr == s.gpr);
    put<std::uint16_t>(s.xstate, fxsave::kFop, 0xf8d9 & 0x7ff);
    CHECK(back.xstate == s.xstate);
}

TEST_CASE("x86-64 registers missing from a snapshot are unavailable") {
    X86_64Architecture arch(cpu_features_for_xcr0(kAvxXcr0));
    std::vector<std::uint8_t> g(arch.g_size());
    std::vector<bool> available;

    RegisterSnapshot gpr_only;
    gpr_only.gpr.assign(sizeof(user_regs_struct), 0);
    arch.snapshot_to_g(gpr_only, g, available);
    CHECK(available[0]);
    CHECK(available[arch.layout().find("gs_base")]);
    CHECK_FALSE(available[arch.layout().find("st0")]);
    CHECK_FALSE(available[arch.layout().find("xmm0")]);

    // NT_PRFPREG fallback: legacy area only, no AVX.
    RegisterSnapshot fxsave_only;
    fxsave_only.xstate.assign(fxsave::kSize, 0);
    arch.snapshot_to_g(fxsave_only, g, available);
    CHECK_FALSE(available[0]);
    CHECK(available[arch.layout().find("xmm15")]);
    CHECK(available[arch.layout().find("mxcsr")]);
    CHECK_FALSE(available[arch.layout().find("ymm0h")]);
}

TEST_CASE("x86-64 XSAVE components in init state read as zero and go live when written") {
    X86_64Architecture arch(cpu_features_for_xcr0(kAvxXcr0));
    RegisterSnapshot s;
    s.gpr.assign(sizeof(user_regs_struct), 0);
    s.xstate.assign(arch.layout().cpu().xstate_size, 0);
    put<std::uint64_t>(s.xstate, 576, 0xdead); // stale bytes, AVX bit clear
    put<std::uint64_t>(s.xstate, kXstateBvOffset, 0x3);

    std::vector<std::uint8_t> g(arch.g_size());
    std::vector<bool> available;
    arch.snapshot_to_g(s, g, available);
    const std::uint32_t ymm0h = offset_of(arch.layout(), "ymm0h");
    const std::uint32_t ymm3h = offset_of(arch.layout(), "ymm3h");
    CHECK(available[arch.layout().find("ymm0h")]);
    CHECK(get<std::uint64_t>(g, ymm0h) == 0);

    // Writing zeros leaves the component in init state...
    arch.g_to_snapshot(g, s);
    CHECK(get<std::uint64_t>(s.xstate, kXstateBvOffset) == 0x3);
    // ...a value makes it live, with its other registers zero rather than stale.
    put<std::uint64_t>(g, ymm3h, 0x77);
    arch.g_to_snapshot(g, s);
    CHECK(get<std::uint64_t>(s.xstate, kXstateBvOffset) == 0x7);
    CHECK(get<std::uint64_t>(s.xstate, 576) == 0);
    CHECK(get<std::uint64_t>(s.xstate, 576 + 3 * 16) == 0x77);
}

TEST_CASE("x86-64 breakpoint instruction and expedited registers") {
    const Architecture& arch = host_architecture();
    REQUIRE(arch.breakpoint_instruction().size() == 1);
    CHECK(arch.breakpoint_instruction()[0] == 0xCC);
    CHECK(arch.pc_after_breakpoint(0x1000) == 0x1001);
    CHECK(arch.pc_regnum() == 16);
    const auto exp = arch.expedited_registers();
    CHECK(std::vector<int>(exp.begin(), exp.end()) == std::vector<int>{6, 7, 16});
    CHECK_FALSE(arch.feature_xml("64bit-core.xml").has_value());
}

// A pad's XSAVE area on the thread's stack: components XSTATE_BV marks as in their initial
// state hold the stack's old bytes (XSAVE need not write them) and the software bytes are
// not the kernel's. Decoded, such components read as their initial values, the others as
// saved, and only the registers the state holds are written into g.
TEST_CASE("x86-64 a fast pad's saved state decodes with its initial components reset") {
    const X86_64Architecture arch(detect_cpu_features()); // the pads save this CPU's state
    const auto saved = arch.fast_saved_state();
    REQUIRE(saved.bytes >= fxsave::kSize);
    if (saved.bytes < kXsaveHeaderEnd) {
        tpagent::test::skip("no XSAVE here, and FXSAVE writes every byte");
        return;
    }
    const auto regs = arch.registers();
    const auto at = [&](const char* name) {
        const int r = arch.layout().find(name);
        REQUIRE(r >= 0);
        return regs[static_cast<std::size_t>(r)];
    };
    std::vector<std::uint8_t> area(saved.bytes, 0xab);
    std::fill(area.begin() + kXstateBvOffset, area.begin() + kXsaveHeaderEnd, 0); // the pad's
    put<std::uint32_t>(area, fxsave::kMxcsr, 0x9f80); // written whatever XSTATE_BV says
    std::vector<std::uint8_t> g(arch.g_size(), 0x5a);
    std::vector<bool> placed;
    // x87 and SSE at rest: their stale bytes are not what gdb gets.
    arch.fast_saved_state_to_g(area, g, placed);
    CHECK(get<std::uint32_t>(g, at("fctrl").g_offset) == 0x37f);
    CHECK(get<std::uint32_t>(g, at("ftag").g_offset) == 0xffff);
    CHECK(get<std::uint64_t>(g, at("st0").g_offset) == 0);
    CHECK(get<std::uint64_t>(g, at("xmm3").g_offset) == 0);
    CHECK(get<std::uint32_t>(g, at("mxcsr").g_offset) == 0x9f80);
    CHECK(placed[static_cast<std::size_t>(arch.layout().find("xmm3"))]);
    // The general registers are not the state's: left as they were, not marked.
    CHECK(get<std::uint64_t>(g, at("rax").g_offset) == 0x5a5a5a5a5a5a5a5a);
    CHECK_FALSE(placed[static_cast<std::size_t>(arch.layout().find("rax"))]);
    // SSE live: xmm3 is what was saved.
    put<std::uint64_t>(area, kXstateBvOffset, 1u << kSse);
    put<std::uint64_t>(area, fxsave::kXmm0 + 3 * 16, 0x1122334455667788);
    arch.fast_saved_state_to_g(area, g, placed);
    CHECK(get<std::uint64_t>(g, at("xmm3").g_offset) == 0x1122334455667788);
    CHECK(get<std::uint32_t>(g, at("fctrl").g_offset) == 0x37f);
}
