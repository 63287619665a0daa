#include "protocol/hex.hpp"
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <random>

using namespace tpagent;
using namespace tpagent::protocol;

TEST_CASE("hex_digit_value", "[hex]") {
    CHECK(hex_digit_value('0') == 0);
    CHECK(hex_digit_value('9') == 9);
    CHECK(hex_digit_value('a') == 10);
    CHECK(hex_digit_value('f') == 15);
    CHECK(hex_digit_value('A') == 10);
    CHECK(hex_digit_value('F') == 15);
    for (char c : {'g', 'G', 'x', ' ', '-', '/', ':', '@', '`', '\0', '\xff'}) {
        INFO(static_cast<int>(c));
        CHECK(hex_digit_value(c) == -1);
    }
}

TEST_CASE("parse_hex_u64", "[hex]") {
    SECTION("accepted") {
        CHECK(*parse_hex_u64("0") == 0);
        CHECK(*parse_hex_u64("1234") == 0x1234);
        CHECK(*parse_hex_u64("deadBEEF") == 0xdeadbeef);
        CHECK(*parse_hex_u64("FFFF") == 0xffff);
        CHECK(*parse_hex_u64("ffffffffffffffff") == std::numeric_limits<std::uint64_t>::max());
        CHECK(*parse_hex_u64("1000000000000000") == 0x1000000000000000);
        // Leading zeros are padding, not significant digits.
        CHECK(*parse_hex_u64("00000000000000000000000001") == 1);
        CHECK(*parse_hex_u64("0000000000000000ffffffffffffffff") ==
              std::numeric_limits<std::uint64_t>::max());
        CHECK(*parse_hex_u64("00000000000000000000") == 0);
    }
    SECTION("rejected") {
        for (std::string_view s : {"", "10000000000000000", "ffffffffffffffff0", "-1", "0x10", " 1",
                                   "1 ", "12g", "g", ",", "1,2", "+1", "00000000000000000g"}) {
            INFO('"' << s << '"');
            auto r = parse_hex_u64(s);
            REQUIRE_FALSE(r.ok());
            CHECK(r.error().code == ErrorCode::BadPacket);
        }
    }
    SECTION("round-trips hex_u64") {
        std::mt19937_64 rng(7);
        for (int i = 0; i < 1000; ++i) {
            std::uint64_t v = rng() >> (rng() % 64);
            CHECK(*parse_hex_u64(hex_u64(v)) == v);
        }
    }
}

TEST_CASE("parse_hex_i64", "[hex]") {
    CHECK(*parse_hex_i64("-1") == -1);
    CHECK(*parse_hex_i64("1") == 1);
    CHECK(*parse_hex_i64("-0") == 0);
    CHECK(*parse_hex_i64("-10") == -16);
    CHECK(*parse_hex_i64("7fffffffffffffff") == std::numeric_limits<std::int64_t>::max());
    CHECK(*parse_hex_i64("-8000000000000000") == std::numeric_limits<std::int64_t>::min());
    CHECK(*parse_hex_i64("ffffffffffffffff") == -1); // two's complement, as gdb sends it
    CHECK(*parse_hex_i64("-0001") == -1);
    for (std::string_view s : {"", "-", "--1", "1-", "-g", "-10000000000000000", "+1"}) {
        INFO('"' << s << '"');
        CHECK_FALSE(parse_hex_i64(s).ok());
    }
}

TEST_CASE("hex_u64 is minimal lower-case", "[hex]") {
    CHECK(hex_u64(0) == "0");
    CHECK(hex_u64(1) == "1");
    CHECK(hex_u64(0x10) == "10");
    CHECK(hex_u64(0xdeadbeef) == "deadbeef");
    CHECK(hex_u64(std::numeric_limits<std::uint64_t>::max()) == "ffffffffffffffff");
}

TEST_CASE("to_hex / from_hex / hex_to_text", "[hex]") {
    std::vector<std::uint8_t> bytes{0x00, 0x0a, 0x1b, 0xff, 0x7d};
    CHECK(to_hex(bytes) == "000a1bff7d");
    CHECK(to_hex(std::string_view("OK")) == "4f4b");
    CHECK(to_hex(std::string_view("")).empty());

    std::string out = "m";
    append_hex(out, bytes);
    CHECK(out == "m000a1bff7d");

    CHECK(*from_hex("000A1bFF7d") == bytes);
    CHECK(from_hex("")->empty());
    CHECK(*hex_to_text("4f4b") == "OK");
    CHECK(*hex_to_text("2f746d70") == "/tmp");
    CHECK(hex_to_text("")->empty());

    for (std::string_view s : {"0", "abc", "zz", "0g", "g0", " 0", "0x"}) {
        INFO('"' << s << '"');
        CHECK_FALSE(from_hex(s).ok());
        CHECK_FALSE(hex_to_text(s).ok());
    }

    std::vector<std::uint8_t> all(256);
    for (int i = 0; i < 256; ++i)
        all[i] = static_cast<std::uint8_t>(i);
    CHECK(*from_hex(to_hex(all)) == all);
}

TEST_CASE("split keeps empty fields", "[hex]") {
    using V = std::vector<std::string_view>;
    CHECK(split("a,b,c", ',') == V{"a", "b", "c"});
    CHECK(split("a,,b", ',') == V{"a", "", "b"});
    CHECK(split("", ',') == V{""});
    CHECK(split(",", ',') == V{"", ""});
    CHECK(split("abc", ',') == V{"abc"});
    CHECK(split("a;b,c", ';') == V{"a", "b,c"});
}

TEST_CASE("trim drops white space at both ends only", "[hex]") {
    CHECK(trim("  a b\t\n") == "a b");
    CHECK(trim("ab") == "ab");
    CHECK(trim(" \t ").empty());
    CHECK(trim("").empty());
}
