// tpdump: prints a trace file as text, JSON lines, a Perfetto-loadable trace or an HTML report.
#include "tools/tpdump/file_options.hpp"
#include "tools/tpdump/folder_printer.hpp"
#include "tools/tpdump/follow.hpp"
#include "tools/tpdump/html_report.hpp"
#include "tools/tpdump/json_printer.hpp"
#include "tools/tpdump/options.hpp"
#include "tools/tpdump/perfetto_printer.hpp"
#include "tools/tpdump/record_host.hpp"
#include "tools/tpdump/text_printer.hpp"
#include "tools/tracefile/trace_file.hpp"
#include "tools/tracefile/trace_folder.hpp"
#include "trace/trace_file_seal.hpp"
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fmt/format.h>

namespace {

using namespace tpagent;

constexpr int kExitBadFile = 1;
constexpr int kExitUsage = 2;

int usage_error(const Error& error) {
    fmt::print(stderr, "tpdump: {}\n(tpdump --help for usage)\n", error.text);
    return kExitUsage;
}

int file_error(const std::string& path, const Error& error) {
    // read errors already name the path; format errors name the offset
    if (error.text.rfind("offset ", 0) == 0)
        fmt::print(stderr, "tpdump: {}: {}\n", path, error.text);
    else
        fmt::print(stderr, "tpdump: {}\n", error.text);
    return kExitBadFile;
}

void print(const tracefile::TraceFile& file, const tpdump::Options& options) {
    switch (options.format) {
    case tpdump::OutputFormat::Text:
        tpdump::print_text(file, options, stdout);
        break;
    case tpdump::OutputFormat::Json:
        tpdump::print_json(file, options, stdout);
        break;
    case tpdump::OutputFormat::Perfetto:
        tpdump::print_perfetto(file, options, stdout);
        break;
    case tpdump::OutputFormat::Html:
        tpdump::print_html(file, options, stdout);
        break;
    }
}

// --seal: one line saying what was done.
int seal(const std::string& path) {
    auto report = trace::seal_trace_file(path);
    if (!report) return file_error(path, report.error());
    if (report->was_sealed)
        fmt::print("{}: not cut: {} frame(s), its end marker there; left as it was\n", path,
                   report->frames);
    else
        fmt::print("{}: sealed: {} whole frame(s) kept, {} byte(s) of a frame cut short "
                   "removed\n",
                   path, report->frames, report->cut_bytes);
    return std::fflush(stdout) == 0 ? 0 : kExitBadFile;
}

// A recording's folder as one trace; a file in it cut short is named after the frames.
int print_folder(const tpdump::Options& options) {
    auto folder = tracefile::read_trace_folder(options.path);
    if (!folder) return file_error(options.path, folder.error());
    if (auto s = tpdump::check_options_against_file(folder->trace, options); !s)
        return usage_error(s.error());
    tpdump::print_folder(*folder, options, stdout);
    if (std::fflush(stdout) != 0) return kExitBadFile;
    int code = 0;
    for (const auto& part : folder->parts)
        if (part.damage) code = file_error(part.path, *part.damage);
    for (const auto& [path, why] : folder->skipped)
        code = file_error(path, why);
    return code;
}

} // namespace

static int run(int argc, char** argv) {
    if (argc >= 2 && std::string_view(argv[1]) == "record")
        return tpdump::record_main(std::span<char* const>(argv + 2, argc - 2));
    auto options = tpdump::parse_options(std::span<char* const>(argv + 1, argc - 1));
    if (!options) return usage_error(options.error());
    if (options->help || options->version) {
        std::fputs((options->help ? tpdump::help_text() : tpdump::version_text()).c_str(), stdout);
        return std::fflush(stdout) == 0 ? 0 : kExitBadFile;
    }
    const bool folder = std::filesystem::is_directory(options->path);
    if (options->follow) {
        // HOST:PORT or :PORT (a bare number could be a folder's name mistyped).
        if (!folder && options->path.find(':') != std::string::npos &&
            tpdump::parse_board(options->path))
            return tpdump::follow_board(*options, stdout);
        if (!folder)
            return usage_error(make_error(
                ErrorCode::BadInput, fmt::format("--follow: {} is not a folder", options->path)));
        return tpdump::follow_folder(*options, stdout);
    }
    if (options->seal) return seal(options->path);
    if (folder) return print_folder(*options);
    auto file = tracefile::read_trace_file(options->path);
    if (!file) return file_error(options->path, file.error());
    if (auto s = tpdump::check_options_against_file(*file, *options); !s)
        return usage_error(s.error());
    // A damaged file: what was read before the damage, then the damage.
    print(*file, *options);
    if (std::fflush(stdout) != 0) return kExitBadFile;
    if (file->damage()) return file_error(options->path, *file->damage());
    return 0;
}

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& e) { // out of memory, mostly: a clear line, not an abort
        std::fprintf(stderr, "tpdump: %s\n", e.what());
        return kExitBadFile;
    }
}
