#include "process/linux/sdt_markers.hpp"
#include "process/linux/elf_image.hpp"
#include <algorithm>
#include <cstring>
#include <elf.h>

namespace tpagent::process {

namespace {

constexpr std::size_t kMaxMarkers = 1u << 16;
constexpr std::uint32_t kStapsdtNoteType = 3;

std::uint64_t load_le64(const std::uint8_t* p) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

// The markers of an opened image; `object` names it in them.
std::vector<StaticMarker> markers_of_image(const ElfImage& elf, const std::string& object,
                                           std::uint64_t bias, const arch::Architecture& arch) {
    std::vector<StaticMarker> out;
    const Sections sections = sections_of(elf);
    const Elf64_Shdr* notes = sections.named(".note.stapsdt");
    if (!notes || notes->sh_type != SHT_NOTE) return out;
    // Prelinking moves the code but not the notes: .stapsdt.base tells by how much.
    const Elf64_Shdr* base_section = sections.named(".stapsdt.base");
    const auto bytes = elf.contents(*notes);
    SymbolTable symbols(elf, sections, bias);
    const arch::SdtSymbolResolver resolve = [&](std::string_view name) {
        return symbols.address_of(name);
    };
    auto align4 = [](std::uint64_t v) { return (v + 3) & ~std::uint64_t{3}; };
    std::uint64_t at = 0;
    while (at + sizeof(Elf64_Nhdr) <= bytes.size() && out.size() < kMaxMarkers) {
        Elf64_Nhdr n;
        std::memcpy(&n, bytes.data() + at, sizeof n);
        const std::uint64_t name_at = at + sizeof n;
        const std::uint64_t desc_at = name_at + align4(n.n_namesz);
        const std::uint64_t next = desc_at + align4(n.n_descsz);
        if (desc_at > bytes.size() || n.n_descsz > bytes.size() - desc_at) break;
        at = next;
        if (n.n_type != kStapsdtNoteType || n.n_namesz != sizeof "stapsdt" ||
            std::memcmp(bytes.data() + name_at, "stapsdt", sizeof "stapsdt") != 0 ||
            n.n_descsz < 3 * 8)
            continue;
        const std::uint8_t* desc = bytes.data() + desc_at;
        const std::uint64_t pc = load_le64(desc), base_ref = load_le64(desc + 8),
                            semaphore = load_le64(desc + 16);
        const std::uint64_t delta = base_section ? base_section->sh_addr - base_ref : 0;
        // provider, name, arguments: NUL-terminated strings inside the note
        std::vector<std::string> strings;
        std::uint64_t s = 3 * 8;
        while (strings.size() < 3 && s < n.n_descsz) {
            const char* p = reinterpret_cast<const char*>(desc + s);
            const std::size_t len = strnlen(p, n.n_descsz - s);
            if (s + len >= n.n_descsz) break; // unterminated
            strings.emplace_back(p, len);
            s += len + 1;
        }
        if (strings.size() < 2 || strings[0].empty() || strings[1].empty()) continue;
        StaticMarker m;
        m.address = pc + delta + bias;
        m.id = strings[0] + ":" + strings[1];
        if (strings.size() == 3) m.arguments = strings[2];
        m.semaphore = semaphore ? semaphore + delta + bias : 0;
        m.decoded = arch::parse_sdt_arguments(m.arguments, arch, resolve);
        m.object = object;
        out.push_back(std::move(m));
    }
    return out;
}

} // namespace

std::vector<StaticMarker> sdt_markers_of_file(const std::string& path, std::uint64_t bias,
                                              const arch::Architecture& arch) {
    ElfImage elf(path);
    if (!elf.valid()) return {};
    return markers_of_image(elf, path, bias, arch);
}

std::vector<StaticMarker> sdt_markers_of_process(pid_t pid, const arch::Architecture& arch) {
    std::vector<StaticMarker> out;
    for (const auto& [path, start] : mapped_files(pid)) {
        ElfImage elf(file_of_process(pid, path));
        if (!elf.valid()) continue;
        const auto base = link_base(elf);
        if (!base) continue;
        auto markers = markers_of_image(elf, path, start - *base, arch);
        out.insert(out.end(), std::make_move_iterator(markers.begin()),
                   std::make_move_iterator(markers.end()));
        if (out.size() > kMaxMarkers) break;
    }
    std::sort(out.begin(), out.end(),
              [](const StaticMarker& a, const StaticMarker& b) { return a.address < b.address; });
    return out;
}

} // namespace tpagent::process
