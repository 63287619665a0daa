// The tracepoint table of the HTML report.
#include "tools/tpdump/html_report_parts.hpp"

#include "trace/tracepoint_codec.hpp"
#include "tools/tpdump/frame_details.hpp"
#include <algorithm>
#include <fmt/format.h>

namespace tpagent::tpdump {

namespace {

const char* kind_name(trace::TracepointKind kind) {
    switch (kind) {
    case trace::TracepointKind::Trap:
        return "trap";
    case trace::TracepointKind::Fast:
        return "fast";
    case trace::TracepointKind::Static:
        return "static";
    }
    return "";
}

// The `cmd` source strings (the action lines as typed), with their while-stepping depth.
nlohmann::json commands_json(const trace::Tracepoint& tp) {
    nlohmann::json out = nlohmann::json::array();
    int depth = 0;
    for (const trace::SourceString& s : tp.sources) {
        if (s.type != "cmd") continue;
        std::string_view word = std::string_view(s.text).substr(0, s.text.find(' '));
        if (word == "end" && depth > 0) --depth;
        out.push_back({{"text", s.text}, {"depth", depth}});
        if (word == "while-stepping" || word == "stepping" || word == "ws") ++depth;
    }
    return out;
}

// The actions as the agent received them, for files without source strings.
nlohmann::json agent_actions_json(const std::vector<trace::ActionString>& strings) {
    nlohmann::json out = nlohmann::json::array();
    for (const trace::ActionString& s : strings)
        out.push_back(trace::format_action_string(s));
    return out;
}

// The tracepoints in number order: a file lists them in whatever order its writer keeps them
// (gdb 13 wrote stepping.tf's as 4, 5, 3). The locations of one number stay in file order.
std::vector<const trace::Tracepoint*> by_number(const std::vector<trace::Tracepoint>& all) {
    std::vector<const trace::Tracepoint*> out;
    for (const trace::Tracepoint& tp : all)
        out.push_back(&tp);
    std::stable_sort(out.begin(), out.end(), [](const auto* a, const auto* b) {
        return a->definition.key.number < b->definition.key.number;
    });
    return out;
}

} // namespace

nlohmann::json tracepoints_json(const tracefile::TraceFile& file, const Options& options) {
    nlohmann::json out = nlohmann::json::array();
    for (const trace::Tracepoint* listed : by_number(file.tracepoints())) {
        const trace::Tracepoint& tp = *listed;
        const trace::TracepointDefinition& def = tp.definition;
        if (!options.tracepoint_selected(def.key.number)) continue;
        nlohmann::json j = {{"number", def.key.number},
                            {"address", fmt::format("0x{:x}", def.key.address)},
                            {"enabled", def.enabled},
                            {"kind", kind_name(def.kind)},
                            {"hits", tp.counters.hits},
                            {"bytes", tp.counters.bytes_used},
                            {"passCount", def.pass_count},
                            {"stepCount", def.step_count},
                            {"location", tracepoint_location(file, def.key.number)},
                            {"commands", commands_json(tp)},
                            {"agentActions", agent_actions_json(def.actions)},
                            {"steppingAgentActions", agent_actions_json(def.stepping_actions)}};
        for (const trace::SourceString& s : tp.sources)
            if (s.type == "cond") j["condition"] = s.text;
        if (def.condition && !j.contains("condition"))
            j["condition"] =
                fmt::format("(agent expression, {} bytes)", def.condition->bytes.size());
        out.push_back(std::move(j));
    }
    return out;
}

} // namespace tpagent::tpdump
