#include "tools/tpdump/json_printer.hpp"

#include "protocol/hex.hpp"
#include "tools/tpdump/frame_details.hpp"
#include "tools/tpdump/json_output.hpp"
#include <fmt/format.h>

namespace tpagent::tpdump {

namespace {

// {"frame":0,"tracepoint":3,"offset":..,"pc":"0x..","registers":{"rax":"0x.."},
//  "memory":[{"address":"0x..","length":4,"hex":".."}],
//  "variables":[{"number":2,"name":"$calls","value":1}],"static_data":[".."]}
// Addresses and registers are hex strings: JSON numbers lose precision beyond 2^53.
Json frame_json(const tracefile::TraceFile& file, const tracefile::Frame& frame,
                const Options& options) {
    Json registers = Json::object();
    Json memory = Json::array();
    Json variables = Json::array();
    Json static_data = Json::array();
    for (const trace::FrameBlock& b : frame.blocks) {
        if (b.type == 'R') {
            registers = Json::object(); // the last R block wins, as in gdb
            for (const ShownRegister& r : shown_registers(file, b.data, options, false))
                registers[r.info->name] = register_hex(r.bytes);
        } else if (b.type == 'M') {
            memory.push_back({{"address", fmt::format("0x{:x}", b.address)},
                              {"length", b.data.size()},
                              {"hex", protocol::to_hex(b.data)}});
        } else if (b.type == 'V') {
            Json name = file.find_variable(b.variable) ? Json(variable_name(file, b.variable))
                                                       : Json(nullptr);
            variables.push_back({{"number", b.variable}, {"name", name}, {"value", b.value}});
        } else if (b.type == 'S') {
            static_data.push_back(protocol::to_hex(b.data));
        }
    }
    auto pc = file.frame_pc(frame);
    Json out = {{"frame", frame.number},
                {"tracepoint", frame.tracepoint},
                {"offset", frame.offset},
                {"pc", pc ? Json(fmt::format("0x{:x}", *pc)) : Json(nullptr)},
                {"registers", std::move(registers)},
                {"memory", std::move(memory)},
                {"variables", std::move(variables)}};
    if (!static_data.empty()) out["static_data"] = std::move(static_data);
    return out;
}

} // namespace

std::string json_frame_line(const tracefile::TraceFile& file, const tracefile::Frame& frame,
                            const Options& options) {
    return json_text(frame_json(file, frame, options)) + "\n";
}

void print_json(const tracefile::TraceFile& file, const Options& options, std::FILE* out) {
    for (const tracefile::Frame* frame : selected_frames(file, options))
        std::fputs(json_frame_line(file, *frame, options).c_str(), out);
}

} // namespace tpagent::tpdump
