// Packet handlers against a fake target: the exact bytes gdb would get back, with no process.
#include "protocol/framing.hpp"
#include "server/server.hpp"
#include "server/session.hpp"
#include "tests/unit/server/fake_target.hpp"
#include <catch2/catch.hpp>
#include <csignal>

using namespace tpagent;
using namespace tpagent::server;
using tpagent::server::testing::FakeTarget;

namespace {

class CapturingConnection final : public Connection {
  public:
    explicit CapturingConnection(std::string& written) : written_(written) {}
    void async_read(std::span<std::uint8_t>, ReadHandler) override {}
    bool write(std::string_view data) override {
        written_ += data;
        return true;
    }
    void close() override {}

  private:
    std::string& written_;
};

// A server whose program is a FakeTarget, and one gdb session on it.
struct Fixture {
    boost::asio::io_context io;
    FakeTarget* target = nullptr;
    std::unique_ptr<Server> server;
    std::unique_ptr<Session> session;
    std::string written;

    Fixture() {
        TargetFactory fakes{
            [this](const process::LaunchSpec&) -> Result<std::unique_ptr<process::Target>> {
                auto fake = std::make_unique<FakeTarget>();
                target = fake.get();
                return std::unique_ptr<process::Target>(std::move(fake));
            },
            [](pid_t) -> Result<std::unique_ptr<process::Target>> {
                return make_error(ErrorCode::NotFound, "no attaching in tests");
            }};
        server = std::make_unique<Server>(io, ServerOptions{}, std::move(fakes));
        REQUIRE(server->start_program({"prog"}));
        session =
            std::make_unique<Session>(*server, std::make_unique<CapturingConnection>(written));
    }

    // Sends one packet and returns what came back (the ack included).
    std::string request(const std::string& payload) {
        written.clear();
        const std::string frame = protocol::frame_packet(payload);
        session->receive(
            std::span(reinterpret_cast<const std::uint8_t*>(frame.data()), frame.size()));
        return written;
    }
};

std::string reply(const std::string& payload) {
    return "+" + protocol::frame_packet(payload);
}

} // namespace

TEST_CASE("m reads the target's memory, E03 where it has none", "[server]") {
    Fixture f;
    f.target->write_memory(0x1000, std::vector<std::uint8_t>{0xde, 0xad, 0xbe, 0xef});
    CHECK(f.request("m1000,4") == reply("deadbeef"));
    CHECK(f.request("m1002,8") == reply("beef")); // as far as it is readable
    CHECK(f.request("m2000,4") == reply("E03"));
}

TEST_CASE("M and X write the target's memory", "[server]") {
    Fixture f;
    CHECK(f.request("M3000,2:0102") == reply("OK"));
    CHECK(f.target->memory.at(0x3001) == 0x02);
    CHECK(f.request("m3000,2") == reply("0102"));
}

TEST_CASE("Z0 and z0 reach the target's breakpoints", "[server]") {
    Fixture f;
    CHECK(f.request("Z0,401000,1") == reply("OK"));
    CHECK(f.target->points.breakpoints.count(0x401000) == 1);
    CHECK(f.request("z0,401000,1") == reply("OK"));
    CHECK(f.target->points.breakpoints.empty());
    CHECK(f.request("z0,401000,1") == reply("E06"));
}

TEST_CASE("g sends the whole register block", "[server]") {
    Fixture f;
    f.target->thread_registers.block[0] = 0x2a;
    const std::string answer = f.request("g");
    REQUIRE(answer.size() > 4);
    CHECK(answer.substr(0, 4) == "+$2a");
}

TEST_CASE("c resumes the target and defers the reply to the stop", "[server]") {
    Fixture f;
    CHECK(f.request("c") == "+");
    REQUIRE(f.target->resumes.size() == 1);
    CHECK(f.target->resumes[0].at(0).tid == FakeTarget::kPid);
    CHECK_FALSE(f.target->resumes[0].at(0).step);
}

TEST_CASE("non-stop: stops go out as notifications, acknowledged one by one", "[server]") {
    Fixture f;
    CHECK(f.request("QNonStop:1") == reply("OK"));
    CHECK(f.target->non_stop);
    // `?`: every stopped thread, the first as the reply, the rest (none here) after vStopped.
    CHECK(f.request("?").rfind("+$T05", 0) == 0);
    CHECK(f.request("vStopped") == reply("OK"));
    CHECK(f.request("vCont;c") == reply("OK")); // no stop reply to wait for
    process::StopEvent first;
    first.pid = first.tid = FakeTarget::kPid;
    first.signal = SIGTRAP;
    process::StopEvent second = first;
    second.signal = SIGINT;
    f.written.clear();
    f.session->on_stop(first);
    CHECK(f.written.rfind("%Stop:T05", 0) == 0);
    f.written.clear();
    f.session->on_stop(second); // waits for gdb's vStopped
    CHECK(f.written.empty());
    CHECK(f.session->stop_unacknowledged(FakeTarget::kPid));
    CHECK(f.request("vStopped").rfind("+$T02", 0) == 0);
    CHECK(f.request("vStopped") == reply("OK"));
    CHECK_FALSE(f.session->stop_unacknowledged(FakeTarget::kPid));
}

TEST_CASE("non-stop: a code patch runs with the other threads paused", "[server]") {
    Fixture f;
    CHECK(f.request("QNonStop:1") == reply("OK"));
    (void)f.request("Z0,1000,1");
    (void)f.request("m1000,1"); // a read needs no pause
    CHECK(f.target->pauses == 1);
    CHECK(f.target->unpauses == 1);
    CHECK(f.request("QNonStop:2").rfind("+$E", 0) == 0);
    CHECK(f.request("QNonStop:0") == reply("OK"));
    CHECK_FALSE(f.target->non_stop);
    (void)f.request("Z0,1000,1");
    CHECK(f.target->pauses == 1); // all-stop: everything is stopped already
}

TEST_CASE("qTStatus before any trace", "[server]") {
    Fixture f;
    const std::string answer = f.request("qTStatus");
    CHECK(answer.rfind("+$T0;tnotrun:0;", 0) == 0);
}

TEST_CASE("a handler that throws answers E.text and the session goes on", "[server]") {
    Fixture f;
    f.target->write_memory(0x1000, std::vector<std::uint8_t>{0x11});
    f.target->throw_on_memory_read = true;
    CHECK(f.request("m1000,1") == reply("E.m: not enough memory"));
    f.target->throw_on_memory_read = false;
    CHECK(f.request("m1000,1") == reply("11"));
}

TEST_CASE("qTfSTM/qTsSTM list the markers, qTSTMat finds one by address", "[server]") {
    Fixture f;
    process::StaticMarker step;
    step.address = 0x401126;
    step.id = "app:step";
    step.arguments = "-4@%eax";
    process::StaticMarker bare;
    bare.address = 0x401200;
    bare.id = "app:bare";
    f.target->markers = {step, bare};
    // address:hex(id):hex(arguments), comma-separated; "l" once all were sent
    CHECK(f.request("qTfSTM") ==
          reply("m401126:6170703a73746570:2d344025656178,401200:6170703a62617265:"));
    CHECK(f.request("qTsSTM") == reply("l"));
    CHECK(f.request("qTSTMat:401200") == reply("m401200:6170703a62617265:"));
    CHECK(f.request("qTSTMat:401201") == reply("l"));
    CHECK(f.request("qTSTMat:zz") == reply("E01"));
    f.target->markers.clear();
    CHECK(f.request("qTfSTM") == reply("l"));
}

TEST_CASE("malformed arguments get the replies their handlers gave", "[server]") {
    Fixture f;
    CHECK(f.request("pzz") == reply("E06"));
    CHECK(f.request("p") == reply("E06"));
    CHECK(f.request("Tzz") == reply("E01"));
    CHECK(f.request("H") == reply("E01"));
    CHECK(f.request("Hx0") == reply("E01"));
    CHECK(f.request("Hgzz") == reply("E01"));
    CHECK(f.request("Hg0") == reply("OK"));
    CHECK(f.request("vKill;zz") == reply("E01"));
    CHECK(f.request("vAttach;0") == reply("E01"));
    CHECK(f.request("qRcmd,6") == reply("E01"));
    CHECK(f.request("QEnvironmentUnset:6").rfind("+$E.", 0) == 0);
    CHECK(f.request("vFile:setfs:zz") == reply("F-1,16"));
    CHECK(f.request("vFile:open:2f,0") == reply("F-1,16"));
    CHECK(f.request("vFile:open:2f,0,0,0") == reply("F-1,16"));
    CHECK(f.request("vFile:close:zz") == reply("F-1,9"));
    CHECK(f.request("vFile:fstat:7fff") == reply("F-1,9"));
    CHECK(f.request("vFile:readlink:2") == reply("F-1,16"));
}

TEST_CASE("vFile:open and vFile:close take their arguments from the packet", "[server]") {
    Fixture f;
    const std::string opened = f.request("vFile:open:2f6465762f6e756c6c,0,0"); // /dev/null
    REQUIRE(opened.rfind("+$F", 0) == 0);
    const std::string fd = opened.substr(3, opened.find('#') - 3);
    CHECK(fd.front() != '-');
    CHECK(f.request("vFile:close:" + fd) == reply("F0"));
    CHECK(f.request("vFile:close:" + fd) == reply("F-1,9"));
}

TEST_CASE("qXfer:statictrace:read needs a trace frame", "[server]") {
    Fixture f;
    CHECK(f.request("qXfer:statictrace:read::0,100").rfind("+$E", 0) == 0);
    const std::string supported = f.request("qSupported:xmlRegisters=i386");
    CHECK(supported.find(";StaticTracepoints+;") != std::string::npos);
    CHECK(supported.find(";qXfer:statictrace:read+;") != std::string::npos);
}
