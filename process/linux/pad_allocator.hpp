// Where to put out-of-line execution pads: free address ranges of the inferior within reach of
// the code they serve (so PIE executables and shared libraries work), from /proc/PID/maps.
#pragma once
#include "base/proc_maps.hpp"
#include <cstdint>
#include <optional>
#include <vector>

namespace tpagent::process {

// A page-aligned start for `size` free bytes whose whole extent lies within `reach` of `near`,
// as close to `near` as possible and below `top` (the end of the user address space); nullopt
// if there is none. Skips the first 64 KiB (mmap_min_addr).
std::optional<std::uint64_t> find_free_range(const std::vector<MappedRange>& mapped,
                                             std::uint64_t near, std::uint64_t size,
                                             std::uint64_t reach, std::uint64_t top);

} // namespace tpagent::process
