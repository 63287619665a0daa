#include "protocol/replies.hpp"
#include <fmt/format.h>

namespace tpagent::protocol {

std::string reply_error(ErrorCode code) {
    return fmt::format("E{:02x}", static_cast<unsigned>(code));
}

std::string reply_error_text(const Error& e) {
    if (e.text.empty() || e.text.find_first_of("#$}*") != std::string::npos)
        return reply_error(e.code);
    return "E." + e.text;
}

} // namespace tpagent::protocol
