// tpdump: prints a trace file as text, JSON lines or a Perfetto-loadable trace.
#include "tools/tpdump/html_report.hpp"
#include "tools/tpdump/json_printer.hpp"
#include "tools/tpdump/options.hpp"
#include "tools/tpdump/perfetto_printer.hpp"
#include "tools/tpdump/text_printer.hpp"
#include "tools/tracefile/trace_file.hpp"
#include <cstdio>
#include <string_view>
#include <fmt/format.h>

namespace {

constexpr int kExitBadFile = 1;
constexpr int kExitUsage = 2;

} // namespace

int main(int argc, char** argv) {
    using namespace tpagent;
    if (argc == 2 && std::string_view(argv[1]) == "--version") {
        fmt::print("tpdump {}\n", TPAGENT_VERSION);
        return 0;
    }
    auto options = tpdump::parse_options(std::span<char* const>(argv + 1, argc - 1));
    if (!options) {
        fmt::print(stderr, "tpdump: {}\n(tpdump --help for usage)\n", options.error().text);
        return kExitUsage;
    }
    if (options->help) {
        std::fputs(tpdump::kHelp, stdout);
        return 0;
    }
    auto file = tracefile::read_trace_file(options->path);
    if (!file) {
        // read errors already name the path; format errors name the offset
        const std::string& text = file.error().text;
        if (text.rfind("offset ", 0) == 0)
            fmt::print(stderr, "tpdump: {}: {}\n", options->path, text);
        else
            fmt::print(stderr, "tpdump: {}\n", text);
        return kExitBadFile;
    }
    switch (options->format) {
    case tpdump::OutputFormat::Text:
        tpdump::print_text(*file, *options, stdout);
        break;
    case tpdump::OutputFormat::Json:
        tpdump::print_json(*file, *options, stdout);
        break;
    case tpdump::OutputFormat::Perfetto:
        tpdump::print_perfetto(*file, *options, stdout);
        break;
    case tpdump::OutputFormat::Html:
        tpdump::print_html(*file, *options, stdout);
        break;
    }
    return std::fflush(stdout) == 0 ? 0 : kExitBadFile;
}
