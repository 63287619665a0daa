// --record: each trace run recorded into rotating files (experiment/trace_recorder.hpp), the
// frames moved there by a timer while the run goes on, whether gdb is connected or not.
#include "server/server.hpp"
#include "server/debug_output.hpp"
#include "experiment/trace_file_writer.hpp"
#include "arch/arch.hpp"
#include "protocol/hex.hpp"
#include <chrono>
#include <cstdio>
#include <spdlog/spdlog.h>

namespace tpagent::server {

namespace {
// How often the frames are moved: often enough that a buffer of a few MiB does not fill
// between two moves at tens of thousands of frames a second.
constexpr std::chrono::milliseconds kRecordInterval{50};

// What --record's options say, in a line; `floor` as worked out, if it is.
std::string record_settings(const ServerOptions& o, std::optional<std::uint64_t> floor) {
    if (!floor) floor = o.record_min_free;
    std::string s =
        fmt::format("files of {} KiB{}, {}", o.record_file_bytes >> 10,
                    o.record_seconds ? fmt::format(" or {} s", o.record_seconds) : std::string(),
                    o.record_files ? fmt::format("the newest {} kept", o.record_files)
                                   : std::string("all kept"));
    if (o.record_host)
        return s + fmt::format(", {} KiB held for a host away", o.record_backlog_bytes >> 10);
    return s + fmt::format(", none written under {} free",
                           floor ? fmt::format("{} KiB", *floor >> 10)
                                 : std::string("a twentieth of the disk"));
}

} // namespace

// At start: the newest file of an earlier recording into the folder, cut by tpagent's end
// (kill -9, a power cut), is sealed so that gdb opens it. Only the newest: the recording ends
// every other file itself before it begins the next.
void Server::seal_cut_recording() {
    if (!options_.record_dir) return; // a stream's host seals its own
    auto sealed = experiment::seal_newest_recording(*options_.record_dir);
    if (!sealed)
        spdlog::warn("recording: {}", sealed.error().text);
    else if (*sealed && !(*sealed)->was_sealed)
        debug_output::say(
            fmt::format("recording: {} was cut short; sealed: {} whole frame(s) kept, {} byte(s) "
                        "of a frame removed",
                        (*sealed)->path, (*sealed)->frames, (*sealed)->cut_bytes));
}

// tstatus's note: what is in the files, and every frame not there, by reason.
void Server::note_recording() {
    const auto& t = recorder_->totals();
    std::string note = fmt::format("recorded {} frame(s) into {} file(s) in {}", t.frames, t.files,
                                   recording_place());
    if (t.files_removed) note += fmt::format(" ({} oldest removed)", t.files_removed);
    if (t.lost) note += fmt::format(", {} lost: overwritten before recorded", t.lost);
    if (const auto dropped = experiment_.dropped_fast_frames() + experiment_.dropped_trap_frames())
        note += fmt::format(", {} not collected: no room left in the buffer", dropped);
    if (t.unwritten) note += fmt::format(", {} not written", t.unwritten);
    if (!recorder_->refusal().empty())
        note += fmt::format("; not writing now: {}", recorder_->refusal());
    experiment_.set_recording_note(std::move(note));
}

void Server::end_recording() {
    if (!recorder_) return;
    recorder_->finish(experiment_);
    note_recording();
    recorder_.reset();
}

void Server::watch_recording() {
    if (!recording_on()) return;
    if (recorder_ && (!experiment_.running() || experiment_.runs() != recorded_run_))
        end_recording();
    if (!recorder_ && experiment_.running() && experiment_.runs() != recorded_run_) {
        recorded_run_ = experiment_.runs();
        experiment::RecordOptions settings{
            options_.record_dir.value_or(""), options_.record_file_bytes, options_.record_files,
            options_.record_min_free, std::chrono::seconds(options_.record_seconds)};
        if (options_.record_host && record_stream_)
            recorder_.emplace(std::move(settings), record_stream_);
        else
            recorder_.emplace(std::move(settings));
        const auto xml = arch::host_architecture().feature_xml("target.xml");
        recorder_->start(experiment_, xml ? *xml : std::string());
        debug_output::say(fmt::format("recording into {}: {}", recording_place(),
                                      record_settings(options_, recorder_->floor())));
        if (!recorder_->refusal().empty()) spdlog::warn("recording: {}", recorder_->refusal());
        note_recording();
    }
    if (!recorder_ || record_poll_armed_) return;
    record_poll_armed_ = true;
    record_timer_.expires_after(kRecordInterval);
    record_timer_.async_wait([this](const boost::system::error_code& ec) {
        record_poll_armed_ = false;
        if (ec || !recorder_) return;
        experiment_.poll(inferior_.get()); // fast frames' counts and stop reasons first
        if (experiment_.running()) {
            const std::string refused = recorder_->refusal();
            recorder_->poll(experiment_);
            if (refused.empty() && !recorder_->refusal().empty())
                spdlog::warn("recording: {}", recorder_->refusal());
            else if (!refused.empty() && recorder_->refusal().empty())
                debug_output::say("recording: writing again");
            note_recording();
        }
        watch_recording();
    });
}

bool Server::recording_on() const {
    return options_.record_dir || (options_.record_host && record_stream_);
}

std::string Server::recording_place() const {
    if (options_.record_dir || !options_.record_host) return options_.record_dir.value_or("");
    return record_stream_ ? record_stream_->describe() : std::string("nowhere");
}

Result<std::string> Server::record_command(std::string_view args) {
    args = protocol::trim(args);
    if (args.empty()) {
        if (!recording_on()) return std::string("Not recording (monitor record DIR to).\n");
        std::string out = fmt::format("Recording trace runs into {}.\n", recording_place());
        if (recorder_) {
            note_recording();
            out += fmt::format("This run: {}; {}.\n", experiment_.recording_note(),
                               record_settings(options_, recorder_->floor()));
        } else {
            out += "No run is being recorded now; the next tstart's will be.\n";
        }
        return out;
    }
    if (experiment_.running())
        return make_error(ErrorCode::NotAllowed,
                          "A trace is running: tstop first; the next tstart's run is recorded "
                          "as set then.");
    if (args == "off") {
        options_.record_dir.reset();
        options_.record_host.reset(); // the stream stays for what a host has not kept yet
        experiment_.set_recording(false);
        experiment_.set_recording_note({});
        return std::string("Trace runs are not recorded from now on.\n");
    }
    if (options_.record_host)
        return make_error(ErrorCode::NotAllowed,
                          "Recording goes to the host stream (--record-host): monitor record "
                          "off first.");
    auto words = protocol::split(args, ' ');
    std::erase_if(words, [](std::string_view w) { return w.empty(); });
    ServerOptions set = options_;
    auto dir = experiment::resolve_save_path(words[0], options_.save_dir);
    if (!dir) return dir.error();
    set.record_dir = *dir;
    for (std::size_t i = 1; i < words.size(); i += 2) {
        if (i + 1 >= words.size())
            return make_error(ErrorCode::BadPacket, fmt::format("{} needs a value", words[i]));
        const std::string_view name = words[i], value = words[i + 1];
        const auto bytes = parse_byte_size(value);
        const auto seconds = parse_duration(value);
        if (name == "size" && bytes && *bytes >= 4096) {
            set.record_file_bytes = *bytes;
        } else if (name == "interval" && seconds.value_or(0) > 0) {
            set.record_seconds = *seconds;
        } else if (name == "min-free" && bytes) {
            set.record_min_free = *bytes;
        } else if (name == "files" && bytes &&
                   value.find_first_not_of("0123456789") == std::string_view::npos &&
                   *bytes <= 1000000) {
            set.record_files = static_cast<std::uint32_t>(*bytes);
        } else {
            return make_error(ErrorCode::BadPacket,
                              fmt::format("monitor record DIR [size N[K|M|G], 4K or more] "
                                          "[interval N[s|m|h]] [files N] [min-free N[K|M|G]]: "
                                          "not '{} {}'",
                                          name, value));
        }
    }
    options_ = std::move(set);
    experiment_.set_recording(true);
    seal_cut_recording();
    return fmt::format("Trace runs are recorded into {} from the next tstart on: {}.\n",
                       *options_.record_dir, record_settings(options_, std::nullopt));
}

} // namespace tpagent::server
