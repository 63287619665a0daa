// Splits a packet into the name the dispatch table is keyed by and its arguments.
#pragma once
#include <string_view>

namespace tpagent::protocol {

struct PacketView {
    std::string_view name; // "m", "qSupported", "vCont", "qXfer:features:read", "vFile:open"
    std::string_view args; // what follows the name and its separator
};

// q/Q/v packets are named up to the first ':', ';' or ','; qXfer and vFile keep their
// object/operation in the name; every other packet is named by its first character.
// `vCont?` and `vCtrlC`-style names are whole.
PacketView classify(std::string_view payload);

} // namespace tpagent::protocol
