// tpdump's command line.
#pragma once
#include "base/result.hpp"
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace tpagent::tpdump {

enum class OutputFormat : std::uint8_t { Text, Json, Perfetto, Html };

struct Options {
    std::string path;
    OutputFormat format = OutputFormat::Text;
    std::set<std::uint32_t> tracepoints; // empty = all
    std::size_t first_frame = 0;         // --frames A-B, inclusive
    std::size_t last_frame = SIZE_MAX;
    // --registers: names to show; empty = the default choice; {"none"} = none.
    std::vector<std::string> registers;
    bool all_registers = false; // text: also wide registers that are all zero
    bool disassemble = false;   // text: agent expressions as instructions
    bool seal = false;          // seal the file if it was cut short, print nothing else
    bool follow = false;        // path is a recording's folder: print frames as they come
    bool help = false;
    bool version = false;

    bool tracepoint_selected(std::uint32_t number) const {
        return tracepoints.empty() || tracepoints.count(number) != 0;
    }
    bool frame_selected(std::size_t number) const {
        return number >= first_frame && number <= last_frame;
    }
};

// `args` without the program name. Errors are usage errors, their text names the bad value.
Result<Options> parse_options(std::span<char* const> args);
// --help and --version output, in the GNU layout help2man reads.
std::string help_text();
std::string version_text();

} // namespace tpagent::tpdump
