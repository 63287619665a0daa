#include "process/linux/read_only_image.hpp"
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <string>

using namespace tpagent;
using namespace tpagent::process;

namespace {
// A PIE, a shared library, a data file the program mapped read-only, and what else a process
// has; each mapping at offset 0 starts with the magic given here.
const char* const kMaps =
    "aaaab0000000-aaaab0001000 r-xp 00000000 fe:01 11 /payload/prog\n"
    "aaaab0010000-aaaab0011000 r--p 00000000 fe:01 11 /payload/prog\n" // RELRO
    "aaaab0011000-aaaab0012000 rw-p 00001000 fe:01 11 /payload/prog\n"
    "aaaab0012000-aaaab0033000 rw-p 00000000 00:00 0          [heap]\n"
    "ffff80000000-ffff80001000 r--p 00000000 fe:01 22 /data/table.bin\n"
    "ffff80100000-ffff80120000 r-xp 00000000 fe:01 33 /lib/libc.so.6\n"
    "ffff80120000-ffff80130000 ---p 00020000 fe:01 33 /lib/libc.so.6\n"
    "ffff80130000-ffff80134000 r--p 00020000 fe:01 33 /lib/libc.so.6\n"
    "ffff80200000-ffff80201000 r-xs 00000000 00:01 44 /memfd:jit (deleted)\n"
    "ffff80300000-ffff80301000 r--p 00000000 00:05 55 /dev/some_device\n"
    "ffff80400000-ffff80401000 r-xp 00000000 00:00 0\n"
    "ffff80500000-ffff80501000 r-xp 00000000 00:00 0          [vdso]\n";

const std::string kElf{'\x7f', 'E', 'L', 'F'};

struct Program {
    std::vector<MappedRange> maps = parse_maps(kMaps);
    std::map<std::uint64_t, std::string> magic{{0xaaaab0000000, kElf},
                                               {0xffff80000000, "DATA"},
                                               {0xffff80100000, kElf},
                                               {0xffff80200000, kElf},
                                               {0xffff80300000, kElf}};
    int reads = 0;
    std::uint64_t extent(std::uint64_t addr, std::uint64_t length) {
        return read_only_image_extent(maps, addr, length,
                                      [this](std::uint64_t at, std::span<std::uint8_t> out) {
                                          ++reads;
                                          auto m = magic.find(at);
                                          if (m == magic.end() || out.size() > m->second.size())
                                              return false;
                                          std::memcpy(out.data(), m->second.data(), out.size());
                                          return true;
                                      });
    }
};
} // namespace

TEST_CASE("read_only_image_extent: the code and read-only data of ELF objects", "[read-only]") {
    Program p;
    // A PIE's code and its RELRO pages, a library's code and read-only data, as far as the
    // mapping goes.
    CHECK(p.extent(0xaaaab0000100, 0x40) == 0x40);
    CHECK(p.extent(0xaaaab0000f00, 0x400) == 0x100);
    CHECK(p.extent(0xaaaab0010000, 8) == 8);
    CHECK(p.extent(0xffff80100000, 0x1000) == 0x1000);
    CHECK(p.extent(0xffff80133ff8, 0x10) == 8);
}

TEST_CASE("read_only_image_extent: nothing that may have changed since a hit", "[read-only]") {
    Program p;
    CHECK(p.extent(0xaaaab0011000, 8) == 0); // the program's data
    CHECK(p.extent(0xaaaab0020000, 8) == 0); // the heap
    CHECK(p.extent(0xffff80000000, 8) == 0); // a data file, not an ELF object
    CHECK(p.extent(0xffff80120000, 8) == 0); // a library's guard gap
    CHECK(p.extent(0xffff80200000, 8) == 0); // shared: written through another mapping
    CHECK(p.extent(0xffff80400000, 8) == 0); // anonymous code (a JIT's, tpagent's pads)
    CHECK(p.extent(0xffff80500000, 8) == 0); // the vDSO is no file
    CHECK(p.extent(0x1000, 8) == 0);         // below everything (a PIE's link-time address)
    CHECK(p.extent(0xffffffff0000, 8) == 0); // above everything
    CHECK(p.extent(0xaaaab0000100, 0) == 0);
    // A device's mapping is not even read to see whether it is an ELF object.
    p.reads = 0;
    CHECK(p.extent(0xffff80300000, 4) == 0);
    CHECK(p.reads == 0);
}

TEST_CASE("read_only_image_extent: a file whose header cannot be read is no image", "[read-only]") {
    Program p;
    p.magic.clear();
    CHECK(p.extent(0xaaaab0000100, 0x40) == 0);
    CHECK(p.extent(0xffff80130000, 8) == 0);
}
