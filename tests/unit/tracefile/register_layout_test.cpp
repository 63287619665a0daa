#include "tools/tracefile/register_layout.hpp"
#include <catch2/catch.hpp>

using namespace tpagent;
using namespace tpagent::tracefile;

TEST_CASE("registers are laid out in regnum order, regnum defaulting to the previous + 1") {
    auto layout = parse_register_layout(R"(<?xml version="1.0"?>
<target><architecture>i386:x86-64</architecture>
  <!-- <reg name="commented" bitsize="64"/> -->
  <feature name="b"><reg name='c' bitsize="32" regnum="2"/><reg name="d" bitsize="16"/></feature>
  <feature name="a"><reg name="a" bitsize="64" type="code_ptr"/>
    <reg
      name="b" bitsize="8"/>
  </feature>
  <regs-are-not-reg name="x"/>
</target>)");
    REQUIRE(layout.ok());
    CHECK(layout->architecture == "i386:x86-64");
    REQUIRE(layout->registers.size() == 4);
    // c=2, d=3, a=4, b=5 in document order; sorted by regnum that is the same order.
    CHECK(layout->registers[0].name == "c");
    CHECK(layout->registers[1].name == "d");
    CHECK(layout->registers[1].regnum == 3);
    CHECK(layout->registers[2].name == "a");
    CHECK(layout->registers[2].type == "code_ptr");
    CHECK(layout->registers[2].offset == 6);
    CHECK(layout->registers[3].offset == 14);
    CHECK(layout->block_size() == 15);
    CHECK(layout->register_count() == 6);
    CHECK(layout->pc() == nullptr);
}

TEST_CASE("out-of-order regnums are sorted") {
    auto layout = parse_register_layout(
        R"(<reg name="pc" bitsize="64" regnum="1"/><reg name="sp" bitsize="32" regnum="0"/>)");
    REQUIRE(layout.ok());
    CHECK(layout->registers[0].name == "sp");
    CHECK(layout->pc()->offset == 4);
    std::uint8_t block[12] = {0, 0, 0, 0, 0x44, 0x33, 0x22, 0x11, 0, 0, 0, 0x80};
    CHECK(register_value(*layout->pc(), block) == 0x8000000011223344);
    CHECK_FALSE(register_value(*layout->pc(), std::span(block, 11)));
}

TEST_CASE("bad register descriptions") {
    for (const char* xml : {
             R"(<reg name="a"/>)",                         // no bitsize
             R"(<reg bitsize="8"/>)",                      // no name
             R"(<reg name="a" bitsize="7"/>)",             // not whole bytes
             R"(<reg name="a" bitsize="99999999999"/>)",   // absurd
             R"(<reg name="a" bitsize="8" regnum="-1"/>)", // bad regnum
             R"(<reg name="a" bitsize="8"/><reg name="b" bitsize="8" regnum="0"/>)", // twice
             R"(<reg name="a" bitsize="8")",        // unterminated tag
             R"(<reg name="a" bitsize="8/>)",       // unterminated value
             R"(<reg name bitsize="8"/>)",          // attribute without value
             R"(<!-- <reg name="a" bitsize="8"/>)", // unterminated comment
         }) {
        INFO(xml);
        auto r = parse_register_layout(xml);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().text.find("target description offset") == 0);
    }
}
