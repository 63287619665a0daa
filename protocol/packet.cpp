#include "protocol/packet.hpp"

namespace tpagent::protocol {

namespace {
std::size_t name_end(std::string_view payload, std::size_t from) {
    std::size_t end = payload.find_first_of(":;,", from);
    return end == std::string_view::npos ? payload.size() : end;
}
} // namespace

PacketView classify(std::string_view payload) {
    if (payload.empty()) return {};
    char first = payload.front();
    if (first != 'q' && first != 'Q' && first != 'v')
        return {payload.substr(0, 1), payload.substr(1)};

    std::size_t end = name_end(payload, 0);
    std::string_view name = payload.substr(0, end);
    // qXfer:object:op:annex:... and vFile:op:args keep the extra components in the name.
    int extra = name == "qXfer" ? 2 : name == "vFile" ? 1 : 0;
    for (int i = 0; i < extra && end < payload.size() && payload[end] == ':'; ++i)
        end = name_end(payload, end + 1);
    if (extra != 0) name = payload.substr(0, end);
    std::string_view args = end < payload.size() ? payload.substr(end + 1) : std::string_view{};
    return {name, args};
}

} // namespace tpagent::protocol
