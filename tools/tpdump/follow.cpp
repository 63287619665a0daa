// See follow.hpp.
#include "tools/tpdump/follow.hpp"

#include "tools/tpdump/folder_printer.hpp"
#include "tools/tpdump/record_host.hpp"
#include "tools/tpdump/json_output.hpp"
#include "tools/tpdump/json_printer.hpp"
#include "tools/tpdump/text_printer.hpp"
#include "tools/tracefile/frame_section.hpp"
#include "tools/tracefile/trace_folder.hpp"
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <algorithm>
#include <fmt/format.h>
#include <optional>
#include <string_view>
#include <thread>

namespace tpagent::tpdump {

namespace fs = std::filesystem;

namespace {

// How often the folder is looked at when nothing new came.
constexpr std::chrono::milliseconds kPollInterval{200};

// The file being followed: its bytes so far, and its text section once whole.
struct FollowedFile {
    std::string path;
    std::vector<std::uint8_t> bytes;
    std::optional<tracefile::TraceFile> meta; // the text section, no frames
    std::size_t next = 0;                     // where the next frame starts
};

// The bytes appended to the file since the last look. A file cut back (the recorder undoes
// a write the disk refused part of) is read again from where it now ends.
void read_more(FollowedFile& f) {
    std::FILE* in = std::fopen(f.path.c_str(), "rb");
    if (!in) return;
    if (std::fseek(in, 0, SEEK_END) == 0)
        if (const long size = std::ftell(in);
            size >= 0 && static_cast<std::size_t>(size) < f.bytes.size()) {
            f.bytes.resize(static_cast<std::size_t>(size));
            f.next = std::min(f.next, f.bytes.size());
        }
    if (std::fseek(in, static_cast<long>(f.bytes.size()), SEEK_SET) == 0) {
        std::uint8_t chunk[65536];
        for (std::size_t n; (n = std::fread(chunk, 1, sizeof chunk, in)) > 0;)
            f.bytes.insert(f.bytes.end(), chunk, chunk + n);
    }
    std::fclose(in);
}

// The text section, once the file has all of it (the blank line that ends it).
Status parse_text(FollowedFile& f) {
    auto meta = tracefile::parse_trace_file_head(f.bytes);
    if (!meta)
        return make_error(meta.error().code, fmt::format("{}: {}", f.path, meta.error().text));
    if (!*meta) return ok_status();
    f.next = (*meta)->frame_section_offset();
    f.meta = std::move(*meta);
    return ok_status();
}

class Follower {
  public:
    Follower(const Options& options, std::FILE* out, const std::function<bool()>& stop)
        : options_(options), out_(out), stop_(stop) {}

    int run() {
        while (!stop_ || !stop_()) {
            auto files = tracefile::recorded_files(options_.path);
            if (!files) {
                fmt::print(stderr, "tpdump: {}\n", files.error().text);
                return 1;
            }
            const bool progressed = step(*files);
            if (!status_) {
                fmt::print(stderr, "tpdump: {}\n", status_.error().text);
                return 1;
            }
            std::fflush(out_);
            if (!progressed) std::this_thread::sleep_for(kPollInterval);
        }
        return 0;
    }

  private:
    // One look: new frames printed, or the next file taken up. False if nothing changed.
    bool step(const std::vector<std::string>& files) {
        if (!file_) {
            if (files.empty()) return false;
            begin(files.back()); // the newest: what is being written now
            return true;
        }
        const std::size_t before = file_->bytes.size();
        read_more(*file_);
        if (!file_->meta) {
            status_ = parse_text(*file_);
            if (file_->meta) announce();
        }
        if (file_->meta && file_->bytes.size() > file_->next) print_frames();
        if (file_->bytes.size() != before) return true;
        // Nothing new: the next file takes over if there is one (the recording began it after
        // it ended this one; this one, not ended, was cut short).
        auto newer = std::upper_bound(files.begin(), files.end(), file_->path,
                                      [](const std::string& a, const std::string& b) {
                                          return a.size() != b.size() ? a.size() < b.size() : a < b;
                                      });
        if (newer == files.end()) return false;
        conclude();
        begin(*newer);
        return true;
    }

    static std::optional<tracefile::RecordedFile> recorded_of(const tracefile::TraceFile& f) {
        if (!f.status()) return std::nullopt;
        return f.status()->recorded;
    }

    void begin(const std::string& path) {
        file_.emplace();
        file_->path = path;
        first_ = printed_;
        read_more(*file_);
        status_ = parse_text(*file_);
        if (!file_->meta) return; // its text is not whole yet: announced once it is
        announce();
        if (file_->bytes.size() > file_->next) print_frames();
    }

    // A file begins: the header once, then where the file's frames start.
    void announce() {
        if (!announced_header_) {
            announced_header_ = true;
            if (options_.format == OutputFormat::Text)
                print_text_header(*file_->meta, options_, out_);
        }
        const auto r = recorded_of(*file_->meta);
        if (options_.format == OutputFormat::Json) {
            const Json line = {{"file_begins", file_->path}, {"first_frame", first_}};
            std::fputs((json_text(line) + "\n").c_str(), out_);
        } else {
            std::fputs(fmt::format("\n--- {} begins{}\n", file_->path,
                                   r ? fmt::format(" at the run's frame {}", r->first) : "")
                           .c_str(),
                       out_);
        }
    }

    // A file is done: what it held, and what the recording counted lost meanwhile (its
    // status, restated at its end, read again).
    void conclude() {
        if (!file_->meta) return;
        const auto again = tracefile::read_trace_file_head(file_->path); // its head only
        const auto& final_meta = again ? *again : *file_->meta;
        tracefile::FolderPart at_start{file_->path, first_,      0, recorded_of(*file_->meta),
                                       0,           std::nullopt};
        tracefile::FolderPart part{
            file_->path, first_, printed_ - first_, recorded_of(final_meta), 0, std::nullopt};
        std::fputs(part_line(part, &at_start, options_.format).c_str(), out_);
    }

    void print_frames() {
        FollowedFile& f = *file_;
        auto section =
            tracefile::parse_frame_section(f.bytes, f.next, f.meta->register_block_size());
        for (tracefile::Frame& frame : section.frames) {
            frame.number = printed_++;
            f.next = frame.offset + frame.bytes.size();
            if (!options_.tracepoint_selected(frame.tracepoint) ||
                !options_.frame_selected(frame.number))
                continue;
            std::fputs(options_.format == OutputFormat::Json
                           ? json_frame_line(*f.meta, frame, options_).c_str()
                           : text_frame(*f.meta, frame, options_).c_str(),
                       out_);
        }
    }

    const Options& options_;
    std::FILE* out_;
    std::function<bool()> stop_;
    std::optional<FollowedFile> file_;
    std::size_t printed_ = 0; // frames seen, all files
    std::size_t first_ = 0;   // the current file's first frame's number
    bool announced_header_ = false;
    Status status_ = ok_status();
};

} // namespace

int follow_folder(const Options& options, std::FILE* out, const std::function<bool()>& stop) {
    return Follower(options, out, stop).run();
}

int follow_board(const Options& options, std::FILE* out) {
    const auto board = parse_board(options.path);
    if (!board) return 2;
    std::string dir = (fs::temp_directory_path() / "tpdump-follow-XXXXXX").string();
    if (!mkdtemp(dir.data())) {
        fmt::print(stderr, "tpdump: cannot make a folder for the stream in {}: {}\n",
                   fs::temp_directory_path().string(), std::strerror(errno));
        return 1;
    }
    stop_on_signals();
    std::thread receiver([&] { record_from_board(*board, dir, stderr); });
    Options followed = options;
    followed.path = dir;
    int code = 1;
    try {
        code = follow_folder(followed, out, stop_requested);
    } catch (...) {
        request_stop();
        receiver.join();
        throw;
    }
    request_stop(); // the follower's own end too
    receiver.join();
    std::error_code ignored;
    fs::remove_all(dir, ignored);
    return code;
}

} // namespace tpagent::tpdump
