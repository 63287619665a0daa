// Finding SDT markers: every ELF file mapped into a process (/proc/PID/maps), its
// `.note.stapsdt` notes read from the file and placed at the file's load address.
#pragma once
#include "arch/arch.hpp"
#include "process/static_marker.hpp"
#include <span>
#include <string>
#include <sys/types.h>
#include <vector>

namespace tpagent::process {

// The markers of one ELF image, `bias` added to its link-time addresses; empty when the
// file has none or is not a 64-bit little-endian ELF file. Every size in it is bounded.
std::vector<StaticMarker> sdt_markers_of_file(const std::string& path, std::uint64_t bias,
                                              const arch::Architecture& arch);

// All markers of the process's mapped executable and libraries, by address.
std::vector<StaticMarker> sdt_markers_of_process(pid_t pid, const arch::Architecture& arch);

} // namespace tpagent::process
