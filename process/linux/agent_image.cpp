// Reading the in-process agent's self-mapped image (agent_image.hpp).
#include "process/linux/agent_image.hpp"
#include "process/linux/elf_image.hpp"
#include <algorithm>
#include <cstring>
#include <elf.h>
#include <fmt/format.h>
#include <sys/mman.h>

namespace tpagent::process {

namespace {

#if defined(__x86_64__)
constexpr std::uint16_t kMachine = EM_X86_64;
constexpr std::uint32_t kRelative = R_X86_64_RELATIVE;
#elif defined(__aarch64__)
constexpr std::uint16_t kMachine = EM_AARCH64;
constexpr std::uint32_t kRelative = R_AARCH64_RELATIVE;
#else
#error "no in-process agent image for this architecture"
#endif

Error refused(const std::string& path, std::string_view why) {
    return make_error(ErrorCode::Unsupported, fmt::format("{}: {}", path, why));
}

} // namespace

Result<AgentImage> read_agent_image(const std::string& path) {
    ElfImage elf(path);
    if (!elf.valid()) return make_error(ErrorCode::NotFound, path + ": not a readable ELF file");
    const Elf64_Ehdr& eh = elf.header();
    if (eh.e_type != ET_DYN || eh.e_machine != kMachine)
        return refused(path, "not a position-independent image for this machine");
    AgentImage image;
    const auto phdrs = elf.table<Elf64_Phdr>(eh.e_phoff, eh.e_phnum, eh.e_phentsize);
    if (phdrs.empty()) return refused(path, "no program headers");
    for (const Elf64_Phdr& p : phdrs) {
        if (p.p_type == PT_INTERP || p.p_type == PT_TLS)
            return refused(path, "it needs a dynamic loader (interpreter or TLS)");
        if (p.p_type != PT_LOAD) continue;
        if (p.p_filesz > p.p_memsz ||
            p.p_vaddr % AgentImage::kPage != p.p_offset % AgentImage::kPage ||
            p.p_vaddr + p.p_memsz < p.p_vaddr || p.p_vaddr + p.p_memsz > AgentImage::kMaxSpan)
            return refused(path, "a loadable segment out of bounds");
        AgentImage::Segment s{p.p_vaddr, p.p_offset, p.p_filesz, p.p_memsz, 0};
        if (p.p_flags & PF_R) s.prot |= PROT_READ;
        if (p.p_flags & PF_W) s.prot |= PROT_WRITE;
        if (p.p_flags & PF_X) s.prot |= PROT_EXEC;
        image.segments.push_back(s);
        image.span = std::max(image.span, (p.p_vaddr + p.p_memsz + AgentImage::kPage - 1) &
                                              ~(AgentImage::kPage - 1));
    }
    if (image.segments.empty()) return refused(path, "no loadable segment");
    std::sort(image.segments.begin(), image.segments.end(),
              [](const auto& a, const auto& b) { return a.vaddr < b.vaddr; });
    for (std::size_t i = 1; i < image.segments.size(); ++i)
        if (image.segments[i].vaddr / AgentImage::kPage <
            (image.segments[i - 1].vaddr + image.segments[i - 1].memory_bytes + AgentImage::kPage -
             1) /
                AgentImage::kPage)
            return refused(path, "loadable segments share a page");

    const Sections sections = sections_of(elf);
    for (const Elf64_Shdr& s : sections.headers) {
        if (s.sh_type == SHT_REL)
            return refused(path, "REL relocations (only RELA ones are applied)");
        if (s.sh_type != SHT_RELA) continue;
        const auto bytes = elf.contents(s);
        if (bytes.size() != s.sh_size || s.sh_entsize != sizeof(Elf64_Rela))
            return refused(path, "an unreadable relocation table");
        for (std::size_t at = 0; at + sizeof(Elf64_Rela) <= bytes.size();
             at += sizeof(Elf64_Rela)) {
            Elf64_Rela r;
            std::memcpy(&r, bytes.data() + at, sizeof r);
            if (ELF64_R_TYPE(r.r_info) != kRelative)
                return refused(path, fmt::format("a relocation of type {} (only RELATIVE ones)",
                                                 ELF64_R_TYPE(r.r_info)));
            const bool inside = std::any_of(
                image.segments.begin(), image.segments.end(), [&](const AgentImage::Segment& g) {
                    return (g.prot & PROT_WRITE) && r.r_offset >= g.vaddr &&
                           r.r_offset + 8 <= g.vaddr + g.file_bytes;
                });
            if (!inside || static_cast<std::uint64_t>(r.r_addend) >= image.span)
                return refused(path, "a relocation outside the image");
            if (image.relocations.size() >= AgentImage::kMaxRelocations)
                return refused(path, "too many relocations");
            image.relocations.push_back({r.r_offset, static_cast<std::uint64_t>(r.r_addend)});
        }
    }
    std::sort(image.relocations.begin(), image.relocations.end(),
              [](const auto& a, const auto& b) { return a.offset < b.offset; });
    if (const Elf64_Shdr* dynamic = sections.of_type(SHT_DYNAMIC)) {
        const auto entries = elf.contents(*dynamic);
        for (std::size_t at = 0; at + sizeof(Elf64_Dyn) <= entries.size();
             at += sizeof(Elf64_Dyn)) {
            Elf64_Dyn d;
            std::memcpy(&d, entries.data() + at, sizeof d);
            if (d.d_tag == DT_NEEDED) return refused(path, "it needs another library");
            if ((d.d_tag == DT_INIT_ARRAYSZ || d.d_tag == DT_PREINIT_ARRAYSZ) && d.d_un.d_val)
                return refused(path, "it has constructors");
            if (d.d_tag == DT_INIT) return refused(path, "it has constructors");
        }
    }
    SymbolTable symbols(elf, sections, 0, true);
    const auto start = symbols.address_of("tpagent_inproc_image_start");
    if (!start || *start >= image.span) return refused(path, "no tpagent_inproc_image_start");
    image.start = *start;
    return image;
}

std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>>
relocated_words(const AgentImage& image, std::uint64_t base) {
    std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>> runs;
    for (const auto& r : image.relocations) {
        const std::uint64_t value = base + r.addend;
        std::uint8_t word[8];
        std::memcpy(word, &value, 8);
        if (runs.empty() || runs.back().first + runs.back().second.size() != base + r.offset)
            runs.push_back({base + r.offset, {}});
        runs.back().second.insert(runs.back().second.end(), word, word + 8);
    }
    return runs;
}

} // namespace tpagent::process
