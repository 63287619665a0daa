#include "tools/tpdump/html_report.hpp"

#include "tools/tpdump/html_assets.hpp"
#include "tools/tpdump/html_report_data.hpp"
#include <cstdlib>
#include <string>

namespace tpagent::tpdump {

namespace {

// JSON has `<`, `>` and `&` only inside strings, where \u escapes mean the same, so no
// `</script>` or `<!--` from a trace file can end the data's script element.
std::string script_safe_json(const nlohmann::json& data) {
    const std::string text = data.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        if (c == '<')
            out += "\\u003c";
        else if (c == '>')
            out += "\\u003e";
        else if (c == '&')
            out += "\\u0026";
        else
            out += c;
    }
    return out;
}

// `page` with its one `marker` replaced by `content`.
std::string fill(std::string page, std::string_view marker, std::string_view content) {
    const std::size_t at = page.find(marker);
    if (at == std::string::npos) std::abort(); // html/report.html lost a marker
    return page.replace(at, marker.size(), content);
}

} // namespace

void print_html(const tracefile::TraceFile& file, const Options& options, std::FILE* out) {
    std::string page(report_html());
    page = fill(std::move(page), "@@TPDUMP_STYLE@@", report_css());
    page = fill(std::move(page), "@@TPDUMP_SCRIPT@@", report_js());
    page = fill(std::move(page), "@@TPDUMP_DATA@@", script_safe_json(report_data(file, options)));
    std::fwrite(page.data(), 1, page.size(), out);
}

} // namespace tpagent::tpdump
