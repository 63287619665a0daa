#include "process/linux/read_only_image.hpp"
#include <algorithm>
#include <array>

namespace tpagent::process {

namespace {
// A private, read-only mapping of a file. Device files are left alone: reading one's mapping
// (say, registers of a device) may do something.
bool read_only_file(const MappedRange& m) {
    return m.readable && !m.writable && !m.shared && m.inode != 0 && m.name.starts_with('/') &&
           !m.name.starts_with("/dev/");
}

// The file mapped by `m` is an ELF object: its mapping at offset 0 holds the ELF header.
bool elf_object(std::span<const MappedRange> maps, const MappedRange& m,
                const ReadProgramMemory& read) {
    for (const MappedRange& first : maps) {
        if (first.offset != 0 || first.inode != m.inode || first.name != m.name || !first.readable)
            continue;
        std::array<std::uint8_t, 4> magic{};
        if (read(first.start, magic) && magic == std::array<std::uint8_t, 4>{0x7f, 'E', 'L', 'F'})
            return true;
    }
    return false;
}
} // namespace

std::uint64_t read_only_image_extent(std::span<const MappedRange> maps, std::uint64_t addr,
                                     std::uint64_t length, const ReadProgramMemory& read) {
    const auto after =
        std::upper_bound(maps.begin(), maps.end(), addr,
                         [](std::uint64_t a, const MappedRange& m) { return a < m.start; });
    if (after == maps.begin() || length == 0) return 0;
    const MappedRange& m = *std::prev(after);
    if (addr >= m.end || !read_only_file(m) || !elf_object(maps, m, read)) return 0;
    return std::min(length, m.end - addr);
}

} // namespace tpagent::process
