// See record_folder.hpp.
#include "experiment/record_folder.hpp"
#include "base/system_error.hpp"
#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <charconv>
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace tpagent::experiment {

namespace {
constexpr std::string_view kSuffix = ".tf";
}

std::string numbered_file_path(const std::string& dir, std::string_view prefix,
                               std::uint64_t number) {
    return fmt::format("{}/{}{:06}{}", dir, prefix, number, kSuffix);
}

std::uint64_t last_file_number(const std::string& dir, std::string_view prefix) {
    std::uint64_t last = 0;
    DIR* d = opendir(dir.c_str());
    if (!d) return 0;
    while (const dirent* e = readdir(d)) {
        const std::string_view name(e->d_name);
        if (!name.starts_with(prefix) || !name.ends_with(kSuffix)) continue;
        const std::string_view digits =
            name.substr(prefix.size(), name.size() - prefix.size() - kSuffix.size());
        std::uint64_t n = 0;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
        if (ec == std::errc() && end == digits.data() + digits.size()) last = std::max(last, n);
    }
    closedir(d);
    return last;
}

std::uint64_t default_floor(const std::string& dir) {
    struct statvfs fs {};
    if (statvfs(dir.c_str(), &fs) != 0) return 0;
    return static_cast<std::uint64_t>(fs.f_blocks) * fs.f_frsize / 20;
}

std::optional<Error> under_floor(const std::string& dir, std::uint64_t min_free) {
    struct statvfs fs {};
    if (min_free == 0 || statvfs(dir.c_str(), &fs) != 0) return std::nullopt;
    const std::uint64_t free = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
    if (free >= min_free) return std::nullopt;
    return make_error(
        ErrorCode::SystemError,
        fmt::format("{}: {} KiB free, under the floor of {} KiB", dir, free >> 10, min_free >> 10));
}

FolderSink::~FolderSink() {
    if (fd_ >= 0) close(fd_);
}

void FolderSink::prepare() {
    mkdir(dir_.c_str(), 0777); // one level, as tsave makes none: an error shows at create
}

std::string FolderSink::name(std::uint64_t number) const {
    return numbered_file_path(dir_, prefix_, number);
}

std::uint64_t FolderSink::last_number() const {
    return last_file_number(dir_, prefix_);
}

std::uint64_t FolderSink::default_floor() const {
    return experiment::default_floor(dir_);
}

std::optional<Error> FolderSink::under_floor(std::uint64_t min_free) const {
    return experiment::under_floor(dir_, min_free);
}

// A file begins under a name no reader takes (PATH.new) and gets its own with its first bytes
// (the text section): a kill -9 in between leaves no empty trace-NNNNNN.tf that nothing could
// seal, only a PATH.new that the next create of that number replaces.
Status FolderSink::create(std::uint64_t number) {
    const std::string path = name(number), begun = path + ".new";
    struct stat st {};
    if (lstat(path.c_str(), &st) == 0) {
        errno = EEXIST;
        return file_system_error("cannot create", path);
    }
    fd_ = open(begun.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd_ < 0) return file_system_error("cannot create", begun);
    current_ = number;
    size_ = 0;
    named_ = false;
    return ok_status();
}

Status FolderSink::append(std::span<const std::uint8_t> bytes) {
    std::uint64_t written = 0;
    for (std::span<const std::uint8_t> left = bytes; !left.empty();) {
        const ssize_t n = ::write(fd_, left.data(), left.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            Error error = n == 0 ? make_error(ErrorCode::SystemError,
                                              fmt::format("cannot write {}: {}", name(current_),
                                                          std::strerror(ENOSPC)))
                                 : file_system_error("cannot write", name(current_));
            // Cut back to what was whole, so that the file still ends after a whole frame.
            (void)ftruncate(fd_, static_cast<off_t>(size_));
            (void)lseek(fd_, static_cast<off_t>(size_), SEEK_SET);
            return error;
        }
        left = left.subspan(static_cast<std::size_t>(n));
        written += static_cast<std::uint64_t>(n);
    }
    size_ += written;
    if (!named_) {
        if (rename((name(current_) + ".new").c_str(), name(current_).c_str()) != 0)
            return file_system_error("cannot name", name(current_));
        named_ = true;
    }
    return ok_status();
}

Status FolderSink::rewrite(std::uint64_t offset, std::span<const std::uint8_t> bytes) {
    if (pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset)) !=
        static_cast<ssize_t>(bytes.size()))
        return file_system_error("cannot write", name(current_));
    return ok_status();
}

Status FolderSink::end() {
    Status s = ok_status();
    if (fsync(fd_) != 0) s = file_system_error("cannot write", name(current_));
    if (close(fd_) != 0 && s) s = file_system_error("cannot write", name(current_));
    fd_ = -1;
    sync_dir(dir_);
    return s;
}

void FolderSink::abandon() {
    close(fd_);
    fd_ = -1;
    unlink((named_ ? name(current_) : name(current_) + ".new").c_str());
}

Status FolderSink::remove(std::uint64_t number) {
    if (unlink(name(number).c_str()) != 0 && errno != ENOENT)
        return file_system_error("cannot remove", name(number));
    return ok_status();
}

} // namespace tpagent::experiment
