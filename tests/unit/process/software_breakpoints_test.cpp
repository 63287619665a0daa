#include "process/linux/software_breakpoints.hpp"
#include <catch2/catch.hpp>
#include <cstring>

using namespace tpagent;
using namespace tpagent::process;

namespace {
constexpr std::uint64_t kBase = 0x1000;
constexpr std::uint8_t kTrap = 0xcc;

// A page of code and the breakpoints over it, writes counted.
struct Code {
    std::vector<std::uint8_t> bytes = std::vector<std::uint8_t>(64, 0x90);
    int writes = 0;
    SoftwareBreakpoints breakpoints{
        std::vector<std::uint8_t>{kTrap},
        [this](std::uint64_t a, std::span<std::uint8_t> out) {
            std::memcpy(out.data(), bytes.data() + (a - kBase), out.size());
            return ok_status();
        },
        [this](std::uint64_t a, std::span<const std::uint8_t> in) {
            std::memcpy(bytes.data() + (a - kBase), in.data(), in.size());
            ++writes;
            return ok_status();
        }};
    std::uint8_t seen(std::uint64_t a) const {
        std::uint8_t b = bytes[a - kBase];
        breakpoints.unshadow(a, std::span(&b, 1));
        return b;
    }
};
} // namespace

TEST_CASE("A breakpoint shows and gives back the program's byte", "[breakpoints]") {
    Code code;
    code.bytes[4] = 0x55;
    REQUIRE(code.breakpoints.insert(kBase + 4));
    CHECK(code.bytes[4] == kTrap);
    CHECK(code.seen(kBase + 4) == 0x55);
    REQUIRE(code.breakpoints.insert(kBase + 4)); // a second reference
    REQUIRE(code.breakpoints.remove(kBase + 4));
    CHECK(code.bytes[4] == kTrap);
    REQUIRE(code.breakpoints.remove(kBase + 4));
    CHECK(code.bytes[4] == 0x55);
}

TEST_CASE("Code replaced under a breakpoint is never overwritten with the old bytes",
          "[breakpoints]") {
    Code code;
    code.bytes[8] = 0x55;
    REQUIRE(code.breakpoints.insert(kBase + 8));
    // A library unloaded and another mapped there: the trap is gone, new code in its place.
    code.bytes[8] = 0xf3;
    CHECK(code.seen(kBase + 8) == 0xf3); // the new code, not the old byte saved
    const int writes = code.writes;
    REQUIRE(code.breakpoints.remove(kBase + 8));
    CHECK(code.bytes[8] == 0xf3);
    CHECK(code.writes == writes);
    CHECK_FALSE(code.breakpoints.inserted_at(kBase + 8));
}

TEST_CASE("Inserted again over replaced code, a breakpoint goes into the new code",
          "[breakpoints]") {
    Code code;
    code.bytes[8] = 0x55;
    REQUIRE(code.breakpoints.insert(kBase + 8));
    code.bytes[8] = 0xf3;
    REQUIRE(code.breakpoints.insert(kBase + 8));
    CHECK(code.bytes[8] == kTrap);
    CHECK(code.seen(kBase + 8) == 0xf3);
    REQUIRE(code.breakpoints.remove(kBase + 8));
    REQUIRE(code.breakpoints.remove(kBase + 8));
    CHECK(code.bytes[8] == 0xf3);
}

TEST_CASE("A lifted breakpoint is not taken for replaced code", "[breakpoints]") {
    Code code;
    code.bytes[2] = 0x55;
    REQUIRE(code.breakpoints.insert(kBase + 2));
    REQUIRE(code.breakpoints.lift(kBase + 2));
    CHECK(code.bytes[2] == 0x55);
    CHECK(code.seen(kBase + 2) == 0x55);
    REQUIRE(code.breakpoints.insert(kBase + 2)); // while lifted: stays lifted
    CHECK(code.bytes[2] == 0x55);
    REQUIRE(code.breakpoints.lower(kBase + 2));
    CHECK(code.bytes[2] == kTrap);
    REQUIRE(code.breakpoints.remove(kBase + 2));
    REQUIRE(code.breakpoints.remove(kBase + 2));
    CHECK(code.bytes[2] == 0x55);
}

TEST_CASE("Taking every breakpoint out leaves replaced code alone", "[breakpoints]") {
    Code code;
    code.bytes[1] = 0x11;
    code.bytes[3] = 0x33;
    REQUIRE(code.breakpoints.insert(kBase + 1));
    REQUIRE(code.breakpoints.insert(kBase + 3));
    code.bytes[3] = 0x44; // replaced
    code.breakpoints.remove_all();
    CHECK(code.bytes[1] == 0x11);
    CHECK(code.bytes[3] == 0x44);
}
