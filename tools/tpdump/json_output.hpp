// JSON for the --json and --perfetto printers (nlohmann's): members in the order they are
// added, text as UTF-8.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace tpagent::tpdump {

using Json = nlohmann::ordered_json;

// Compact JSON text. Names in a trace file are not always valid UTF-8: a bad byte becomes
// U+FFFD rather than an exception.
// (Also for the HTML report's nlohmann::json values.)
template <class AnyJson = Json> std::string json_text(const AnyJson& value) {
    return value.dump(-1, ' ', false, AnyJson::error_handler_t::replace);
}

} // namespace tpagent::tpdump
