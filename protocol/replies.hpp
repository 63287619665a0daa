// Builders for the standard replies.
#pragma once
#include "base/result.hpp"
#include <string>

namespace tpagent::protocol {

inline std::string reply_ok() {
    return "OK";
}
inline std::string reply_empty() {
    return {};
}
// `E NN` with the code from the README's table.
std::string reply_error(ErrorCode code);
// `E.text` where gdb accepts a message; falls back to `E NN` if the text would need escaping.
std::string reply_error_text(const Error& e);
// The reply for packets that accept only `E NN` (m, M, X, g, ...).
inline std::string reply_error(const Error& e) {
    return reply_error(e.code);
}

} // namespace tpagent::protocol
