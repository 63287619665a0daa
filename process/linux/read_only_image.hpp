// The read-only image of a program's ELF objects as mapped now: the memory a trace frame shows
// from the live program though no hit collected it.
//
// gdb sends `QTro` at tstart with the executable's read-only sections at their link-time
// addresses (wrong for a PIE) and no shared library; when it reads a trace frame it asks the
// stub for any address in a read-only section of any object it knows (its unwinder reads code),
// at the address the program has it. GDB manual, "Tracepoint Packets" (QTro): "these areas
// never change", so their current contents are what the hit saw. What stays true of that here
// is a mapping, read-only and private, of a file that is an ELF object (its first mapping,
// at file offset 0, starts with the ELF magic): code, read-only data and RELRO data, whose
// pages cannot be written without an mprotect. Writable memory, the heap, anonymous or shared
// mappings, devices and read-only mappings of other files (data a program mapped) are not:
// their contents may have changed since the hit. Read when gdb asks, not kept at tstart: a
// library's code is megabytes, and libraries loaded during the run count too (a library
// unloaded since the hit, another mapped in its place, would show the new one).
#pragma once
#include "base/proc_maps.hpp"
#include <cstdint>
#include <functional>
#include <span>

namespace tpagent::process {

// Reads `out.size()` bytes at `addr` from the program; false if it cannot.
using ReadProgramMemory = std::function<bool(std::uint64_t addr, std::span<std::uint8_t> out)>;

// How many bytes from `addr` (at most `length`) lie in one read-only mapping of an ELF object
// among `maps` (sorted by start, as parse_maps gives them); 0 when `addr` is in none.
std::uint64_t read_only_image_extent(std::span<const MappedRange> maps, std::uint64_t addr,
                                     std::uint64_t length, const ReadProgramMemory& read);

} // namespace tpagent::process
