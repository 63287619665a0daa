// The arm64 register layout and target description, checked on any host (no pauth here:
// has_pauth() reads this CPU's capabilities, and an x86-64 host has none).
#include "arch/aarch64/registers.hpp"

#include <catch2/catch.hpp>

#include <cstring>
#include <regex>
#include <string>

namespace a64 = tpagent::arch::aarch64;

TEST_CASE("aarch64 g layout: gdbserver's 788 bytes, then tpidr", "[arch][aarch64]") {
    const auto regs = a64::registers();
    REQUIRE(regs.size() == 69);
    CHECK(std::string(regs[a64::kPcRegnum].name) == "pc");
    CHECK(regs[a64::kCpsrRegnum].size == 4);
    CHECK(regs[a64::kFirstVRegnum].g_offset == 33 * 8 + 4);
    CHECK(regs[a64::kFpcrRegnum].g_offset + 4 == 788);
    CHECK(std::string(regs.back().name) == "tpidr");
    CHECK(a64::g_size() == 796);

    // Every register the description names, in regnum order, with the layout's sizes.
    const std::string xml = a64::target_xml();
    const std::regex reg(R"re(<reg name="(\w+)" bitsize="(\d+)")re");
    std::size_t n = 0;
    for (auto it = std::sregex_iterator(xml.begin(), xml.end(), reg); it != std::sregex_iterator();
         ++it, ++n) {
        REQUIRE(n < regs.size());
        CHECK((*it)[1] == regs[n].name);
        CHECK(std::stoul((*it)[2]) == regs[n].size * 8);
    }
    CHECK(n == regs.size());
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
    std::vector<std::uint8_t> g(a64::g_size());
    std::vector<bool> available;
    a64::snapshot_to_g(s, g, available);
    CHECK(std::count(available.begin(), available.end(), true) == 69);
    CHECK(a64::x(s, a64::kPcRegnum) == a64::x(s, 32));
    std::uint64_t sp = 0;
    std::memcpy(&sp, g.data() + 31 * 8, 8);
    CHECK(sp == a64::x(s, a64::kSpRegnum));

    tpagent::arch::RegisterSnapshot back;
    back.gpr.assign(a64::kGprBytes, 0xee);
    back.xstate.assign(a64::kXstateBytes, 0);
    a64::g_to_snapshot(g, back);
    CHECK(std::equal(back.gpr.begin(), back.gpr.begin() + 33 * 8 + 4, s.gpr.begin()));
    CHECK(std::equal(back.xstate.begin(), back.xstate.begin() + 32 * 16 + 8, s.xstate.begin()));
}
