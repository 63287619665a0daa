// Text placed in the XML documents sent through qXfer (threads, libraries).
#pragma once
#include <string>
#include <string_view>

namespace tpagent::protocol {

// Escapes the characters XML reserves in text and attribute values.
std::string xml_escape(std::string_view text);

} // namespace tpagent::protocol
