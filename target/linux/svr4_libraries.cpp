#include "target/linux/svr4_libraries.hpp"
#include "protocol/xml.hpp"
#include <cstring>
#include <elf.h>
#include <fmt/format.h>
#include <link.h>

namespace tpagent::agent {

namespace {
constexpr int kMaxLibraries = 4096; // bounds a corrupt or cyclic link_map chain
constexpr int kMaxDynamic = 4096;
constexpr std::size_t kMaxName = 4096;

template <typename T> bool read_value(const MemoryReader& read, std::uint64_t addr, T& out) {
    return read(addr, std::span(reinterpret_cast<std::uint8_t*>(&out), sizeof(T)));
}

std::string read_string(const MemoryReader& read, std::uint64_t addr) {
    std::string out;
    char c = 0;
    while (out.size() < kMaxName && read_value(read, addr + out.size(), c) && c != '\0')
        out.push_back(c);
    return out;
}

// Address of r_debug from DT_DEBUG in the main program's dynamic section; 0 if not there yet.
std::uint64_t find_r_debug(std::string_view auxv, const MemoryReader& read) {
    const std::uint64_t phdr = auxv_value(auxv, AT_PHDR), phnum = auxv_value(auxv, AT_PHNUM);
    if (phdr == 0 || phnum == 0 || phnum > 256) return 0;
    std::uint64_t base = 0, dynamic = 0;
    for (std::uint64_t i = 0; i < phnum; ++i) {
        Elf64_Phdr ph;
        if (!read_value(read, phdr + i * sizeof ph, ph)) return 0;
        if (ph.p_type == PT_PHDR)
            base = phdr - ph.p_vaddr;
        else if (ph.p_type == PT_DYNAMIC)
            dynamic = ph.p_vaddr;
    }
    if (dynamic == 0) return 0;
    for (int i = 0; i < kMaxDynamic; ++i) {
        Elf64_Dyn dyn;
        if (!read_value(read, base + dynamic + i * sizeof dyn, dyn) || dyn.d_tag == DT_NULL)
            return 0;
        if (dyn.d_tag == DT_DEBUG) return dyn.d_un.d_ptr;
    }
    return 0;
}
} // namespace

std::uint64_t auxv_value(std::string_view auxv, std::uint64_t type) {
    for (std::size_t off = 0; off + 16 <= auxv.size(); off += 16) {
        std::uint64_t t = 0, value = 0;
        std::memcpy(&t, auxv.data() + off, 8);
        std::memcpy(&value, auxv.data() + off + 8, 8);
        if (t == type) return value;
    }
    return 0;
}

std::string svr4_library_list(std::string_view auxv, const MemoryReader& read) {
    std::uint64_t r_debug_addr = find_r_debug(auxv, read);
    r_debug rd{};
    if (r_debug_addr == 0 || !read_value(read, r_debug_addr, rd) || rd.r_map == nullptr)
        return "<library-list-svr4 version=\"1.0\"/>";
    auto main_lm = reinterpret_cast<std::uint64_t>(rd.r_map);
    std::string body;
    std::uint64_t lm_addr = main_lm, prev = 0;
    for (int n = 0; lm_addr != 0 && n < kMaxLibraries; ++n) {
        link_map lm{};
        if (!read_value(read, lm_addr, lm)) break;
        if (reinterpret_cast<std::uint64_t>(lm.l_prev) != prev) break; // chain is being changed
        if (lm_addr != main_lm) {
            std::string name = read_string(read, reinterpret_cast<std::uint64_t>(lm.l_name));
            if (!name.empty()) {
                body += fmt::format("<library name=\"{}\" lm=\"0x{:x}\" l_addr=\"0x{:x}\" "
                                    "l_ld=\"0x{:x}\" lmid=\"0x0\"/>",
                                    protocol::xml_escape(name), lm_addr,
                                    static_cast<std::uint64_t>(lm.l_addr),
                                    reinterpret_cast<std::uint64_t>(lm.l_ld));
            }
        }
        prev = lm_addr;
        lm_addr = reinterpret_cast<std::uint64_t>(lm.l_next);
    }
    return fmt::format(
        "<library-list-svr4 version=\"1.0\" main-lm=\"0x{:x}\">{}</library-list-svr4>", main_lm,
        body);
}

} // namespace tpagent::agent
