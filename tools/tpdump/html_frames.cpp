// The frames of the HTML report: one column per field for the timeline, and each frame's
// contents for the frame panel.
#include "tools/tpdump/html_report_parts.hpp"

#include "protocol/hex.hpp"
#include "tools/tpdump/frame_details.hpp"
#include "tools/tpdump/html_collected_registers.hpp"
#include "tools/tpdump/frame_threads.hpp"
#include "tools/tpdump/json_output.hpp"
#include <fmt/format.h>
#include <map>

namespace tpagent::tpdump {

namespace {

// Bounds on the frame panel's data: the bytes of a block it dumps, and the hex text the
// page holds in all (frames past it show their registers and values, but no contents).
constexpr std::size_t kMaxDumpBytes = 1024;
constexpr std::size_t kMaxDetailText = std::size_t{16} << 20;
// Threads beyond this many share one timeline row.
constexpr std::size_t kMaxThreadRows = 64;

nlohmann::json block_json(const std::string& name, std::optional<std::uint64_t> address,
                          std::span<const std::uint8_t> bytes) {
    auto shown = bytes.first(std::min(bytes.size(), kMaxDumpBytes));
    nlohmann::json j = {{"length", bytes.size()}, {"hex", protocol::to_hex(shown)}};
    j["address"] = address ? nlohmann::json(fmt::format("0x{:x}", *address)) : nlohmann::json();
    if (!name.empty()) j["name"] = name;
    return j;
}

// Memory blocks, variables and the wide registers worth showing (as text shows them) of
// those the actions collected (`mask`); registers of up to 8 bytes come from the plots' data.
nlohmann::json frame_contents(const tracefile::TraceFile& file, const Options& options,
                              const tracefile::Frame& frame,
                              const std::vector<std::string>& block_names,
                              const trace::RegisterMask* mask) {
    nlohmann::json memory = nlohmann::json::array(), variables = nlohmann::json::array(),
                   wide = nlohmann::json::array();
    std::size_t m = 0;
    for (const trace::FrameBlock& b : frame.blocks) {
        if (b.type == 'M') memory.push_back(block_json(block_names[m++], b.address, b.data));
        if (b.type == 'S') memory.push_back(block_json("static tracepoint data", {}, b.data));
        if (b.type == 'V')
            variables.push_back({variable_name(file, b.variable), integer_json(b.value)});
    }
    if (auto block = frame.registers())
        for (const ShownRegister& r : shown_registers(file, *block, options, true))
            if (r.info->size > 8 && register_collected(mask, *r.info))
                wide.push_back({r.info->name, register_hex(r.bytes)});
    return {{"memory", memory}, {"variables", variables}, {"wide", wide}};
}

} // namespace

nlohmann::json frames_json(const tracefile::TraceFile& file, const Options& options,
                           const ReportFrames& shown) {
    nlohmann::json number = nlohmann::json::array(), tracepoint = nlohmann::json::array(),
                   thread = nlohmann::json::array(), pc = nlohmann::json::array(),
                   registers = nlohmann::json::array(), threads = nlohmann::json::array(),
                   details = nlohmann::json::array();
    std::map<std::string, std::size_t> thread_rows;
    std::size_t detail_text = 0, left_out = 0;
    const std::vector<std::optional<FrameThread>> threads_of_frames =
        frame_threads(file, shown.frames);
    for (std::size_t i = 0; i < shown.frames.size(); ++i) {
        const tracefile::Frame& f = *shown.frames[i];
        number.push_back(f.number);
        tracepoint.push_back(f.tracepoint);
        auto p = file.frame_pc(f);
        pc.push_back(p ? nlohmann::json(fmt::format("0x{:x}", *p)) : nlohmann::json());
        registers.push_back(f.registers() ? 1 : 0);
        if (const auto& t = threads_of_frames[i]) {
            std::string label = thread_label(*t);
            if (thread_rows.size() >= kMaxThreadRows && !thread_rows.count(label))
                label = "other threads";
            auto [it, added] = thread_rows.emplace(label, thread_rows.size());
            if (added) threads.push_back(label);
            thread.push_back(it->second);
        } else {
            thread.push_back(-1);
        }
        nlohmann::json contents;
        if (detail_text < kMaxDetailText) {
            contents =
                frame_contents(file, options, f, shown.block_names[i], shown.register_masks[i]);
            detail_text += json_text(contents).size();
        } else {
            ++left_out;
        }
        details.push_back(std::move(contents));
    }
    nlohmann::json columns = {{"number", number},
                              {"tracepoint", tracepoint},
                              {"time", shown.time.offsets},
                              {"thread", thread},
                              {"pc", pc},
                              {"registers", registers}};
    return {{"frames", columns},
            {"threads", threads},
            {"details", details},
            {"detailsLeftOut", left_out}};
}

} // namespace tpagent::tpdump
