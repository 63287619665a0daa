// Errors for system calls that failed, with errno's message.
#pragma once
#include "base/result.hpp"
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <string_view>
#include <sys/types.h>

namespace tpagent {

// A system call that failed on a file: "WHAT PATH: <errno's message>".
inline Error file_system_error(std::string_view what, std::string_view path) {
    return make_error(ErrorCode::SystemError,
                      fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

// A system call that failed: "WHAT: <errno's message>".
inline Error system_error(std::string_view what) {
    return make_error(ErrorCode::SystemError, fmt::format("{}: {}", what, std::strerror(errno)));
}

// A ptrace request on a thread that failed with `err`: a thread gone is NoProcess.
inline Error ptrace_error(std::string_view what, pid_t tid, int err) {
    return make_error(err == ESRCH ? ErrorCode::NoProcess : ErrorCode::SystemError,
                      fmt::format("{} for thread {}: {}", what, tid, std::strerror(err)));
}

} // namespace tpagent
