#include "process/linux/svr4_libraries.hpp"
#include "protocol/xml.hpp"
#include <cstddef>
#include <cstring>
#include <elf.h>
#include <fmt/format.h>
#include <link.h>
#include <set>

namespace tpagent::process {

namespace {
constexpr int kMaxLibraries = 4096; // bounds a corrupt or cyclic link_map chain
constexpr int kMaxDynamic = 4096;
constexpr int kMaxNamespaces = 64; // glibc allows 16 (DL_NNS)
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

// Address of r_debug from DT_DEBUG in the main program's dynamic section; 0 if not there yet
// (or unreadable); nullopt if the program has no DT_DEBUG at all.
std::optional<std::uint64_t> find_r_debug(std::string_view auxv, const MemoryReader& read) {
    const std::uint64_t phdr = auxv_value(auxv, AT_PHDR), phnum = auxv_value(auxv, AT_PHNUM);
    if (phdr == 0 || phnum == 0 || phnum > 256) return 0;
    std::optional<std::uint64_t> base;
    std::uint64_t dynamic = 0;
    for (std::uint64_t i = 0; i < phnum; ++i) {
        Elf64_Phdr ph;
        if (!read_value(read, phdr + i * sizeof ph, ph)) return 0;
        if (ph.p_type == PT_PHDR)
            base = phdr - ph.p_vaddr;
        else if (ph.p_type == PT_DYNAMIC)
            dynamic = ph.p_vaddr;
    }
    // Without PT_PHDR the load address is unknown; a program with DT_DEBUG always has one.
    if (!base || dynamic == 0) return std::nullopt;
    for (int i = 0; i < kMaxDynamic; ++i) {
        Elf64_Dyn dyn;
        if (!read_value(read, *base + dynamic + i * sizeof dyn, dyn)) return 0;
        if (dyn.d_tag == DT_NULL) return std::nullopt;
        if (dyn.d_tag == DT_DEBUG) return dyn.d_un.d_ptr;
    }
    return std::nullopt;
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

std::optional<std::uint64_t> svr4_main_link_map(std::string_view auxv, const MemoryReader& read) {
    const std::optional<std::uint64_t> found = find_r_debug(auxv, read);
    if (!found) return std::nullopt;
    r_debug rd{};
    if (*found == 0 || !read_value(read, *found, rd)) return 0;
    return reinterpret_cast<std::uint64_t>(rd.r_map);
}

std::optional<std::string> svr4_library_list(std::string_view auxv, const MemoryReader& read) {
    const std::optional<std::uint64_t> found = find_r_debug(auxv, read);
    if (!found) return std::nullopt;
    std::uint64_t r_debug_addr = *found;
    r_debug_extended rd{};
    if (r_debug_addr == 0 || !read_value(read, r_debug_addr, rd.base) || rd.base.r_map == nullptr)
        return std::string(kEmptyLibraryList);
    auto main_lm = reinterpret_cast<std::uint64_t>(rd.base.r_map);
    std::string body;
    int listed = 0;
    // Each namespace (dlmopen) has an r_debug of its own, chained from the first one's from
    // r_version 2 on; a library's lmid is its namespace's r_debug, as gdbserver gives it.
    std::set<std::uint64_t> seen; // a corrupt chain may lead back
    for (int ns = 0; r_debug_addr != 0 && ns < kMaxNamespaces && seen.insert(r_debug_addr).second;
         ++ns) {
        if (ns > 0 && !read_value(read, r_debug_addr, rd.base)) break;
        std::uint64_t lm_addr = reinterpret_cast<std::uint64_t>(rd.base.r_map), prev = 0;
        for (; lm_addr != 0 && listed < kMaxLibraries; ++listed) {
            link_map lm{};
            if (!read_value(read, lm_addr, lm)) break;
            if (reinterpret_cast<std::uint64_t>(lm.l_prev) != prev) break; // being changed
            std::string name = lm_addr == main_lm
                                   ? std::string()
                                   : read_string(read, reinterpret_cast<std::uint64_t>(lm.l_name));
            if (!name.empty()) {
                body += fmt::format("<library name=\"{}\" lm=\"0x{:x}\" l_addr=\"0x{:x}\" "
                                    "l_ld=\"0x{:x}\" lmid=\"0x{:x}\"/>",
                                    protocol::xml_escape(name), lm_addr,
                                    static_cast<std::uint64_t>(lm.l_addr),
                                    reinterpret_cast<std::uint64_t>(lm.l_ld), r_debug_addr);
            }
            prev = lm_addr;
            lm_addr = reinterpret_cast<std::uint64_t>(lm.l_next);
        }
        std::uint64_t next = 0;
        if (rd.base.r_version < 2 ||
            !read_value(read, r_debug_addr + offsetof(r_debug_extended, r_next), next))
            break;
        r_debug_addr = next;
    }
    return fmt::format(
        "<library-list-svr4 version=\"1.0\" main-lm=\"0x{:x}\">{}</library-list-svr4>", main_lm,
        body);
}

} // namespace tpagent::process
