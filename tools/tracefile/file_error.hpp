// Errors about a trace file's contents all read "offset N: what", N = byte offset in the file.
#pragma once
#include "base/result.hpp"
#include <cstddef>
#include <fmt/format.h>
#include <string_view>

namespace tpagent::tracefile {

inline Error file_error(std::size_t offset, std::string_view what,
                        ErrorCode code = ErrorCode::BadInput) {
    return make_error(code, fmt::format("offset {}: {}", offset, what));
}

} // namespace tpagent::tracefile
