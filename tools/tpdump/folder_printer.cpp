// See folder_printer.hpp.
#include "tools/tpdump/folder_printer.hpp"

#include "tools/tpdump/html_report.hpp"
#include "tools/tpdump/json_output.hpp"
#include "tools/tpdump/json_printer.hpp"
#include "tools/tpdump/perfetto_printer.hpp"
#include "tools/tpdump/text_printer.hpp"
#include <filesystem>
#include <fmt/format.h>

namespace tpagent::tpdump {

namespace {

std::string file_name(const std::string& path) {
    return std::filesystem::path(path).filename().string();
}

// The part has a frame --frames selects (or no frames, and sits among selected ones).
bool part_selected(const tracefile::FolderPart& part, const Options& options) {
    const std::size_t last = part.frames ? part.first_frame + part.frames - 1 : part.first_frame;
    return part.first_frame <= options.last_frame && last >= options.first_frame;
}

} // namespace

std::string part_line(const tracefile::FolderPart& part, const tracefile::FolderPart* previous,
                      OutputFormat format) {
    const auto& r = part.recorded;
    if (format == OutputFormat::Json) {
        Json line = {
            {"file", part.path}, {"first_frame", part.first_frame}, {"frames", part.frames}};
        if (r) {
            line["run_first"] = r->first;
            line["missing_before"] = part.missing_before;
            line["lost"] = r->lost;
            line["dropped"] = r->dropped;
            line["unwritten"] = r->unwritten;
        }
        return json_text(line) + "\n";
    }
    std::string out = fmt::format("\n--- {}: ", file_name(part.path));
    out += part.frames ? fmt::format("frames {} to {} here", part.first_frame,
                                     part.first_frame + part.frames - 1)
                       : std::string("no frame");
    if (!r) return out + "\n";
    if (part.frames)
        out += fmt::format(", the run's {} to {}", r->first, r->first + part.frames - 1);
    if (part.missing_before)
        out += fmt::format("; {} of the run's frames before it are in no file here",
                           part.missing_before);
    // What the recording counted between the previous file's end and this one's.
    const auto& before = previous ? previous->recorded : std::nullopt;
    const std::uint64_t lost = r->lost - (before ? std::min(before->lost, r->lost) : 0);
    const std::uint64_t dropped = r->dropped - (before ? std::min(before->dropped, r->dropped) : 0);
    const std::uint64_t unwritten =
        r->unwritten - (before ? std::min(before->unwritten, r->unwritten) : 0);
    if (lost || dropped || unwritten)
        out += fmt::format("; by its end, {}: {} overwritten before recorded, {} not collected "
                           "(no room in the buffer), {} not written (disk)",
                           previous ? "since the file before" : "in the run", lost, dropped,
                           unwritten);
    return out + "\n";
}

void print_folder(const tracefile::TraceFolder& folder, const Options& options, std::FILE* out) {
    const tracefile::TraceFile& trace = folder.trace;
    switch (options.format) {
    case OutputFormat::Perfetto:
        print_perfetto(trace, options, out);
        return;
    case OutputFormat::Html:
        print_html(trace, options, out);
        return;
    case OutputFormat::Text: {
        print_text_header(trace, options, out);
        std::string line =
            fmt::format("folder: {} file(s) of its newest run, {} to {}", folder.parts.size(),
                        file_name(folder.parts.front().path), file_name(folder.parts.back().path));
        if (folder.earlier_files)
            line += fmt::format("; {} file(s) of earlier runs left out", folder.earlier_files);
        std::fputs((line + "\n").c_str(), out);
        break;
    }
    case OutputFormat::Json:
        break;
    }
    const tracefile::FolderPart* previous = nullptr;
    for (const tracefile::FolderPart& part : folder.parts) {
        if (part_selected(part, options)) {
            std::fputs(part_line(part, previous, options.format).c_str(), out);
            for (std::size_t i = part.first_frame; i < part.first_frame + part.frames; ++i) {
                const tracefile::Frame& frame = trace.frames()[i];
                if (!options.frame_selected(frame.number) ||
                    !options.tracepoint_selected(frame.tracepoint))
                    continue;
                std::fputs(options.format == OutputFormat::Json
                               ? json_frame_line(trace, frame, options).c_str()
                               : text_frame(trace, frame, options).c_str(),
                           out);
            }
        }
        previous = &part;
    }
}

} // namespace tpagent::tpdump
