#include "tools/tpdump/frame_threads.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <string_view>

namespace tpagent::tpdump {

namespace {

// A frame where a TLS base was seen with a thread id.
struct Tie {
    std::size_t frame;
    std::uint64_t id;
};

std::optional<std::uint64_t> thread_id(const tracefile::TraceFile& file,
                                       const tracefile::Frame& frame) {
    auto thread = frame_thread(file, frame);
    if (!thread || thread->from_tls_base) return std::nullopt;
    return thread->id;
}

// The TLS base register of the frame's R block (the registers frame_thread reads).
std::optional<std::uint64_t> tls_base(const tracefile::TraceFile& file,
                                      const tracefile::Frame& frame) {
    auto block = frame.registers();
    if (!block || !file.register_layout()) return std::nullopt;
    for (std::string_view name : {"fs_base", "tpidr"})
        if (const tracefile::RegisterInfo* reg = file.register_layout()->find(name))
            if (auto base = tracefile::register_value(*reg, *block); base && *base != 0)
                return base;
    return std::nullopt;
}

// The thread id a TLS base stood for at frame `frame`. The C library gives an exited
// thread's stack and TLS to the next thread it starts, so one base may stand for several
// ids over a trace: the tie nearest before the frame counts, else the first after it.
std::uint64_t id_at(const std::vector<Tie>& ties, std::size_t frame) {
    auto after = std::upper_bound(ties.begin(), ties.end(), frame,
                                  [](std::size_t f, const Tie& t) { return f < t.frame; });
    return after == ties.begin() ? after->id : std::prev(after)->id;
}

// What each frame says of its thread, and the ties the frames that say both make. A TLS base
// is one thread's within a process: forked processes have the same ones.
struct ThreadEvidence {
    std::vector<std::optional<std::uint64_t>> ids, bases; // per frame
    std::vector<std::uint64_t> processes;                 // per frame; 0: not collected
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<Tie>> ties; // by process, base
};

ThreadEvidence gather(const tracefile::TraceFile& file,
                      const std::vector<const tracefile::Frame*>& frames) {
    ThreadEvidence e;
    for (std::size_t i = 0; i < frames.size(); ++i) {
        e.ids.push_back(thread_id(file, *frames[i]));
        e.bases.push_back(tls_base(file, *frames[i]));
        e.processes.push_back(frame_process(file, *frames[i]));
        if (e.ids.back() && e.bases.back())
            e.ties[{e.processes.back(), *e.bases.back()}].push_back({i, *e.ids.back()});
    }
    return e;
}

std::optional<FrameThread> thread_of(const ThreadEvidence& e, std::size_t frame) {
    const std::uint64_t process = e.processes[frame];
    if (e.ids[frame]) return FrameThread{*e.ids[frame], false, process};
    if (!e.bases[frame]) return std::nullopt;
    if (auto tied = e.ties.find({process, *e.bases[frame]}); tied != e.ties.end())
        return FrameThread{id_at(tied->second, frame), false, process};
    return FrameThread{*e.bases[frame], true, process};
}

} // namespace

std::vector<std::optional<FrameThread>>
frame_threads(const tracefile::TraceFile& file,
              const std::vector<const tracefile::Frame*>& frames) {
    const ThreadEvidence evidence = gather(file, frames);
    std::vector<std::optional<FrameThread>> out;
    out.reserve(frames.size());
    for (std::size_t i = 0; i < frames.size(); ++i)
        out.push_back(thread_of(evidence, i));
    return out;
}

} // namespace tpagent::tpdump
