// What the printers share: which frames and registers to show, values as hex text, names
// of variables and tracepoints.
#pragma once
#include "tools/tpdump/options.hpp"
#include "tools/tracefile/trace_file.hpp"
#include <span>
#include <string>
#include <vector>

namespace tpagent::tpdump {

// The frames the options select, in file order.
std::vector<const tracefile::Frame*> selected_frames(const tracefile::TraceFile& file,
                                                     const Options& options);

// Register value as "0x" + hex digits, most significant first (the bytes are little-endian).
std::string register_hex(std::span<const std::uint8_t> bytes);
bool all_zero(std::span<const std::uint8_t> bytes);

struct ShownRegister {
    const tracefile::RegisterInfo* info;
    std::span<const std::uint8_t> bytes;
};
// The registers of `block` to show. `text`: by default skip wide registers that are zero.
std::vector<ShownRegister> shown_registers(const tracefile::TraceFile& file,
                                           std::span<const std::uint8_t> block,
                                           const Options& options, bool text);

// "$name" of a variable, or "#<number>" when the file does not define it.
std::string variable_name(const tracefile::TraceFile& file, std::uint32_t number);
// The `at` source string of a tracepoint (its location as the user typed it), if present.
std::string tracepoint_location(const tracefile::TraceFile& file, std::uint32_t number);

} // namespace tpagent::tpdump
