// Where to put out-of-line execution pads: free address ranges of the inferior within reach of
// the code they serve (so PIE executables and shared libraries work), from /proc/PID/maps.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpagent::process {

struct MappedRange {
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    bool readable = false;    // perms start with 'r'
    std::string name;         // the pathname column: a file, "[stack]", "/memfd:x (deleted)"...
    std::uint64_t offset = 0; // into the file
};

// One line of /proc/PID/maps (also the first line of each mapping in /proc/PID/smaps); nullopt
// for any other line.
std::optional<MappedRange> parse_maps_line(std::string_view line);
// Every mapping of a /proc/PID/maps text, sorted by start.
std::vector<MappedRange> parse_maps(std::string_view maps_text);

// A page-aligned start for `size` free bytes whose whole extent lies within `reach` of `near`,
// as close to `near` as possible and below `top` (the end of the user address space); nullopt
// if there is none. Skips the first 64 KiB (mmap_min_addr).
std::optional<std::uint64_t> find_free_range(const std::vector<MappedRange>& mapped,
                                             std::uint64_t near, std::uint64_t size,
                                             std::uint64_t reach, std::uint64_t top);

} // namespace tpagent::process
