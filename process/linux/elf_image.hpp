// ELF files of a traced process read from disk: headers, sections and symbols, every size
// bounded; where each file was loaded (the process's maps). For SDT markers and for the
// functions tpagent calls in the program (dlopen).
#pragma once
#include <cstdint>
#include <elf.h>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace tpagent::process {

class ElfImage {
  public:
    explicit ElfImage(const std::string& path);
    ~ElfImage();
    ElfImage(const ElfImage&) = delete;
    ElfImage& operator=(const ElfImage&) = delete;

    bool valid() const { return valid_; }
    const Elf64_Ehdr& header() const { return header_; }
    bool read(std::uint64_t offset, void* out, std::uint64_t length) const;

    // At most kMaxHeaders entries of entry_size == sizeof(T); empty if the file disagrees.
    template <class T>
    std::vector<T> table(std::uint64_t offset, std::uint16_t count,
                         std::uint16_t entry_size) const {
        std::vector<T> out;
        if (entry_size != sizeof(T) || count > kMaxHeaders) return out;
        out.resize(count);
        if (!read(offset, out.data(), sizeof(T) * count)) out.clear();
        return out;
    }
    // A section's bytes (none for NOBITS or one over kMaxSectionBytes).
    std::vector<std::uint8_t> contents(const Elf64_Shdr& s) const;

    static constexpr std::uint64_t kMaxSectionBytes = 64u << 20;
    static constexpr std::uint16_t kMaxHeaders = 4096;

  private:
    int fd_ = -1;
    std::uint64_t size_ = 0;
    Elf64_Ehdr header_{};
    bool valid_ = false;
};

// The NUL-terminated string at offset in a string table ("" past its end).
std::string_view string_at(const std::vector<std::uint8_t>& table, std::uint64_t offset);

struct Sections {
    std::vector<Elf64_Shdr> headers;
    std::vector<std::uint8_t> names;

    const Elf64_Shdr* named(std::string_view name) const;
    const Elf64_Shdr* of_type(std::uint32_t type) const;
};
Sections sections_of(const ElfImage& elf);

// Defined symbols by name, `bias` added: the full symbol table where the file has one, else
// the dynamic one (or only the dynamic one: what the program's dynamic linker exports).
// Read at the first lookup.
class SymbolTable {
  public:
    SymbolTable(const ElfImage& elf, const Sections& sections, std::uint64_t bias,
                bool dynamic_only = false)
        : elf_(elf), sections_(sections), bias_(bias), dynamic_only_(dynamic_only) {}
    std::optional<std::uint64_t> address_of(std::string_view name);
    // The addresses of the defined functions (STT_FUNC, STT_GNU_IFUNC).
    std::vector<std::uint64_t> function_addresses();

  private:
    void load();
    const ElfImage& elf_;
    const Sections& sections_;
    std::uint64_t bias_;
    bool dynamic_only_;
    bool loaded_ = false;
    std::map<std::string, std::uint64_t, std::less<>> symbols_;
    std::vector<std::uint64_t> functions_;
};

// Where the file's first loadable segment starts, page-aligned, at link time.
std::optional<std::uint64_t> link_base(const ElfImage& elf);

// The ELF files mapped into a process: path as the process names it -> the start of its
// mapping at file offset 0 (the lowest: where its first loadable segment went).
std::map<std::string, std::uint64_t> mapped_files(pid_t pid);
// A mapped file's path as tpagent opens it: through the process's root (another mount
// namespace), else as named.
std::string file_of_process(pid_t pid, const std::string& path);
// Of `names`, those the ELF file mapped into process `pid` from `path` at `start` (an entry of
// mapped_files()) defines, at their addresses in the process; from its dynamic symbol table
// alone with `dynamic_only`.
std::map<std::string, std::uint64_t, std::less<>>
mapped_file_symbols(pid_t pid, const std::string& path, std::uint64_t start,
                    std::initializer_list<std::string_view> names, bool dynamic_only);
// Whether `path` names the C library (libc.so.N, or glibc's older libc-X.Y.so).
bool is_c_library(std::string_view path);

} // namespace tpagent::process
