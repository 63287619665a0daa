// See code_entries.hpp.
#include "process/linux/code_entries.hpp"
#include "base/proc_maps.hpp"
#include "process/linux/elf_image.hpp"
#include "process/linux/go_program.hpp"
#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tpagent::process {

namespace {

// Entries of one 32-bit relative jump table read at most.
constexpr std::size_t kMaxTableEntries = 4096;

struct LoadedSection {
    std::uint64_t address = 0;
    std::vector<std::uint8_t> bytes;
};

} // namespace

bool CodeEntries::in_code(const File& f, std::uint64_t addr) const {
    return std::any_of(f.code.begin(), f.code.end(),
                       [&](const auto& c) { return c.first <= addr && addr < c.second; });
}

CodeEntries::File CodeEntries::analyse(pid_t pid, const std::string& path, std::uint64_t start,
                                       std::uint64_t end) {
    File f{path, start, end, {}, {}, {}, false};
    ElfImage elf(file_of_process(pid, path));
    const auto link = elf.valid() ? link_base(elf) : std::nullopt;
    if (!link) {
        f.refused = fmt::format("{} cannot be read as an ELF file", path);
        return f;
    }
    const std::uint64_t bias = start - *link;
    const Sections sections = sections_of(elf);
    // Go's runtime also resumes goroutines where the code does not branch: at any instruction
    // it preempted (the caller looks at the goroutines' stacks), and at a frame's call of
    // runtime.deferreturn when a panic is recovered.
    f.go = has_go_sections(sections);
    SymbolTable symbols(elf, sections, bias);
    arch::CodeReferences refs;
    if (f.go) refs.resumed_at_calls_to = symbols.address_of("runtime.deferreturn").value_or(0);
    std::vector<LoadedSection> code, data;
    for (const Elf64_Shdr& s : sections.headers) {
        if (!(s.sh_flags & SHF_ALLOC) || s.sh_type == SHT_NOBITS || s.sh_size == 0 ||
            s.sh_size > kMaxSectionBytes)
            continue;
        LoadedSection loaded{s.sh_addr + bias, std::vector<std::uint8_t>(s.sh_size)};
        auto got = read_(loaded.address, loaded.bytes);
        if (!got || *got != loaded.bytes.size()) {
            if (s.sh_flags & SHF_EXECINSTR) {
                f.refused =
                    fmt::format("the code of {} at 0x{:x} cannot be read", path, loaded.address);
                return f;
            }
            continue; // data not mapped (a section of a segment the file does not load)
        }
        if (s.sh_flags & SHF_EXECINSTR) {
            f.code.emplace_back(loaded.address, loaded.address + loaded.bytes.size());
            code.push_back(std::move(loaded));
        } else {
            data.push_back(std::move(loaded));
        }
    }
    for (const LoadedSection& c : code)
        arch_.sweep_code_references(c.bytes, c.address, refs);
    for (std::uint64_t t : refs.targets)
        if (in_code(f, t)) f.entries.push_back(t);
    f.entries.insert(f.entries.end(), refs.resumed_calls.begin(), refs.resumed_calls.end());
    // Functions other files call.
    for (std::uint64_t a : symbols.function_addresses())
        if (in_code(f, a)) f.entries.push_back(a);
    // Stored code pointers.
    for (const LoadedSection& d : data)
        for (std::size_t i = (8 - d.address % 8) % 8; i + 8 <= d.bytes.size(); i += 8) {
            std::uint64_t word = 0;
            std::memcpy(&word, d.bytes.data() + i, 8);
            if (in_code(f, word)) f.entries.push_back(word);
        }
    // Relative jump tables: base + int32 entry, as GCC and Clang emit them for PIC switches.
    std::sort(refs.tables.begin(), refs.tables.end());
    refs.tables.erase(std::unique(refs.tables.begin(), refs.tables.end()), refs.tables.end());
    // A table ends where the next one the code reaches starts (tables sit side by side, and
    // the next one's entries, read against this base, could still land in code).
    for (std::size_t k = 0; k < refs.tables.size(); ++k) {
        const std::uint64_t base = refs.tables[k];
        auto d = std::find_if(data.begin(), data.end(), [&](const LoadedSection& s) {
            return s.address <= base && base < s.address + s.bytes.size();
        });
        if (d == data.end()) continue;
        std::uint64_t limit = d->bytes.size();
        if (k + 1 < refs.tables.size())
            limit = std::min<std::uint64_t>(limit, refs.tables[k + 1] - d->address);
        for (std::size_t i = 0; i < kMaxTableEntries; ++i) {
            const std::uint64_t at = base - d->address + 4 * i;
            if (at + 4 > limit) break;
            std::int32_t e = 0;
            std::memcpy(&e, d->bytes.data() + at, 4);
            const std::uint64_t target = base + static_cast<std::uint64_t>(std::int64_t{e});
            if (!in_code(f, target)) break;
            f.entries.push_back(target);
        }
    }
    std::sort(f.entries.begin(), f.entries.end());
    f.entries.erase(std::unique(f.entries.begin(), f.entries.end()), f.entries.end());
    spdlog::debug("{}: {} places control may arrive at, in {} code section(s)", path,
                  f.entries.size(), code.size());
    return f;
}

const CodeEntries::File* CodeEntries::file_at(pid_t pid, std::uint64_t addr) {
    for (const File& f : files_)
        if (f.start <= addr && addr < f.end) return &f;
    const auto maps = read_maps(pid);
    auto at = std::find_if(maps.begin(), maps.end(),
                           [&](const MappedRange& m) { return m.start <= addr && addr < m.end; });
    if (at == maps.end() || !at->name.starts_with('/')) return nullptr;
    std::uint64_t start = 0, end = 0;
    std::optional<std::uint64_t> first;
    for (const MappedRange& m : maps) {
        if (m.name != at->name) continue;
        if (end == 0) start = m.start;
        end = std::max(end, m.end);
        if (m.offset == 0 && !first) first = m.start;
    }
    if (!first) return nullptr;
    files_.push_back(analyse(pid, at->name, *first, end));
    files_.back().start = start;
    return &files_.back();
}

bool CodeEntries::go_code(pid_t pid, std::uint64_t addr) {
    const File* f = file_at(pid, addr);
    return f && f->go;
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> CodeEntries::file_span(pid_t pid,
                                                                              std::uint64_t addr) {
    const File* f = file_at(pid, addr);
    if (!f) return std::nullopt;
    return std::pair{f->start, f->end};
}

std::optional<std::string> CodeEntries::entry_inside(pid_t pid, std::uint64_t lo,
                                                     std::uint64_t hi) {
    const File* f = file_at(pid, lo);
    if (!f) return fmt::format("the code at 0x{:x} is in no ELF file", lo);
    if (f->refused) return f->refused;
    auto it = std::upper_bound(f->entries.begin(), f->entries.end(), lo);
    if (it != f->entries.end() && *it < hi)
        return fmt::format("0x{:x}, inside the {} bytes the jump displaces, is reached from "
                           "elsewhere in {}",
                           *it, hi - lo, f->path);
    return std::nullopt;
}

} // namespace tpagent::process
