// An Error for a system call that failed on a file: "WHAT PATH: <errno's message>".
#pragma once
#include "base/result.hpp"
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <string_view>

namespace tpagent {

inline Error file_system_error(std::string_view what, std::string_view path) {
    return make_error(ErrorCode::SystemError,
                      fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

} // namespace tpagent
