// Snapshots of the trace buffer (experiment/trace_snapshots.hpp) — the flight recorder's
// trigger: `monitor snapshot`, SIGUSR1 to tpagent, or a tracepoint's hits write the frames the
// buffer holds into a new file, gdb connected or not, while the trace goes on.
#include "server/server.hpp"
#include "server/debug_output.hpp"
#include "experiment/trace_file_writer.hpp"
#include "arch/arch.hpp"
#include "protocol/hex.hpp"
#include "server/options.hpp"
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <spdlog/spdlog.h>

namespace tpagent::server {

namespace {
// How often a trigger tracepoint's hits are looked at while a run goes on.
constexpr std::chrono::milliseconds kTriggerInterval{50};

// The hits of tracepoint `number`, over all its locations, in this run.
std::uint64_t hits_of(experiment::TraceExperiment& experiment, std::uint64_t number) {
    std::uint64_t hits = 0;
    for (const auto& [key, tp] : experiment.table().all())
        if (key.number == number) hits += tp.counters.hits;
    return hits;
}

constexpr std::string_view kUsage =
    "monitor snapshot [dir DIR [files N] | trigger N [count K] | trigger off | show]";
} // namespace

void Server::wait_for_snapshot_signal() {
    // Asio installs its handler without SA_RESTART: a SIGUSR1 would fail tpagent's blocking
    // system calls with EINTR. With it, they go on.
    struct sigaction action {};
    if (sigaction(SIGUSR1, nullptr, &action) == 0 && (action.sa_flags & SA_RESTART) == 0) {
        action.sa_flags |= SA_RESTART;
        sigaction(SIGUSR1, &action, nullptr);
    }
    snapshot_signal_.async_wait([this](const boost::system::error_code& ec, int) {
        if (ec) return;
        if (auto taken = take_snapshot("SIGUSR1"); !taken)
            debug_output::say(
                fmt::format("snapshot (SIGUSR1) not written: {}", taken.error().text));
        wait_for_snapshot_signal();
    });
}

Result<experiment::Snapshot> Server::take_snapshot(std::string_view why) {
    if (!snapshots_)
        return make_error(ErrorCode::NotAllowed,
                          "no folder for snapshots: monitor snapshot dir DIR (or --snapshot-dir)");
    experiment_.pull_fast_frames(); // this may run inside a trap hit's handling
    const auto xml = arch::host_architecture().feature_xml("target.xml");
    auto taken = snapshots_->take(experiment_, xml ? *xml : std::string(), why);
    if (!taken) return taken;
    std::string line =
        fmt::format("snapshot ({}): {} frame(s) into {}", why, taken->frames, taken->path);
    if (taken->gone) line += fmt::format("; {} overwritten while copied", taken->gone);
    debug_output::say(line);
    if (!taken->warning.empty()) debug_output::say(fmt::format("snapshot: {}", taken->warning));
    note_snapshots();
    return taken;
}

void Server::note_snapshots() {
    if (!snapshots_ || snapshots_->written() == 0) {
        experiment_.set_snapshot_note({});
        return;
    }
    std::string note =
        fmt::format("{} snapshot(s) written into {}, the newest {}", snapshots_->written(),
                    snapshots_->options().dir, *snapshots_->last());
    if (snapshots_->removed()) note += fmt::format(" ({} oldest removed)", snapshots_->removed());
    experiment_.set_snapshot_note(std::move(note));
}

void Server::check_snapshot_trigger() {
    if (!snapshot_trigger_ || !experiment_.running()) return;
    auto& t = *snapshot_trigger_;
    if (t.run != experiment_.runs()) t = {t.tracepoint, t.count, experiment_.runs(), 0, 0};
    const std::uint64_t hits = hits_of(experiment_, t.tracepoint);
    if (hits <= t.hits || t.written >= t.count) return;
    t.hits = hits;
    const std::string why = fmt::format("tracepoint {} hit", t.tracepoint);
    if (auto taken = take_snapshot(why); taken)
        ++t.written;
    else // said where the successes are said; the next hit tries again
        debug_output::say(fmt::format("snapshot ({}) not written: {}", why, taken.error().text));
}

void Server::watch_snapshot_trigger() {
    if (snapshot_trigger_ && experiment_.running()) {
        experiment_.poll(inferior_.get()); // fast tracepoints' hit counts
        check_snapshot_trigger();
    }
    if (snapshot_poll_armed_ || !snapshot_trigger_ || !experiment_.running()) return;
    snapshot_poll_armed_ = true;
    snapshot_timer_.expires_after(kTriggerInterval);
    snapshot_timer_.async_wait([this](const boost::system::error_code& ec) {
        snapshot_poll_armed_ = false;
        if (!ec) watch_snapshot_trigger();
    });
}

std::string Server::snapshot_settings() const {
    std::string out =
        snapshots_ ? fmt::format("Snapshots go into {}, {}.\n", snapshots_->options().dir,
                                 options_.snapshot_files
                                     ? fmt::format("the newest {} kept", options_.snapshot_files)
                                     : std::string("all kept"))
                   : std::string("No folder for snapshots (monitor snapshot dir "
                                 "DIR).\n");
    if (snapshots_ && snapshots_->written())
        out += fmt::format("{} written; the newest is {}.\n", snapshots_->written(),
                           *snapshots_->last());
    if (snapshot_trigger_)
        out += fmt::format("Tracepoint {}'s hits write a snapshot, {} a run at most{}.\n",
                           snapshot_trigger_->tracepoint, snapshot_trigger_->count,
                           snapshot_trigger_->run == experiment_.runs() && experiment_.running()
                               ? fmt::format(" ({} this run)", snapshot_trigger_->written)
                               : std::string());
    else
        out += "No tracepoint triggers snapshots.\n";
    return out;
}

Result<std::string> Server::snapshot_command(std::string_view args) {
    args = protocol::trim(args);
    auto words = protocol::split(args, ' ');
    std::erase_if(words, [](std::string_view w) { return w.empty(); });
    auto usage = [&](std::string_view what) {
        return make_error(ErrorCode::BadPacket, fmt::format("{}: {}", kUsage, what));
    };
    auto number = [](std::string_view v) -> std::optional<std::uint64_t> {
        if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != v.npos)
            return std::nullopt;
        return std::stoull(std::string(v));
    };
    if (words.empty()) {
        auto taken = take_snapshot("monitor snapshot");
        if (!taken) return taken.error();
        std::string out =
            fmt::format("Snapshot of {} frame(s) written to {}.\n", taken->frames, taken->path);
        if (taken->gone)
            out += fmt::format("{} older frame(s) were overwritten while it was copied.\n",
                               taken->gone);
        return out;
    }
    if (words[0] == "show" && words.size() == 1) return snapshot_settings();
    if (words[0] == "dir") {
        if (words.size() != 2 && !(words.size() == 4 && words[2] == "files"))
            return usage("dir DIR [files N]");
        auto dir = experiment::resolve_save_path(words[1], options_.save_dir);
        if (!dir) return dir.error();
        std::uint32_t files = 0;
        if (words.size() == 4) {
            auto n = number(words[3]);
            if (!n || *n == 0)
                return usage(fmt::format("files needs a positive number, not '{}'", words[3]));
            files = static_cast<std::uint32_t>(*n);
        }
        options_.snapshot_dir = *dir;
        if (words.size() == 4) options_.snapshot_files = files;
        snapshots_.emplace(experiment::SnapshotOptions{
            *dir, options_.snapshot_files, options_.record_min_free, options_.save_dir});
        note_snapshots();
        return snapshot_settings();
    }
    if (words[0] == "trigger") {
        if (words.size() == 2 && words[1] == "off") {
            snapshot_trigger_.reset();
            return std::string("No tracepoint triggers snapshots now.\n");
        }
        auto tp = words.size() >= 2 ? number(words[1]) : std::nullopt;
        if (!tp || (words.size() != 2 && !(words.size() == 4 && words[2] == "count")))
            return usage("trigger N [count K], N a tracepoint's number");
        std::uint64_t count = 1;
        if (words.size() == 4) {
            auto k = number(words[3]);
            if (!k || *k == 0)
                return usage(fmt::format("count needs a positive number, not '{}'", words[3]));
            count = *k;
        }
        SnapshotTrigger t{*tp, count, experiment_.runs(), hits_of(experiment_, *tp), 0};
        snapshot_trigger_ = t;
        std::string out =
            fmt::format("Tracepoint {}'s hits write a snapshot, {} a run at most.\n", *tp, count);
        const auto& all = experiment_.table().all();
        if (std::none_of(all.begin(), all.end(),
                         [&](const auto& entry) { return entry.first.number == *tp; }))
            out += fmt::format("(No tracepoint {} is defined yet.)\n", *tp);
        if (!snapshots_) out += "No folder for snapshots yet: monitor snapshot dir DIR.\n";
        return out;
    }
    return usage(fmt::format("not '{}'", args));
}

} // namespace tpagent::server
