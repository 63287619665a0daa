// Text written to an output another process shares (the program inherits tpagent's standard
// output): each write holds whole lines and at most PIPE_BUF bytes, which POSIX makes atomic on
// a pipe, so the other process's lines never land inside ours. A write longer than that may be
// split wherever the pipe fills.
#pragma once
#include <cstddef>
#include <string_view>

namespace tpagent {

// The length of text's first piece: all of it if it fits in limit, else its whole lines that
// fit, else (one line longer than limit) limit bytes.
std::size_t whole_lines_prefix(std::string_view text, std::size_t limit);

// Writes text to fd in pieces of whole_lines_prefix(.., PIPE_BUF); false when fd takes no more
// (the rest is dropped, as stdio drops it).
bool write_whole_lines(int fd, std::string_view text);

} // namespace tpagent
