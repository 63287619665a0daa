#include "target/linux/sdt_markers.hpp"
#include "target/linux/pad_allocator.hpp"
#include "base/proc_files.hpp"
#include <algorithm>
#include <cstring>
#include <elf.h>
#include <fmt/format.h>
#include <fcntl.h>
#include <map>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

namespace tpagent::agent {

namespace {

// Bounds for what a file on disk may claim.
constexpr std::uint64_t kMaxSectionBytes = 64u << 20;
constexpr std::uint16_t kMaxHeaders = 4096;
constexpr std::size_t kMaxMarkers = 1u << 16;
constexpr std::uint32_t kStapsdtNoteType = 3;

class ElfImage {
  public:
    explicit ElfImage(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
        struct stat st {};
        if (fd_ < 0 || fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) return;
        size_ = static_cast<std::uint64_t>(st.st_size);
        if (!read(0, &header_, sizeof header_) ||
            std::memcmp(header_.e_ident, ELFMAG, SELFMAG) != 0 ||
            header_.e_ident[EI_CLASS] != ELFCLASS64 || header_.e_ident[EI_DATA] != ELFDATA2LSB)
            return;
        valid_ = true;
    }
    ~ElfImage() {
        if (fd_ >= 0) ::close(fd_);
    }
    ElfImage(const ElfImage&) = delete;
    ElfImage& operator=(const ElfImage&) = delete;

    bool valid() const { return valid_; }
    const Elf64_Ehdr& header() const { return header_; }

    bool read(std::uint64_t offset, void* out, std::uint64_t length) const {
        if (offset > size_ || length > size_ - offset) return false;
        auto* p = static_cast<std::uint8_t*>(out);
        while (length > 0) {
            const ssize_t n = ::pread(fd_, p, length, static_cast<off_t>(offset));
            if (n <= 0) return false;
            p += n;
            offset += static_cast<std::uint64_t>(n);
            length -= static_cast<std::uint64_t>(n);
        }
        return true;
    }

    template <class T>
    std::vector<T> table(std::uint64_t offset, std::uint16_t count,
                         std::uint16_t entry_size) const {
        std::vector<T> out;
        if (entry_size != sizeof(T) || count > kMaxHeaders) return out;
        out.resize(count);
        if (!read(offset, out.data(), sizeof(T) * count)) out.clear();
        return out;
    }

    std::vector<std::uint8_t> contents(const Elf64_Shdr& s) const {
        std::vector<std::uint8_t> out;
        if (s.sh_type == SHT_NOBITS || s.sh_size > kMaxSectionBytes) return out;
        out.resize(s.sh_size);
        if (!read(s.sh_offset, out.data(), s.sh_size)) out.clear();
        return out;
    }

  private:
    int fd_ = -1;
    std::uint64_t size_ = 0;
    Elf64_Ehdr header_{};
    bool valid_ = false;
};

std::string_view string_at(const std::vector<std::uint8_t>& table, std::uint64_t offset) {
    if (offset >= table.size()) return {};
    const char* s = reinterpret_cast<const char*>(table.data() + offset);
    return std::string_view(s, strnlen(s, table.size() - offset));
}

struct Sections {
    std::vector<Elf64_Shdr> headers;
    std::vector<std::uint8_t> names;

    const Elf64_Shdr* named(std::string_view name) const {
        for (const auto& s : headers)
            if (string_at(names, s.sh_name) == name) return &s;
        return nullptr;
    }
    const Elf64_Shdr* of_type(std::uint32_t type) const {
        for (const auto& s : headers)
            if (s.sh_type == type) return &s;
        return nullptr;
    }
};

Sections sections_of(const ElfImage& elf) {
    Sections out;
    const Elf64_Ehdr& h = elf.header();
    out.headers = elf.table<Elf64_Shdr>(h.e_shoff, h.e_shnum, h.e_shentsize);
    if (h.e_shstrndx < out.headers.size()) out.names = elf.contents(out.headers[h.e_shstrndx]);
    return out;
}

// The symbols operands name, at run time: the full symbol table where the file has one, else
// the dynamic one. Read only when an operand names one.
class SymbolTable {
  public:
    SymbolTable(const ElfImage& elf, const Sections& sections, std::uint64_t bias)
        : elf_(elf), sections_(sections), bias_(bias) {}

    std::optional<std::uint64_t> address_of(std::string_view name) {
        if (!loaded_) load();
        auto it = symbols_.find(std::string(name));
        if (it == symbols_.end()) return std::nullopt;
        return it->second;
    }

  private:
    void load() {
        loaded_ = true;
        const Elf64_Shdr* table = sections_.of_type(SHT_SYMTAB);
        if (!table) table = sections_.of_type(SHT_DYNSYM);
        if (!table || table->sh_link >= sections_.headers.size()) return;
        const auto bytes = elf_.contents(*table);
        const auto names = elf_.contents(sections_.headers[table->sh_link]);
        for (std::size_t at = 0; at + sizeof(Elf64_Sym) <= bytes.size(); at += sizeof(Elf64_Sym)) {
            Elf64_Sym sym;
            std::memcpy(&sym, bytes.data() + at, sizeof sym);
            if (sym.st_shndx == SHN_UNDEF) continue;
            const std::string_view name = string_at(names, sym.st_name);
            if (name.empty()) continue;
            const std::uint64_t value =
                sym.st_shndx == SHN_ABS ? sym.st_value : sym.st_value + bias_;
            symbols_.emplace(std::string(name), value); // the first definition wins
        }
    }

    const ElfImage& elf_;
    const Sections& sections_;
    std::uint64_t bias_;
    bool loaded_ = false;
    std::map<std::string, std::uint64_t> symbols_;
};

// Where the file's first loadable segment starts, page-aligned, at link time.
std::optional<std::uint64_t> link_base(const ElfImage& elf) {
    const Elf64_Ehdr& h = elf.header();
    const auto loads = elf.table<Elf64_Phdr>(h.e_phoff, h.e_phnum, h.e_phentsize);
    std::optional<std::uint64_t> base;
    for (const auto& ph : loads)
        if (ph.p_type == PT_LOAD && ph.p_offset == 0) base = ph.p_vaddr;
    if (!base) return std::nullopt;
    const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    return *base & ~(page - 1);
}

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
    // Each file's mapping at offset 0 is where its first loadable segment went; the maps are
    // sorted, so the first one is the lowest.
    std::map<std::string, std::uint64_t> starts;
    for (const MappedRange& m : parse_maps(read_file(fmt::format("/proc/{}/maps", pid))))
        if (m.offset == 0 && m.name.starts_with('/')) starts.emplace(m.name, m.start);
    std::vector<StaticMarker> out;
    const std::string root = fmt::format("/proc/{}/root", pid);
    for (const auto& [path, start] : starts) {
        // Through the process's root, for a process in another mount namespace.
        std::string file = root + path;
        if (access(file.c_str(), R_OK) != 0) file = path;
        ElfImage elf(file);
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

} // namespace tpagent::agent
