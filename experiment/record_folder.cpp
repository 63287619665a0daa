// See record_folder.hpp.
#include "experiment/record_folder.hpp"
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

void sync_dir(const std::string& dir) {
    if (const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
        fsync(fd);
        close(fd);
    }
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

} // namespace tpagent::experiment
