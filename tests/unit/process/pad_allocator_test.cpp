#include "process/linux/pad_allocator.hpp"
#include <catch2/catch.hpp>

using namespace tpagent;
using namespace tpagent::process;

// The end of an x86-64 process's address space (47 bits), where these maps come from.
constexpr std::uint64_t kTop = 0x7ffffffff000;

TEST_CASE("parse_maps reads the ranges of /proc/PID/maps, sorted", "[pad]") {
    auto maps =
        parse_maps("555555556000-555555557000 r-xp 00001000 08:01 42 /bin/prog\n"
                   "555555554000-555555556000 r--p 00000000 08:01 42 /bin/prog\n"
                   "garbage line\n"
                   "7ffff7fc3000-7ffff7fc7000 r--p 00000000 00:00 0          [vvar]\n"
                   "7ffff7fc8000-7ffff7fc9000 ---p 00000000 00:00 0\n"
                   "7ffff7fd0000-7ffff7fd1000 rw-s 00000000 00:01 7 /memfd:a b (deleted)\n");
    REQUIRE(maps.size() == 5);
    CHECK(maps[0].start == 0x555555554000);
    CHECK(maps[1].end == 0x555555557000);
    CHECK(maps[2].start == 0x7ffff7fc3000);
    CHECK(maps[0].name == "/bin/prog");
    CHECK(maps[2].name == "[vvar]");
    CHECK(maps[2].readable);
    CHECK_FALSE(maps[3].readable);
    CHECK(maps[3].name.empty());
    CHECK(maps[4].name == "/memfd:a b (deleted)");
    // The permissions and the file: what a trace frame may read from the live program.
    CHECK((maps[0].inode == 42 && maps[0].offset == 0 && !maps[0].writable && !maps[0].shared));
    CHECK(maps[1].offset == 0x1000);
    CHECK((maps[2].inode == 0 && !maps[2].writable));
    CHECK((maps[4].writable && maps[4].shared && maps[4].inode == 7));
}

TEST_CASE("find_free_range picks the gap closest to the code", "[pad]") {
    std::vector<MappedRange> mapped{
        {0x400000, 0x401000}, {0x500000, 0x600000}, {0x601000, 0x700000}};
    // Between the two upper mappings there is exactly one free page, right next to the code.
    auto at = find_free_range(mapped, 0x600800 - 0x800, 0x1000, 0x7fff0000, kTop);
    REQUIRE(at);
    CHECK(*at == 0x600000);
    // Code at 0x400000: the closest free page is just below it.
    at = find_free_range(mapped, 0x400000, 0x1000, 0x7fff0000, kTop);
    REQUIRE(at);
    CHECK(*at == 0x3ff000);
}

TEST_CASE("find_free_range respects the reach and the lowest address", "[pad]") {
    // Everything within reach is mapped: no pad possible.
    std::vector<MappedRange> full{{0x10000, 0x80000000}};
    CHECK_FALSE(find_free_range(full, 0x40000000, 0x1000, 0x1000000, kTop).has_value());
    // Nothing mapped near address 0x20000: never below 64 KiB.
    auto at = find_free_range({}, 0x20000, 0x1000, 0x7fff0000, kTop);
    REQUIRE(at);
    CHECK(*at >= 0x10000);
    CHECK(*at + 0x1000 - 0x20000 <= 0x7fff0000);
}
