// Arbitrary bytes from "gdb" through framing, classification and the packet handlers of a
// session with no inferior. Packets that touch the host (files, starting or attaching to
// processes, exiting) are left out: the fuzzer must not delete files or spawn programs.
#include "server/server.hpp"
#include "server/session.hpp"
#include "protocol/framing.hpp"
#include "protocol/packet.hpp"
#include <cstdint>
#include <spdlog/spdlog.h>
#include <string_view>

namespace {
class NullConnection : public tpagent::agent::Connection {
  public:
    void async_read(std::span<std::uint8_t>, ReadHandler) override {}
    bool write(std::string_view) override { return true; }
    void close() override {}
};

bool host_touching(std::string_view payload) {
    auto name = tpagent::protocol::classify(payload).name;
    return name.starts_with("vFile") || name == "vRun" || name == "vAttach" || name == "qRcmd" ||
           name == "k" || name == "D" || name == "vKill";
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tpagent;
    spdlog::set_level(spdlog::level::off);
    static boost::asio::io_context io;
    static agent::Server server(io, agent::ServerOptions{});
    agent::Session session(server, std::make_unique<NullConnection>());
    // Decode once to filter, then feed the accepted packets framed again.
    protocol::PacketDecoder decoder(agent::kPacketSize);
    std::vector<protocol::FrameEvent> events;
    decoder.feed(std::span(data, size), events);
    for (const auto& ev : events) {
        if (ev.kind != protocol::FrameEvent::Kind::Packet || host_touching(ev.payload)) continue;
        std::string framed = protocol::frame_packet(protocol::escape_binary(ev.payload));
        session.receive(
            std::span(reinterpret_cast<const std::uint8_t*>(framed.data()), framed.size()));
        if (session.closed()) break;
    }
    return 0;
}
