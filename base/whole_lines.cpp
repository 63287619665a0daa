#include "base/whole_lines.hpp"
#include <cerrno>
#include <climits>
#include <unistd.h>

namespace tpagent {

std::size_t whole_lines_prefix(std::string_view text, std::size_t limit) {
    if (text.size() <= limit) return text.size();
    const std::size_t end = text.substr(0, limit).rfind('\n');
    return end == std::string_view::npos ? limit : end + 1;
}

bool write_whole_lines(int fd, std::string_view text) {
    while (!text.empty()) {
        const ssize_t written = ::write(fd, text.data(), whole_lines_prefix(text, PIPE_BUF));
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return false;
        text.remove_prefix(static_cast<std::size_t>(written));
    }
    return true;
}

} // namespace tpagent
