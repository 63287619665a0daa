// See trace_file_seal.hpp.
#include "trace/trace_file_seal.hpp"
#include "base/system_error.hpp"
#include "trace/frame_format.hpp"
#include "trace/recorded_status.hpp"
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <string_view>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tpagent::trace {

namespace {
constexpr std::string_view kMagic{"\x7fTRACE0\n", 8};

class Fd {
  public:
    explicit Fd(int fd) : fd_(fd) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
        if (fd_ >= 0) close(fd_);
    }
    int get() const { return fd_; }

  private:
    int fd_;
};

class Mapping {
  public:
    Mapping(int fd, std::size_t size)
        : size_(size), data_(size ? mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0) : nullptr) {}
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    ~Mapping() {
        if (ok() && data_) munmap(data_, size_);
    }
    bool ok() const { return data_ != MAP_FAILED; }
    std::string_view text() const { return {static_cast<const char*>(data_), size_}; }
    const std::uint8_t* bytes() const { return static_cast<const std::uint8_t*>(data_); }

  private:
    std::size_t size_;
    void* data_;
};

struct FrameWalk {
    bool marked = false; // the end-of-frames marker was found
    std::uint64_t frames = 0;
    std::size_t end = 0; // after the last whole frame
};

FrameWalk walk_frames(const std::uint8_t* file, std::size_t size, std::size_t start) {
    FrameWalk walk{false, 0, start};
    for (;;) {
        const std::size_t left = size - walk.end;
        if (left >= 2 && frame_tracepoint(file + walk.end) == 0) {
            walk.marked = true;
            return walk;
        }
        if (left < kFrameHeaderSize || frame_length(file + walk.end) > left - kFrameHeaderSize)
            return walk;
        walk.end += kFrameHeaderSize + frame_length(file + walk.end);
        ++walk.frames;
    }
}

// The status line's payload in the text section: offset and length (0: none).
std::pair<std::size_t, std::size_t> find_status(std::string_view text) {
    constexpr std::string_view kStatus = "\nstatus ";
    const auto at = text.find(kStatus);
    if (at == std::string_view::npos) return {0, 0};
    const std::size_t begin = at + kStatus.size();
    const auto end = text.find('\n', begin);
    return {begin, end - begin};
}
} // namespace

Result<SealReport> seal_trace_file(const std::string& path) {
    Fd fd(open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC));
    if (fd.get() < 0) return file_system_error("cannot open", path);
    struct stat st {};
    if (fstat(fd.get(), &st) != 0) return file_system_error("cannot read", path);
    if (!S_ISREG(st.st_mode))
        return make_error(ErrorCode::BadInput, fmt::format("{}: not a regular file", path));
    const auto size = static_cast<std::size_t>(st.st_size);
    Mapping map(fd.get(), size);
    if (!map.ok()) return file_system_error("cannot read", path);
    const std::string_view file = map.text();
    if (!file.starts_with(kMagic))
        return make_error(ErrorCode::BadInput,
                          fmt::format("{}: not a trace file (no \\x7fTRACE0 header)", path));
    // An empty line ends the text section; the magic's own newline may be the first of the two.
    const auto text_end = file.find("\n\n", kMagic.size() - 1);
    if (text_end == std::string_view::npos)
        return make_error(ErrorCode::BadInput,
                          fmt::format("{}: cut inside its text section: no frames to keep", path));
    const FrameWalk walk = walk_frames(map.bytes(), size, text_end + 2);
    SealReport report{walk.marked, walk.frames, walk.marked ? 0 : size - walk.end};
    if (walk.marked) return report;

    const auto [status_at, status_size] = find_status(file.substr(0, text_end + 1));
    std::optional<std::string> status;
    if (status_size)
        status = restate_recorded_status(
            file.substr(status_at, status_size), walk.frames,
            fmt::format("sealed after a cut: {} whole frame(s), {} byte(s) of a frame removed",
                        walk.frames, report.cut_bytes));
    if (ftruncate(fd.get(), static_cast<off_t>(walk.end)) != 0 ||
        pwrite(fd.get(), kEndOfFrames, sizeof kEndOfFrames, static_cast<off_t>(walk.end)) !=
            static_cast<ssize_t>(sizeof kEndOfFrames))
        return file_system_error("cannot seal", path);
    if (status && pwrite(fd.get(), status->data(), status->size(), static_cast<off_t>(status_at)) !=
                      static_cast<ssize_t>(status->size()))
        return file_system_error("cannot seal", path);
    if (fsync(fd.get()) != 0) return file_system_error("cannot seal", path);
    return report;
}

} // namespace tpagent::trace
