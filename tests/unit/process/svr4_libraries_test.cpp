#include "process/linux/svr4_libraries.hpp"
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstring>
#include <elf.h>
#include <link.h>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace tpagent::process;

namespace {
// A program's memory, built piece by piece at chosen addresses; the rest is unreadable.
struct FakeMemory {
    std::map<std::uint64_t, std::vector<std::uint8_t>> pieces;

    template <typename T> void put(std::uint64_t addr, const T& value) {
        std::vector<std::uint8_t> bytes(sizeof(T));
        std::memcpy(bytes.data(), &value, sizeof(T));
        pieces[addr] = bytes;
    }
    void put_string(std::uint64_t addr, const std::string& s) {
        pieces[addr] = std::vector<std::uint8_t>(s.begin(), s.end() + 1);
    }
    bool read(std::uint64_t addr, std::span<std::uint8_t> out) const {
        for (const auto& [base, bytes] : pieces)
            if (addr >= base && addr + out.size() <= base + bytes.size()) {
                std::memcpy(out.data(), bytes.data() + (addr - base), out.size());
                return true;
            }
        return false;
    }
};

constexpr std::uint64_t kPhdr = 0x1000, kDynamic = 0x2000, kRDebug = 0x3000, kRDebug2 = 0x3100;

std::string auxv() {
    std::uint64_t entries[] = {AT_PHDR, kPhdr, AT_PHNUM, 2, AT_NULL, 0};
    return std::string(reinterpret_cast<const char*>(entries), sizeof entries);
}

// Main program (link_map at 0x4000) and libc (0x4100) in the default namespace; libm
// (0x4200) alone in a second one, whose r_next is `second_next`.
FakeMemory program(std::uint64_t second_next) {
    FakeMemory m;
    Elf64_Phdr phdrs[2] = {};
    phdrs[0].p_type = PT_PHDR;
    phdrs[0].p_vaddr = kPhdr;
    phdrs[1].p_type = PT_DYNAMIC;
    phdrs[1].p_vaddr = kDynamic;
    m.put(kPhdr, phdrs);
    Elf64_Dyn dyn[2] = {};
    dyn[0].d_tag = DT_DEBUG;
    dyn[0].d_un.d_ptr = kRDebug;
    dyn[1].d_tag = DT_NULL;
    m.put(kDynamic, dyn);
    auto link = [&](std::uint64_t at, std::uint64_t name, std::uint64_t prev, std::uint64_t next) {
        link_map lm{};
        lm.l_addr = at * 0x1000;
        lm.l_name = reinterpret_cast<char*>(name);
        lm.l_ld = reinterpret_cast<ElfW(Dyn)*>(at + 0x10);
        lm.l_prev = reinterpret_cast<link_map*>(prev);
        lm.l_next = reinterpret_cast<link_map*>(next);
        m.put(at, lm);
    };
    m.put_string(0x5000, "");
    m.put_string(0x5100, "/lib/libc.so.6");
    m.put_string(0x5200, "/lib/libm.so.6");
    link(0x4000, 0x5000, 0, 0x4100);
    link(0x4100, 0x5100, 0x4000, 0);
    link(0x4200, 0x5200, 0, 0);
    r_debug_extended first{}, second{};
    first.base.r_version = 2;
    first.base.r_map = reinterpret_cast<link_map*>(0x4000);
    first.r_next = reinterpret_cast<r_debug_extended*>(kRDebug2);
    second.base.r_version = 2;
    second.base.r_map = reinterpret_cast<link_map*>(0x4200);
    second.r_next = reinterpret_cast<r_debug_extended*>(second_next);
    m.put(kRDebug, first);
    m.put(kRDebug2, second);
    return m;
}

std::optional<std::string> maybe_list(const FakeMemory& m) {
    return svr4_library_list(
        auxv(), [&m](std::uint64_t a, std::span<std::uint8_t> out) { return m.read(a, out); });
}

std::string list(const FakeMemory& m) {
    return maybe_list(m).value_or("(no DT_DEBUG)");
}

// The dynamic section's first entry replaced by `tag` (value 0).
FakeMemory with_first_dynamic(std::int64_t tag, std::uint64_t value) {
    FakeMemory m = program(0);
    Elf64_Dyn dyn[2] = {};
    dyn[0].d_tag = tag;
    dyn[0].d_un.d_ptr = value;
    dyn[1].d_tag = DT_NULL;
    m.put(kDynamic, dyn);
    return m;
}
} // namespace

TEST_CASE("svr4 library list: every namespace, each library with its namespace's r_debug",
          "[svr4]") {
    const std::string xml = list(program(0));
    CHECK(xml == "<library-list-svr4 version=\"1.0\" main-lm=\"0x4000\">"
                 "<library name=\"/lib/libc.so.6\" lm=\"0x4100\" l_addr=\"0x4100000\" "
                 "l_ld=\"0x4110\" lmid=\"0x3000\"/>"
                 "<library name=\"/lib/libm.so.6\" lm=\"0x4200\" l_addr=\"0x4200000\" "
                 "l_ld=\"0x4210\" lmid=\"0x3100\"/></library-list-svr4>");
}

TEST_CASE("svr4 library list: a namespace chain that leads back is walked once", "[svr4]") {
    CHECK(list(program(kRDebug)) == list(program(0)));  // back to the first
    CHECK(list(program(kRDebug2)) == list(program(0))); // to itself
}

TEST_CASE("svr4 library list: an unreadable next namespace ends the list", "[svr4]") {
    const std::string xml = list(program(0x9000));
    CHECK(xml == list(program(0)));
}

TEST_CASE("svr4 library list: r_debug not set up yet is the empty list", "[svr4]") {
    CHECK(list(with_first_dynamic(DT_DEBUG, 0)) == std::string(kEmptyLibraryList));
}

TEST_CASE("svr4 library list: none without DT_DEBUG or PT_PHDR (ld.so run as the program)",
          "[svr4]") {
    // The dynamic linker's own dynamic section has no DT_DEBUG, nor its headers a PT_PHDR:
    // gdb is to find the list itself.
    CHECK_FALSE(maybe_list(with_first_dynamic(DT_NEEDED, 1)).has_value());
    FakeMemory no_phdr = program(0);
    Elf64_Phdr phdrs[2] = {};
    phdrs[0].p_type = PT_LOAD;
    phdrs[1].p_type = PT_DYNAMIC;
    phdrs[1].p_vaddr = kDynamic;
    no_phdr.put(kPhdr, phdrs);
    CHECK_FALSE(maybe_list(no_phdr).has_value());
}

TEST_CASE("svr4 main link map: the list's main-lm, 0 before r_debug is set up, none without "
          "DT_DEBUG",
          "[svr4]") {
    const auto main_lm = [](const FakeMemory& m) {
        return svr4_main_link_map(
            auxv(), [&m](std::uint64_t a, std::span<std::uint8_t> out) { return m.read(a, out); });
    };
    CHECK(main_lm(program(0)) == std::optional<std::uint64_t>(0x4000));
    CHECK(main_lm(with_first_dynamic(DT_DEBUG, 0)) == std::optional<std::uint64_t>(0));
    CHECK_FALSE(main_lm(with_first_dynamic(DT_NEEDED, 1)).has_value());
}
