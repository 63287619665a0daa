// The arm64 register layouts and target descriptions, checked on any host: the host's own (no
// pauth or SVE on x86-64), and layouts made for CPUs with pointer authentication and SVE.
#include "arch/aarch64/registers.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <regex>
#include <string>

namespace a64 = tpagent::arch::aarch64;

namespace {
// Every register the description names, in regnum order, with the layout's sizes.
void check_xml_matches(const a64::Layout& layout) {
    const auto& regs = layout.regs;
    const std::string xml = a64::target_xml(layout);
    const std::regex reg(R"re(<reg name="(\w+)" bitsize="(\d+)")re");
    std::size_t n = 0;
    for (auto it = std::sregex_iterator(xml.begin(), xml.end(), reg); it != std::sregex_iterator();
         ++it, ++n) {
        REQUIRE(n < regs.size());
        CHECK((*it)[1] == regs[n].name);
        CHECK(std::stoul((*it)[2]) == regs[n].size * 8);
    }
    CHECK(n == regs.size());
}
} // namespace

TEST_CASE("aarch64 g layout: gdbserver's 788 bytes, then tpidr", "[arch][aarch64]") {
    const auto layout = a64::make_layout(0, false); // its names outlive the checks
    const auto& regs = layout.regs;
    REQUIRE(regs.size() == 69);
    CHECK(std::string(regs[a64::kPcRegnum].name) == "pc");
    CHECK(regs[a64::kCpsrRegnum].size == 4);
    CHECK(regs[a64::kFirstVRegnum].g_offset == 33 * 8 + 4);
    CHECK(regs[a64::kFpcrRegnum].g_offset + 4 == 788);
    CHECK(std::string(regs.back().name) == "tpidr");
    CHECK(a64::make_layout(0, false).g_size == 796);
    check_xml_matches(a64::make_layout(0, false));
    const std::string xml = a64::target_xml(a64::make_layout(0, false));
    CHECK(xml.find(R"(<field name="BTYPE" start="10" end="11"/>)") < xml.find(R"(name="SSBS")"));
}

TEST_CASE("aarch64 registers: a snapshot and the g block round-trip", "[arch][aarch64]") {
    tpagent::arch::RegisterSnapshot s;
    s.gpr.assign(a64::kGprBytes, 0);
    s.xstate.assign(a64::kXstateBytes, 0);
    for (std::size_t i = 0; i < a64::kPtRegsBytes; ++i)
        s.gpr[i] = static_cast<std::uint8_t>(i);
    for (std::size_t i = 0; i < s.xstate.size(); ++i)
        s.xstate[i] = static_cast<std::uint8_t>(i * 3);
    std::vector<std::uint8_t> g(a64::make_layout(0, false).g_size);
    std::vector<bool> available;
    const auto layout = a64::make_layout(0, false);
    a64::snapshot_to_g(layout, s, g, available);
    CHECK(std::count(available.begin(), available.end(), true) == 69);
    CHECK(a64::x(s, a64::kPcRegnum) == a64::x(s, 32));
    std::uint64_t sp = 0;
    std::memcpy(&sp, g.data() + 31 * 8, 8);
    CHECK(sp == a64::x(s, a64::kSpRegnum));

    tpagent::arch::RegisterSnapshot back;
    back.gpr.assign(a64::kGprBytes, 0xee);
    back.xstate.assign(a64::kXstateBytes, 0);
    a64::g_to_snapshot(layout, g, back);
    CHECK(std::equal(back.gpr.begin(), back.gpr.begin() + 33 * 8 + 4, s.gpr.begin()));
    CHECK(std::equal(back.xstate.begin(), back.xstate.begin() + 32 * 16 + 8, s.xstate.begin()));
}

TEST_CASE("aarch64 with SVE and pauth: gdb's sve feature replaces fpu", "[arch][aarch64]") {
    const auto layout = a64::make_layout(64, true);
    const auto& regs = layout.regs;
    REQUIRE(regs.size() == 34 + 32 + 2 + 17 + 1 + 2 + 1);
    CHECK(std::string(regs[a64::kFirstVRegnum].name) == "z0");
    CHECK(regs[a64::kFirstVRegnum].size == 64);
    CHECK(std::string(regs[a64::kFpsrRegnum].name) == "fpsr");
    CHECK(std::string(regs[a64::kFirstPRegnum].name) == "p0");
    CHECK(regs[a64::kFirstPRegnum].size == 8);
    CHECK(std::string(regs[a64::kFirstPRegnum + 16].name) == "ffr");
    CHECK(std::string(regs[a64::kFirstPRegnum + 17].name) == "vg");
    CHECK(std::string(regs[layout.pauth_regnum].name) == "pauth_dmask");
    CHECK(layout.g_size == 33 * 8 + 4 + 32 * 64 + 8 + 17 * 8 + 8 + 16 + 8);
    check_xml_matches(layout);
    const std::string xml = a64::target_xml(layout);
    CHECK(xml.find("org.gnu.gdb.aarch64.fpu") == std::string::npos);
    CHECK(xml.find(R"(<vector id="svevdf" type="ieee_double" count="8"/>)") != std::string::npos);
    CHECK(xml.find(R"(<vector id="svep" type="uint8" count="8"/>)") != std::string::npos);
}

namespace {
// An NT_ARM_SVE payload of vector length 64 in SVE mode: each byte of z, p, ffr numbered.
std::vector<std::uint8_t> sve_mode_regset() {
    std::vector<std::uint8_t> r(16 + 32 * 64 + 17 * 8 + 8 + 8, 0);
    const std::uint16_t vl = 64, flags = 1;
    std::memcpy(r.data() + 8, &vl, 2);
    std::memcpy(r.data() + 12, &flags, 2);
    for (std::size_t i = 16; i < 16 + 32 * 64 + 17 * 8; ++i)
        r[i] = static_cast<std::uint8_t>(i * 7 + 1);
    return r;
}
} // namespace

TEST_CASE("aarch64 SVE state: regset, snapshot, g and back", "[arch][aarch64]") {
    const auto layout = a64::make_layout(64, false);
    tpagent::arch::RegisterSnapshot s;
    s.gpr.assign(a64::kGprBytes, 0);
    s.xstate.assign(a64::kXstateBytes, 0);
    const auto regset = sve_mode_regset();
    a64::sve_from_regset(layout, regset, s);
    REQUIRE(s.xstate.size() == layout.xstate_bytes);

    std::vector<std::uint8_t> g(layout.g_size);
    std::vector<bool> available;
    a64::snapshot_to_g(layout, s, g, available);
    CHECK(std::count(available.begin(), available.end(), true) ==
          static_cast<long>(layout.regs.size()));
    const auto& z1 = layout.regs[a64::kFirstVRegnum + 1];
    CHECK(std::equal(g.begin() + z1.g_offset, g.begin() + z1.g_offset + 64,
                     regset.begin() + 16 + 64));
    const auto& ffr = layout.regs[a64::kFirstPRegnum + 16];
    CHECK(std::equal(g.begin() + ffr.g_offset, g.begin() + ffr.g_offset + 8,
                     regset.begin() + 16 + 32 * 64 + 16 * 8));
    std::uint64_t vg = 0;
    std::memcpy(&vg, g.data() + layout.regs[a64::kFirstPRegnum + 17].g_offset, 8);
    CHECK(vg == 8);

    // gdb writes z1: the snapshot's v1 is its low half, and NT_ARM_SVE carries all of it.
    for (std::size_t i = 0; i < 64; ++i)
        g[z1.g_offset + i] = static_cast<std::uint8_t>(0xa0 + i);
    a64::g_to_snapshot(layout, g, s);
    CHECK(s.xstate[16] == 0xa0);
    CHECK(s.xstate[31] == 0xaf);
    const auto out = a64::sve_to_regset(layout, s);
    REQUIRE(out.size() >= regset.size());
    CHECK(out[16 + 64] == 0xa0);
    CHECK(out[16 + 64 + 63] == static_cast<std::uint8_t>(0xa0 + 63));
    CHECK(std::equal(out.begin() + 16 + 128, out.begin() + 16 + 32 * 64 + 17 * 8,
                     regset.begin() + 16 + 128));
}

TEST_CASE("aarch64 SVE state: FP/SIMD mode and another vector length", "[arch][aarch64]") {
    const auto layout = a64::make_layout(64, false);
    tpagent::arch::RegisterSnapshot s;
    s.gpr.assign(a64::kGprBytes, 0);
    s.xstate.assign(a64::kXstateBytes, 0);
    std::vector<std::uint8_t> fpsimd_mode(16 + 528, 0);
    const std::uint16_t vl = 64;
    std::memcpy(fpsimd_mode.data() + 8, &vl, 2);
    for (std::size_t i = 16; i < fpsimd_mode.size(); ++i)
        fpsimd_mode[i] = 0x55;
    a64::sve_from_regset(layout, fpsimd_mode, s);
    std::vector<std::uint8_t> g(layout.g_size);
    std::vector<bool> available;
    a64::snapshot_to_g(layout, s, g, available);
    const auto& z0 = layout.regs[a64::kFirstVRegnum];
    CHECK(g[z0.g_offset + 15] == 0x55);
    CHECK(g[z0.g_offset + 16] == 0); // above v: zero
    CHECK(available[a64::kFirstVRegnum]);

    // A thread that changed its vector length: z, p, ffr unavailable; vg says what it has.
    std::vector<std::uint8_t> other(16 + 528, 0);
    const std::uint16_t vl32 = 32;
    std::memcpy(other.data() + 8, &vl32, 2);
    a64::sve_from_regset(layout, other, s);
    a64::snapshot_to_g(layout, s, g, available);
    CHECK_FALSE(available[a64::kFirstVRegnum]);
    CHECK_FALSE(available[a64::kFirstPRegnum + 16]);
    CHECK(available[a64::kFirstPRegnum + 17]);
    std::uint64_t vg = 0;
    std::memcpy(&vg, g.data() + layout.regs[a64::kFirstPRegnum + 17].g_offset, 8);
    CHECK(vg == 4);
    CHECK(a64::sve_to_regset(layout, s).empty());
}
