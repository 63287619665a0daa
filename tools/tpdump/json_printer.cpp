#include "tools/tpdump/json_printer.hpp"

#include "protocol/hex.hpp"
#include "tools/tpdump/frame_details.hpp"
#include "tools/tpdump/json_text.hpp"

namespace tpagent::tpdump {

namespace {

// {"frame":0,"tracepoint":3,"offset":..,"pc":"0x..","registers":{"rax":"0x.."},
//  "memory":[{"address":"0x..","length":4,"hex":".."}],
//  "variables":[{"number":2,"name":"calls","value":1}],"static_data":[".."]}
// Addresses and registers are hex strings: JSON numbers lose precision beyond 2^53.
std::string frame_json(const tracefile::TraceFile& file, const tracefile::Frame& frame,
                       const Options& options) {
    std::string registers, memory, variables, static_data;
    for (const trace::FrameBlock& b : frame.blocks) {
        if (b.type == 'R') {
            registers.clear(); // the last R block wins, as in gdb
            for (const ShownRegister& r : shown_registers(file, b.data, options, false))
                registers += fmt::format("{}{}:\"{}\"", registers.empty() ? "" : ",",
                                         json_string(r.info->name), register_hex(r.bytes));
        } else if (b.type == 'M') {
            memory += fmt::format("{}{{\"address\":\"0x{:x}\",\"length\":{},\"hex\":\"{}\"}}",
                                  memory.empty() ? "" : ",", b.address, b.data.size(),
                                  protocol::to_hex(b.data));
        } else if (b.type == 'V') {
            const tracefile::TraceVariable* v = file.find_variable(b.variable);
            variables += fmt::format("{}{{\"number\":{},\"name\":{},\"value\":{}}}",
                                     variables.empty() ? "" : ",", b.variable,
                                     v ? json_string(v->name) : std::string("null"), b.value);
        } else if (b.type == 'S') {
            static_data +=
                fmt::format("{}\"{}\"", static_data.empty() ? "" : ",", protocol::to_hex(b.data));
        }
    }
    auto pc = file.frame_pc(frame);
    std::string out = fmt::format("{{\"frame\":{},\"tracepoint\":{},\"offset\":{},\"pc\":{}",
                                  frame.number, frame.tracepoint, frame.offset,
                                  pc ? fmt::format("\"0x{:x}\"", *pc) : std::string("null"));
    out += fmt::format(",\"registers\":{{{}}},\"memory\":[{}],\"variables\":[{}]", registers,
                       memory, variables);
    if (!static_data.empty()) out += fmt::format(",\"static_data\":[{}]", static_data);
    out += "}\n";
    return out;
}

} // namespace

void print_json(const tracefile::TraceFile& file, const Options& options, std::FILE* out) {
    for (const tracefile::Frame* frame : selected_frames(file, options))
        std::fputs(frame_json(file, *frame, options).c_str(), out);
}

} // namespace tpagent::tpdump
