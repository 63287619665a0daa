// The SVR4 shared-library list (qXfer:libraries-svr4:read), read from the dynamic linker's
// r_debug / link_map chain in the inferior's memory.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tpagent::process {

// Reads exactly out.size() bytes at addr; false if any is unreadable.
using MemoryReader = std::function<bool(std::uint64_t addr, std::span<std::uint8_t> out)>;

// The list with no library: the program's r_debug is not set up yet.
inline constexpr std::string_view kEmptyLibraryList = "<library-list-svr4 version=\"1.0\"/>";

// `auxv` is the raw /proc/PID/auxv of a 64-bit process. nullopt where the program has no
// DT_DEBUG to find r_debug by (no PT_PHDR, PT_DYNAMIC or DT_DEBUG: a static program, or the
// dynamic linker run as the program, `ld.so ./prog`): gdb then finds the list itself, from the
// dynamic linker's `_r_debug` (gdbserver answers E01 there too).
std::optional<std::string> svr4_library_list(std::string_view auxv, const MemoryReader& read);
// The program's own link map (the list's main-lm): 0 while r_debug is not set up; nullopt as
// above.
std::optional<std::uint64_t> svr4_main_link_map(std::string_view auxv, const MemoryReader& read);

// The value of an auxv entry (AT_BASE, AT_PHDR...); 0 where there is none.
std::uint64_t auxv_value(std::string_view auxv, std::uint64_t type);

} // namespace tpagent::process
