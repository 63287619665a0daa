#include "protocol/packet_args.hpp"
#include "protocol/packet_table.hpp"
#include <catch2/catch.hpp>
#include <string>

using namespace tpagent;
using namespace tpagent::protocol;

TEST_CASE("PacketArgs splits and parses arguments by their schema", "[packet_args]") {
    auto open = PacketArgs::parse("s,x,x", "2f746d70,241,1ff");
    REQUIRE(open);
    CHECK(open->text(0) == "/tmp");
    CHECK(open->number(1) == 0x241);
    CHECK(open->number(2) == 0x1ff);

    auto h = PacketArgs::parse("ct", "gp1a.-1");
    REQUIRE(h);
    CHECK(h->character(0) == 'g');
    CHECK(h->thread(1).pid == 0x1a);
    CHECK(h->thread(1).tid == ThreadId::kAll);
}

TEST_CASE("PacketArgs refuses arguments that do not fit the schema", "[packet_args]") {
    CHECK_FALSE(PacketArgs::parse("x", ""));
    CHECK_FALSE(PacketArgs::parse("x", "12g"));
    CHECK_FALSE(PacketArgs::parse("s,x,x", "2f,1"));     // a field missing
    CHECK_FALSE(PacketArgs::parse("s,x,x", "2f,1,2,3")); // the last field runs to the end
    CHECK_FALSE(PacketArgs::parse("s", "2"));            // odd hex text
    CHECK_FALSE(PacketArgs::parse("ct", ""));
    CHECK(PacketArgs::parse("x", "12g").error().code == ErrorCode::BadPacket);
}

TEST_CASE("PacketTable parses an entry's arguments before its handler runs", "[packet]") {
    struct Ctx {
        std::uint64_t seen = 0;
    };
    PacketTable<Ctx> table{
        {"vAttach",
         {"x"},
         [](Ctx& c, const PacketArgs& args) {
             c.seen = args.number(0);
             return std::string("OK");
         }},
        {"p",
         {"x", [](const Error&) { return std::string("E06"); }},
         [](Ctx&, const PacketArgs&) { return std::string("00"); }},
    };
    Ctx ctx;
    CHECK((*table.find("vAttach"))(ctx, "4d2") == "OK");
    CHECK(ctx.seen == 0x4d2);
    ctx.seen = 0;
    CHECK((*table.find("vAttach"))(ctx, "zz") == "E01"); // the parse error's code
    CHECK(ctx.seen == 0);                                // the handler did not run
    CHECK((*table.find("p"))(ctx, "zz") == "E06");       // the entry's own reply
}
