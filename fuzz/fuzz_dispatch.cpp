// Arbitrary bytes from "gdb" through framing, classification and the packet handlers of a
// session with no inferior. Packets that start or attach to processes or end the session are
// left out: the fuzzer must not spawn programs. Host I/O (vFile) goes through, confined by
// --hostio-dir to a directory of its own (created once, under /tmp). Each input gets a new
// server and session.
#include "server/server.hpp"
#include "server/session.hpp"
#include "protocol/framing.hpp"
#include "protocol/packet.hpp"
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <spdlog/spdlog.h>
#include <string_view>

namespace {
class NullConnection : public tpagent::server::Connection {
  public:
    void async_read(std::span<std::uint8_t>, ReadHandler) override {}
    bool write(std::string_view) override { return true; }
    void close() override {}
};

bool host_touching(std::string_view payload) {
    auto name = tpagent::protocol::classify(payload).name;
    return name == "vRun" || name == "vAttach" || name == "qRcmd" || name == "k" || name == "D" ||
           name == "vKill";
}

// Host I/O's directory: made once, removed at exit (kept in static storage that outlives the
// exit handlers).
const char* hostio_dir() {
    static char dir[] = "/tmp/tpagent-fuzz-hostio-XXXXXX";
    static const bool made = [] {
        if (!mkdtemp(dir)) std::abort();
        std::atexit([] { std::filesystem::remove_all(dir); });
        return true;
    }();
    return made ? dir : nullptr;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace tpagent;
    spdlog::set_level(spdlog::level::off);
    // A server of its own for each input, so that an input does what it does whatever ran
    // before it (files in the Host I/O directory aside): a crash reproduces from its input
    // alone, and libFuzzer's leak check, run whenever an input's allocations outlive it, stays
    // rare.
    boost::asio::io_context io;
    server::ServerOptions options;
    options.hostio_dir = hostio_dir();
    server::Server server(io, options);
    server::Session session(server, std::make_unique<NullConnection>());
    // Decode once to filter, then feed the accepted packets framed again.
    protocol::PacketDecoder decoder(server::kPacketSize);
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
