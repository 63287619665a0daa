// Where a trap or a jump would break a load-exclusive/store-exclusive sequence: on real code
// (assembled by GNU as), at every instruction, with short windows at a page's edge.
#include "arch/aarch64/exclusive_sequence.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <set>
#include <vector>

namespace a64 = tpagent::arch::aarch64;

namespace {

constexpr std::uint64_t kBase = 0x400000;
// retry: ldaxr x2,[x0]; add x2,x2,x1; stlxr w3,x2,[x0]; cbnz w3,retry; mov x0,x2; ret
// cas:   ldaxr w4,[x0]; cmp w4,w1; b.ne out; stlxr w5,w2,[x0]; cbnz w5,cas
// out:   mov w0,w4; ldxp x6,x7,[x0]; stxp w8,x6,x7,[x0]
//        ldxr x9,[x0]; clrex; ldxr x9,[x0]; ret; ldxr x9,[x0]; b out; stxr w1,x2,[x0]
constexpr std::array<std::uint32_t, 21> kCode = {
    0xc85ffc02, 0x8b010042, 0xc803fc02, 0x35ffffa3, 0xaa0203e0, 0xd65f03c0, 0x885ffc04,
    0x6b01009f, 0x54000061, 0x8805fc02, 0x35ffff85, 0x2a0403e0, 0xc87f1c06, 0xc8281c06,
    0xc85f7c09, 0xd5033f5f, 0xc85f7c09, 0xd65f03c0, 0xc85f7c09, 0x17fffff8, 0xc8017c02};

std::vector<std::uint8_t> bytes() {
    std::vector<std::uint8_t> out(kCode.size() * 4);
    std::memcpy(out.data(), kCode.data(), out.size());
    return out;
}

} // namespace

TEST_CASE("aarch64 exclusive sequences: inside from after the load to the store",
          "[arch][aarch64]") {
    const auto code = bytes();
    // After a load-exclusive, up to and including its store-exclusive.
    const std::set<std::uint64_t> inside = {0x4, 0x8, 0x1c, 0x20, 0x24, 0x34};
    for (std::uint64_t off = 0; off < code.size(); off += 4) {
        INFO("offset 0x" << std::hex << off);
        const std::span<const std::uint8_t> all(code);
        auto hazard = a64::inside_exclusive_sequence(kBase + off, all.first(off), all.subspan(off));
        CHECK(hazard.has_value() == inside.count(off) > 0);
    }
    auto said = a64::inside_exclusive_sequence(kBase + 0x20, std::span(code).first(0x20),
                                               std::span(code).subspan(0x20));
    REQUIRE(said);
    CHECK(said->find("0x400020 is inside the load-exclusive/store-exclusive sequence from "
                     "0x400018 to 0x400024") != std::string::npos);
}

TEST_CASE("aarch64 exclusive sequences: what the windows do not show", "[arch][aarch64]") {
    const auto code = bytes();
    const std::span<const std::uint8_t> all(code);
    // No code before (a page's first instruction), or none after: nothing is known to be open.
    CHECK_FALSE(a64::inside_exclusive_sequence(kBase + 4, {}, all.subspan(4)));
    CHECK_FALSE(a64::inside_exclusive_sequence(kBase + 4, all.first(4), {}));
    // Whole instructions only: a window that starts mid-instruction skips the part.
    CHECK(a64::inside_exclusive_sequence(kBase + 4, all.first(4), all.subspan(4, 10)));
    std::vector<std::uint8_t> ragged = {0xaa};
    ragged.insert(ragged.end(), code.begin(), code.begin() + 4);
    CHECK(a64::inside_exclusive_sequence(kBase + 4, ragged, all.subspan(4)));
}

TEST_CASE("aarch64 exclusive sequences: a stepped load-exclusive, and what is no exclusive",
          "[arch][aarch64]") {
    const auto code = bytes();
    const std::span<const std::uint8_t> all(code);
    // A trap stepped over in place on the load stops right after it: that breaks it too.
    CHECK_FALSE(a64::inside_exclusive_sequence(kBase, {}, all));
    auto stepped = a64::inside_exclusive_sequence(kBase, {}, all, true);
    REQUIRE(stepped);
    CHECK(stepped->find("0x400000 is the load-exclusive of the sequence to 0x400008") !=
          std::string::npos);
    CHECK(a64::inside_exclusive_sequence(kBase + 4, all.first(4), all.subspan(4), true));
    CHECK_FALSE(a64::inside_exclusive_sequence(kBase + 0x10, all.first(0x10), all.subspan(0x10),
                                               true)); // after the store
    // CASP, CASPA, CASPL, CASPAL share the encoding space; byte and halfword forms count.
    for (std::uint32_t casp : {0x48207c82u, 0x48607c82u, 0x4820fc82u, 0x0860fc82u}) {
        INFO(std::hex << casp);
        CHECK_FALSE(a64::load_exclusive(casp));
        CHECK_FALSE(a64::store_exclusive(casp));
    }
    CHECK(a64::load_exclusive(0x085f7c01));  // ldxrb w1, [x0]
    CHECK(a64::store_exclusive(0x4802fc01)); // stlxrh w2, w1, [x0]
}
