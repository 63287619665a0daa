// A process's mappings, as /proc/PID/maps lists them: the one reader every layer uses.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace tpagent {

struct MappedRange {
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    bool readable = false;    // perms start with 'r'
    std::string name;         // the pathname column: a file, "[stack]", "/memfd:x (deleted)"...
    std::uint64_t offset = 0; // into the file
    bool writable = false;    // perms' 'w'
    bool shared = false;      // perms' 's' (MAP_SHARED), else 'p'
    std::uint64_t inode = 0;  // of the file; 0 for anonymous memory
};

// One line of /proc/PID/maps (also the first line of each mapping in /proc/PID/smaps); nullopt
// for any other line.
std::optional<MappedRange> parse_maps_line(std::string_view line);
// Every mapping of a /proc/PID/maps text, sorted by start.
std::vector<MappedRange> parse_maps(std::string_view maps_text);
// Every mapping of process `pid`, sorted by start; empty if it is gone.
std::vector<MappedRange> read_maps(pid_t pid);

} // namespace tpagent
