// The report page's files (tools/tpdump/html/), built into tpdump by html/embed.cmake.
#pragma once
#include <string_view>

namespace tpagent::tpdump {

std::string_view report_html(); // the page, with the places for the others marked
std::string_view report_css();
std::string_view report_js();

} // namespace tpagent::tpdump
