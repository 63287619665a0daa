// Static tracepoint markers (SDT probes) as gdb lists and probes them: qTfSTM/qTsSTM,
// qTSTMat (GDB manual, "Tracepoint Packets"). The data a frame collected for `$_sdata` is
// read with the other trace-frame objects (handlers_trace.cpp).
#include "server/packet_handlers.hpp"
#include "server/session.hpp"
#include "process/target.hpp"
#include "protocol/hex.hpp"
#include "protocol/replies.hpp"
#include <fmt/format.h>

namespace tpagent::server {

using namespace protocol;

namespace {

// address:hex(id):hex(extra), the extra being the argument description gdb shows as "Data".
std::string marker_definition(const process::StaticMarker& m) {
    return fmt::format("{:x}:{}:{}", m.address, to_hex(m.id), to_hex(m.arguments));
}

} // namespace

std::string handle_static_markers_first(Session& s, std::string_view) {
    std::vector<std::string> replies;
    if (process::Target* inferior = s.live_inferior()) {
        std::string reply;
        for (const process::StaticMarker& m : inferior->static_markers()) {
            std::string one = marker_definition(m);
            if (!reply.empty() && reply.size() + 1 + one.size() > kPacketSize / 2) {
                replies.push_back(std::move(reply));
                reply.clear();
            }
            reply += reply.empty() ? "m" : ",";
            reply += one;
        }
        if (!reply.empty()) replies.push_back(std::move(reply));
    }
    return s.begin_upload(Session::Upload::Markers, trace::UploadCursor(std::move(replies)));
}

std::string handle_static_markers_next(Session& s, std::string_view) {
    return s.continue_upload(Session::Upload::Markers);
}

std::string handle_static_marker_at(Session& s, const PacketArgs& args) {
    const std::uint64_t address = args.number(0);
    if (process::Target* inferior = s.live_inferior())
        for (const process::StaticMarker& m : inferior->static_markers())
            if (m.address == address) return "m" + marker_definition(m);
    return "l";
}

} // namespace tpagent::server
