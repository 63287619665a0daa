// tpdump on arbitrary bytes: whatever the trace-file reader accepts (whole or up to its
// damage), every output format prints without crashing (one per input, by its size: text,
// JSON, Perfetto, HTML, or text with every register and disassembly on). Seeds: the files in
// tests/data/tracefiles.
#include "tools/tpdump/file_options.hpp"
#include "tools/tpdump/html_report.hpp"
#include "tools/tpdump/json_printer.hpp"
#include "tools/tpdump/options.hpp"
#include "tools/tpdump/perfetto_printer.hpp"
#include "tools/tpdump/text_printer.hpp"
#include "tools/tracefile/trace_file.hpp"
#include "fuzz/invariant.hpp"

#include <cstdint>
#include <cstdio>
#include <vector>

using namespace tpagent;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static std::FILE* sink = std::fopen("/dev/null", "w");
    INVARIANT(sink != nullptr);
    auto file = tracefile::parse_trace_file(std::vector<std::uint8_t>(data, data + size));
    if (!file) return 0;
    tpdump::Options options;
    if (!tpdump::check_options_against_file(*file, options)) return 0;
    // One output per input, chosen by its size, so that each execution stays cheap.
    switch (size % 5) {
    case 0:
        tpdump::print_text(*file, options, sink);
        break;
    case 1:
        tpdump::print_json(*file, options, sink);
        break;
    case 2:
        tpdump::print_perfetto(*file, options, sink);
        break;
    case 3:
        tpdump::print_html(*file, options, sink);
        break;
    default:
        options.all_registers = true;
        options.disassemble = true;
        tpdump::print_text(*file, options, sink);
        break;
    }
    return 0;
}
