// See trace_recorder.hpp.
#include "experiment/trace_recorder.hpp"
#include "experiment/trace_experiment.hpp"
#include "experiment/trace_file_writer.hpp"
#include <cerrno>
#include <charconv>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

namespace tpagent::experiment {

namespace {
// What ends a file's frames: tracepoint number 0 (as write_trace_file ends them).
constexpr std::uint8_t kEndOfFrames[4] = {0, 0, 0, 0};
constexpr std::string_view kPrefix = "trace-", kSuffix = ".tf";

Error io_error(const std::string& what, const std::string& path) {
    return make_error(ErrorCode::SystemError,
                      fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

// The highest number of a trace-NNNNNN.tf already in `dir` (0: none): a new recording into
// the same folder goes on after it, never over an earlier one's files.
std::uint64_t last_file_number(const std::string& dir) {
    std::uint64_t last = 0;
    DIR* d = opendir(dir.c_str());
    if (!d) return 0;
    while (const dirent* e = readdir(d)) {
        const std::string_view name(e->d_name);
        if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) continue;
        const std::string_view digits =
            name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
        std::uint64_t n = 0;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
        if (ec == std::errc() && end == digits.data() + digits.size()) last = std::max(last, n);
    }
    closedir(d);
    return last;
}
} // namespace

TraceRecorder::~TraceRecorder() {
    if (fd_ >= 0) close(fd_);
}

Status TraceRecorder::start(TraceExperiment& experiment, std::string_view tdesc_xml) {
    if (fd_ >= 0)
        if (auto s = end_file(); !s) return s;
    tdesc_ = tdesc_xml;
    totals_ = {};
    files_.clear();
    sequence_ = std::max(sequence_, last_file_number(options_.dir));
    const auto& buffer = experiment.buffer();
    next_ = buffer.frames_created() - buffer.frame_count();
    return begin_file(experiment);
}

Status TraceRecorder::poll(TraceExperiment& experiment) {
    if (fd_ < 0) return ok_status();
    auto& buffer = experiment.buffer();
    const std::size_t stored = buffer.frame_count();
    const std::uint64_t created = buffer.frames_created();
    const std::uint64_t oldest = created - stored;
    if (next_ < oldest) { // reused before this poll: lost, and counted
        totals_.lost += oldest - next_;
        next_ = oldest;
    }
    for (; next_ < created; ++next_) {
        if (!buffer.raw_frame(next_ - oldest, frame_)) {
            ++totals_.lost;
            continue;
        }
        if (frames_in_file_ > 0 &&
            file_written_ + frame_.size() + sizeof kEndOfFrames > options_.file_bytes) {
            if (auto s = end_file(); !s) return s;
            if (auto s = begin_file(experiment); !s) return s;
        }
        if (auto s = write(frame_.data(), frame_.size()); !s) return s;
        buffer.frame_recorded(next_ - oldest);
        ++frames_in_file_;
        ++totals_.frames;
    }
    buffer.release_recorded();
    return ok_status();
}

Status TraceRecorder::finish(TraceExperiment& experiment) {
    if (fd_ < 0) return ok_status();
    Status polled = poll(experiment);
    Status ended = end_file();
    return polled ? ended : polled;
}

Status TraceRecorder::begin_file(TraceExperiment& experiment) {
    const std::string path =
        fmt::format("{}/{}{:06}{}", options_.dir, kPrefix, ++sequence_, kSuffix);
    fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd_ < 0) return io_error("cannot create", path);
    file_written_ = 0;
    frames_in_file_ = 0;
    files_.push_back(path);
    ++totals_.files;
    const std::string text = trace_file_text_section(experiment, tdesc_);
    if (auto s = write(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()); !s)
        return s;
    while (options_.keep_files != 0 && files_.size() > options_.keep_files) {
        if (unlink(files_.front().c_str()) != 0 && errno != ENOENT)
            return io_error("cannot remove", files_.front());
        files_.pop_front();
        ++totals_.files_removed;
    }
    return ok_status();
}

Status TraceRecorder::end_file() {
    if (fd_ < 0) return ok_status();
    Status s = write(kEndOfFrames, sizeof kEndOfFrames);
    if (s && fsync(fd_) != 0) s = io_error("cannot write", files_.back());
    if (close(fd_) != 0 && s) s = io_error("cannot write", files_.back());
    fd_ = -1;
    // The file's name too survives a power cut.
    if (const int dir = open(options_.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
        fsync(dir);
        close(dir);
    }
    return s;
}

Status TraceRecorder::write(const std::uint8_t* bytes, std::size_t size) {
    while (size > 0) {
        const ssize_t n = ::write(fd_, bytes, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return io_error("cannot write", files_.back());
        bytes += n;
        size -= static_cast<std::size_t>(n);
        file_written_ += static_cast<std::uint64_t>(n);
    }
    return ok_status();
}

} // namespace tpagent::experiment
