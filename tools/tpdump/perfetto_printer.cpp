#include "tools/tpdump/perfetto_printer.hpp"
#include "tools/tpdump/frame_threads.hpp"

#include "tools/tpdump/frame_details.hpp"
#include "tools/tpdump/frame_times.hpp"
#include "tools/tpdump/json_output.hpp"
#include <fmt/format.h>
#include <map>
#include <set>
#include <tuple>
#include <utility>

namespace tpagent::tpdump {

namespace {

constexpr int kTracepointsPid = 1;
constexpr int kThreadsPid = 2;
// Thread tracks are numbered after every tracepoint number (1..65535).
constexpr std::int64_t kFirstThreadTid = 0x10000;

std::string track_name(const tracefile::TraceFile& file, std::uint32_t tracepoint) {
    std::string location = tracepoint_location(file, tracepoint);
    return location.empty() ? fmt::format("tracepoint {}", tracepoint)
                            : fmt::format("tracepoint {}: {}", tracepoint, location);
}

Json metadata(const char* name, int pid, std::int64_t tid, const std::string& value) {
    return {{"ph", "M"}, {"name", name}, {"pid", pid}, {"tid", tid}, {"args", {{"name", value}}}};
}

// One line of the traceEvents array. `ts` goes first as exact text (see microseconds_text).
std::string event_line(const Json& event, std::int64_t ns) {
    std::string rest = json_text(event);
    return fmt::format(",\n{{\"ts\":{},{}", microseconds_text(ns), rest.substr(1));
}

// A track per thread that collected frames, numbered in the order the frames show them.
class ThreadTracks {
  public:
    ThreadTracks(const tracefile::TraceFile& file,
                 const std::vector<const tracefile::Frame*>& frames) {
        threads_ = frame_threads(file, frames);
        for (const auto& thread : threads_) {
            if (thread && !tids_.count(key(*thread))) {
                tids_[key(*thread)] = kFirstThreadTid + static_cast<std::int64_t>(tids_.size());
                names_.emplace_back(tids_[key(*thread)], thread_label(*thread));
            }
        }
    }
    // The track of the i-th frame's thread, if known.
    std::optional<std::int64_t> tid(std::size_t i) const {
        if (!threads_[i]) return std::nullopt;
        return tids_.at(key(*threads_[i]));
    }
    const std::optional<FrameThread>& thread(std::size_t i) const { return threads_[i]; }
    const std::vector<std::pair<std::int64_t, std::string>>& names() const { return names_; }

  private:
    static std::tuple<std::uint64_t, bool, std::uint64_t> key(const FrameThread& t) {
        return {t.process, t.from_tls_base, t.id};
    }
    std::vector<std::optional<FrameThread>> threads_;
    std::map<std::tuple<std::uint64_t, bool, std::uint64_t>, std::int64_t> tids_;
    std::vector<std::pair<std::int64_t, std::string>> names_;
};

std::string metadata_lines(const tracefile::TraceFile& file, const Options& options,
                           const std::vector<const tracefile::Frame*>& frames,
                           const ThreadTracks& threads) {
    std::string out = json_text(metadata("process_name", kTracepointsPid, 0,
                                         fmt::format("trace file {}: tracepoints", options.path)));
    std::set<std::uint32_t> tracepoints;
    for (const trace::Tracepoint& tp : file.tracepoints())
        if (options.tracepoint_selected(tp.definition.key.number))
            tracepoints.insert(tp.definition.key.number);
    for (const tracefile::Frame* f : frames)
        tracepoints.insert(f->tracepoint);
    for (std::uint32_t tp : tracepoints)
        out +=
            ",\n" + json_text(metadata("thread_name", kTracepointsPid, tp, track_name(file, tp)));
    if (threads.names().empty()) return out;
    out += ",\n" + json_text(metadata("process_name", kThreadsPid, 0,
                                      fmt::format("trace file {}: threads", options.path)));
    for (const auto& [tid, name] : threads.names())
        out += ",\n" + json_text(metadata("thread_name", kThreadsPid, tid, name));
    return out;
}

} // namespace

void print_perfetto(const tracefile::TraceFile& file, const Options& options, std::FILE* stream) {
    auto frames = selected_frames(file, options);
    const FrameTimes times = frame_times(file, frames);
    const ThreadTracks threads(file, frames);

    std::fputs("{\"traceEvents\":[\n", stream);
    std::fputs(metadata_lines(file, options, frames, threads).c_str(), stream);
    for (std::size_t i = 0; i < frames.size(); ++i) {
        const tracefile::Frame& f = *frames[i];
        Json args = {{"frame", f.number}};
        if (auto pc = file.frame_pc(f)) args["pc"] = fmt::format("0x{:x}", *pc);
        if (threads.thread(i)) args["thread"] = thread_label(*threads.thread(i));
        for (const trace::FrameBlock& b : f.blocks)
            if (b.type == 'V') args[variable_name(file, b.variable)] = b.value;
        std::string location = tracepoint_location(file, f.tracepoint);
        Json event = {
            {"ph", "i"},
            {"s", "t"},
            {"cat", "tracepoint"},
            {"name", location.empty() ? fmt::format("tracepoint {}", f.tracepoint) : location},
            {"pid", kTracepointsPid},
            {"tid", f.tracepoint},
            {"args", args}};
        std::string out = event_line(event, times.ns[i]);
        if (auto tid = threads.tid(i)) {
            event["pid"] = kThreadsPid;
            event["tid"] = *tid;
            out += event_line(event, times.ns[i]);
        }
        std::fputs(out.c_str(), stream);
    }
    Json other = {{"clock", times.clock}};
    if (file.damage()) other["damage"] = file.damage()->text;
    std::fputs(fmt::format("\n],\"otherData\":{}}}\n", json_text(other)).c_str(), stream);
}

} // namespace tpagent::tpdump
