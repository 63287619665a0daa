// JSON string literals for the --json and --perfetto printers.
#pragma once
#include <fmt/format.h>
#include <string>
#include <string_view>

namespace tpagent::tpdump {

// `text` as a quoted JSON string; bytes outside printable ASCII become \u00XX, so output is
// valid JSON whatever a trace file's names contain.
inline std::string json_string(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
        auto byte = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (byte < 0x20 || byte >= 0x7f) {
            out += fmt::format("\\u{:04x}", byte);
        } else {
            out += c;
        }
    }
    out += '"';
    return out;
}

} // namespace tpagent::tpdump
