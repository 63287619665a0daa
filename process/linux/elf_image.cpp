#include "process/linux/elf_image.hpp"
#include "base/proc_maps.hpp"
#include "base/proc_files.hpp"
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tpagent::process {

ElfImage::ElfImage(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    struct stat st {};
    if (fd_ < 0 || fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) return;
    size_ = static_cast<std::uint64_t>(st.st_size);
    if (!read(0, &header_, sizeof header_) || std::memcmp(header_.e_ident, ELFMAG, SELFMAG) != 0 ||
        header_.e_ident[EI_CLASS] != ELFCLASS64 || header_.e_ident[EI_DATA] != ELFDATA2LSB)
        return;
    valid_ = true;
}

ElfImage::~ElfImage() {
    if (fd_ >= 0) ::close(fd_);
}

bool ElfImage::read(std::uint64_t offset, void* out, std::uint64_t length) const {
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

std::vector<std::uint8_t> ElfImage::contents(const Elf64_Shdr& s) const {
    std::vector<std::uint8_t> out;
    if (s.sh_type == SHT_NOBITS || s.sh_size > kMaxSectionBytes) return out;
    out.resize(s.sh_size);
    if (!read(s.sh_offset, out.data(), s.sh_size)) out.clear();
    return out;
}

std::string_view string_at(const std::vector<std::uint8_t>& table, std::uint64_t offset) {
    if (offset >= table.size()) return {};
    const char* s = reinterpret_cast<const char*>(table.data() + offset);
    return std::string_view(s, strnlen(s, table.size() - offset));
}

const Elf64_Shdr* Sections::named(std::string_view name) const {
    for (const auto& s : headers)
        if (string_at(names, s.sh_name) == name) return &s;
    return nullptr;
}

const Elf64_Shdr* Sections::of_type(std::uint32_t type) const {
    for (const auto& s : headers)
        if (s.sh_type == type) return &s;
    return nullptr;
}

Sections sections_of(const ElfImage& elf) {
    Sections out;
    const Elf64_Ehdr& h = elf.header();
    out.headers = elf.table<Elf64_Shdr>(h.e_shoff, h.e_shnum, h.e_shentsize);
    if (h.e_shstrndx < out.headers.size()) out.names = elf.contents(out.headers[h.e_shstrndx]);
    return out;
}

std::optional<std::uint64_t> SymbolTable::address_of(std::string_view name) {
    if (!loaded_) load();
    auto it = symbols_.find(name);
    if (it == symbols_.end()) return std::nullopt;
    return it->second;
}

std::vector<std::uint64_t> SymbolTable::function_addresses() {
    if (!loaded_) load();
    return functions_;
}

void SymbolTable::load() {
    loaded_ = true;
    const Elf64_Shdr* table = dynamic_only_ ? nullptr : sections_.of_type(SHT_SYMTAB);
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
        const std::uint64_t value = sym.st_shndx == SHN_ABS ? sym.st_value : sym.st_value + bias_;
        symbols_.emplace(std::string(name), value); // the first definition wins
        const unsigned type = ELF64_ST_TYPE(sym.st_info);
        if (type == STT_FUNC || type == STT_GNU_IFUNC) functions_.push_back(value);
    }
}

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

std::map<std::string, std::uint64_t> mapped_files(pid_t pid) {
    // The maps are sorted: the first mapping at offset 0 is the lowest.
    std::map<std::string, std::uint64_t> starts;
    for (const MappedRange& m : read_maps(pid))
        if (m.offset == 0 && m.name.starts_with('/')) starts.emplace(m.name, m.start);
    return starts;
}

std::string file_of_process(pid_t pid, const std::string& path) {
    std::string file = fmt::format("/proc/{}/root", pid) + path;
    return access(file.c_str(), R_OK) == 0 ? file : path;
}

std::map<std::string, std::uint64_t, std::less<>>
mapped_file_symbols(pid_t pid, const std::string& path, std::uint64_t start,
                    std::initializer_list<std::string_view> names, bool dynamic_only) {
    std::map<std::string, std::uint64_t, std::less<>> found;
    ElfImage elf(file_of_process(pid, path));
    const auto base = elf.valid() ? link_base(elf) : std::nullopt;
    if (!base) return found;
    const Sections sections = sections_of(elf);
    SymbolTable symbols(elf, sections, start - *base, dynamic_only);
    for (std::string_view name : names)
        if (auto address = symbols.address_of(name)) found.emplace(name, *address);
    return found;
}

bool is_c_library(std::string_view path) {
    const std::string_view base = path.substr(path.rfind('/') + 1);
    return base.starts_with("libc.so") || base.starts_with("libc-");
}

} // namespace tpagent::process
