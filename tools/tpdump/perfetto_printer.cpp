#include "tools/tpdump/perfetto_printer.hpp"

#include "tools/tpdump/frame_details.hpp"
#include "tools/tpdump/json_output.hpp"
#include <fmt/format.h>
#include <set>

namespace tpagent::tpdump {

namespace {

constexpr int kPid = 1;

// A quoted JSON string.
std::string json_string(const std::string& text) {
    return json_text(Json(text));
}

// Event times in microseconds. With $trace_timestamp (gdbserver: microseconds) a frame that
// did not collect it, such as a while-stepping step, is placed 1 ns after the frame before
// it; without any timestamp the frame number is the time.
std::vector<double> event_times(const tracefile::TraceFile& file,
                                const std::vector<const tracefile::Frame*>& frames, bool& timed) {
    std::vector<double> out;
    auto variable = file.timestamp_variable();
    timed = false;
    if (variable)
        for (const tracefile::Frame* f : frames)
            timed = timed || f->variable(*variable).has_value();
    if (!timed) {
        for (const tracefile::Frame* f : frames)
            out.push_back(static_cast<double>(f->number));
        return out;
    }
    // Frames before the first timestamped one sit just before it.
    double first = 0;
    for (const tracefile::Frame* f : frames)
        if (auto t = f->variable(*variable)) {
            first = static_cast<double>(*t);
            break;
        }
    double last = first - 0.001 * static_cast<double>(frames.size());
    for (const tracefile::Frame* f : frames) {
        auto t = f->variable(*variable);
        last = t ? static_cast<double>(*t) : last + 0.001;
        out.push_back(last);
    }
    return out;
}

std::string track_name(const tracefile::TraceFile& file, std::uint32_t tracepoint) {
    std::string location = tracepoint_location(file, tracepoint);
    return location.empty() ? fmt::format("tracepoint {}", tracepoint)
                            : fmt::format("tracepoint {}: {}", tracepoint, location);
}

} // namespace

void print_perfetto(const tracefile::TraceFile& file, const Options& options, std::FILE* stream) {
    auto frames = selected_frames(file, options);
    bool timed = false;
    auto times = event_times(file, frames, timed);

    std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    out += fmt::format("{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":0,"
                       "\"args\":{{\"name\":{}}}}}",
                       kPid, json_string("trace file " + options.path));
    std::set<std::uint32_t> tracks;
    for (const trace::Tracepoint& tp : file.tracepoints())
        if (options.tracepoint_selected(tp.definition.key.number))
            tracks.insert(tp.definition.key.number);
    for (const tracefile::Frame* f : frames)
        tracks.insert(f->tracepoint);
    for (std::uint32_t tp : tracks)
        out += fmt::format(",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},"
                           "\"args\":{{\"name\":{}}}}}",
                           kPid, tp, json_string(track_name(file, tp)));
    std::fputs(out.c_str(), stream);

    for (std::size_t i = 0; i < frames.size(); ++i) {
        const tracefile::Frame& f = *frames[i];
        std::string args = fmt::format("\"frame\":{}", f.number);
        if (auto pc = file.frame_pc(f)) args += fmt::format(",\"pc\":\"0x{:x}\"", *pc);
        for (const trace::FrameBlock& b : f.blocks)
            if (b.type == 'V')
                args +=
                    fmt::format(",{}:{}", json_string(variable_name(file, b.variable)), b.value);
        std::string location = tracepoint_location(file, f.tracepoint);
        std::string name = location.empty() ? fmt::format("tracepoint {}", f.tracepoint) : location;
        out = fmt::format(",\n{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"tracepoint\",\"name\":{},"
                          "\"pid\":{},\"tid\":{},\"ts\":{:.3f},\"args\":{{{}}}}}",
                          json_string(name), kPid, f.tracepoint, times[i], args);
        std::fputs(out.c_str(), stream);
    }
    std::fputs(fmt::format("\n],\"otherData\":{{\"clock\":{}}}}}\n",
                           json_string(timed ? "$trace_timestamp (microseconds)" : "frame order"))
                   .c_str(),
               stream);
}

} // namespace tpagent::tpdump
