#include "protocol/packet.hpp"
#include "protocol/packet_table.hpp"
#include "protocol/replies.hpp"
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

using namespace tpagent;
using namespace tpagent::protocol;

namespace {

using namespace std::string_view_literals;

enum class Family {
    Letter, // one-letter names
    Named,  // q, Q and v packets: the name ends at ':', ',', ';' or the end
    Object, // qXfer and vFile: the object and operation are part of the name
};

// What classify must make of each payload: its name and arguments.
struct Classified {
    Family family;
    std::string_view payload, name, args;
};
constexpr Classified kClassified[] = {
    {Family::Letter, "m1234,4", "m", "1234,4"},
    {Family::Letter, "M1234,2:abcd", "M", "1234,2:abcd"},
    {Family::Letter, "?", "?", ""},
    {Family::Letter, "g", "g", ""},
    {Family::Letter, "Z0,400000,1", "Z", "0,400000,1"},
    {Family::Letter, "z0,400000,1;X2,2f00", "z", "0,400000,1;X2,2f00"},
    {Family::Letter, "Hgp1.2", "H", "gp1.2"},
    {Family::Letter, "c", "c", ""},
    {Family::Letter, "C05;400000", "C", "05;400000"},
    {Family::Letter, "T1", "T", "1"},
    // binary data: NUL and '#' are plain bytes here
    {Family::Letter, "X1000,3:a\0#"sv, "X", "1000,3:a\0#"sv},
    {Family::Letter, "", "", ""},
    {Family::Named, "qSupported:xmlRegisters=i386", "qSupported", "xmlRegisters=i386"},
    {Family::Named, "qSupported", "qSupported", ""},
    {Family::Named, "qC", "qC", ""},
    {Family::Named, "qfThreadInfo", "qfThreadInfo", ""},
    {Family::Named, "qAttached:1", "qAttached", "1"},
    {Family::Named, "qRcmd,6d6f6e", "qRcmd", "6d6f6e"},
    {Family::Named, "qThreadExtraInfo,p1.2", "qThreadExtraInfo", "p1.2"},
    {Family::Named, "QTDP:1:400000:E:0:0", "QTDP", "1:400000:E:0:0"},
    {Family::Named, "QTDP:-1:400000:S", "QTDP", "-1:400000:S"},
    {Family::Named, "QTinit", "QTinit", ""},
    {Family::Named, "QStartNoAckMode", "QStartNoAckMode", ""},
    {Family::Named, "qTStatus", "qTStatus", ""},
    {Family::Named, "vCont;c:p1.2", "vCont", "c:p1.2"},
    {Family::Named, "vCont?", "vCont?", ""},
    {Family::Named, "vCtrlC", "vCtrlC", ""},
    {Family::Named, "vKill;a", "vKill", "a"},
    {Family::Named, "vMustReplyEmpty", "vMustReplyEmpty", ""},
    {Family::Object, "qXfer:features:read:target.xml:0,fff", "qXfer:features:read",
     "target.xml:0,fff"},
    {Family::Object, "qXfer:auxv:read::0,1000", "qXfer:auxv:read", ":0,1000"},
    {Family::Object, "qXfer:threads:read::0,fff", "qXfer:threads:read", ":0,fff"},
    {Family::Object, "qXfer:features:read", "qXfer:features:read", ""},
    {Family::Object, "qXfer:features", "qXfer:features", ""},
    {Family::Object, "qXfer", "qXfer", ""},
    {Family::Object, "vFile:open:2f746d702f78,0,1c0", "vFile:open", "2f746d702f78,0,1c0"},
    {Family::Object, "vFile:pread:3,1000,0", "vFile:pread", "3,1000,0"},
    {Family::Object, "vFile:close:3", "vFile:close", "3"},
    {Family::Object, "vFile:setfs:0", "vFile:setfs", "0"},
    {Family::Object, "vFile:pwrite:3,0:a:b", "vFile:pwrite", "3,0:a:b"},
    {Family::Object, "vFile", "vFile", ""},
};

void check_classify(Family family) {
    for (const Classified& c : kClassified) {
        if (c.family != family) continue;
        INFO('"' << c.payload << '"');
        PacketView v = classify(c.payload);
        CHECK(v.name == c.name);
        CHECK(v.args == c.args);
    }
}

} // namespace

TEST_CASE("classify: single-letter packets", "[packet]") {
    check_classify(Family::Letter);
}

TEST_CASE("classify: q/Q/v packets", "[packet]") {
    check_classify(Family::Named);
}

TEST_CASE("classify: qXfer and vFile keep their object and operation", "[packet]") {
    check_classify(Family::Object);
}

TEST_CASE("classify: views point into the payload", "[packet]") {
    std::string payload = "qXfer:features:read:target.xml:0,fff";
    PacketView v = classify(payload);
    CHECK(v.name.data() == payload.data());
    CHECK(v.args.data() + v.args.size() == payload.data() + payload.size());
}

TEST_CASE("PacketTable looks handlers up by classified name", "[packet]") {
    struct Ctx {
        std::vector<std::string> seen;
    };
    PacketTable<Ctx> table{
        {"m",
         [](Ctx& c, std::string_view a) {
             c.seen.emplace_back(a);
             return std::string("00");
         }},
        {"qXfer:features:read", [](Ctx&, std::string_view) { return std::string("l"); }},
    };
    Ctx ctx;
    PacketView v = classify("m1234,4");
    const auto* h = table.find(v.name);
    REQUIRE(h != nullptr);
    CHECK((*h)(ctx, v.args) == "00");
    CHECK(ctx.seen == std::vector<std::string>{"1234,4"});
    CHECK(table.find(classify("qXfer:features:read:target.xml:0,1").name) != nullptr);
    CHECK(table.find("qXfer") == nullptr);
    CHECK(table.find("M") == nullptr);

    std::vector<std::string> names;
    table.for_each_name([&](std::string_view n) { names.emplace_back(n); });
    std::sort(names.begin(), names.end());
    CHECK(names == std::vector<std::string>{"m", "qXfer:features:read"});
}

TEST_CASE("PacketTable marks the handlers that need every thread stopped", "[packet]") {
    struct Ctx {};
    auto reply = [](Ctx&, std::string_view) { return std::string("OK"); };
    PacketTable<Ctx> table{{"Z", reply, true}, {"m", reply}};
    CHECK(table.stops_all("Z"));
    CHECK_FALSE(table.stops_all("m"));
    CHECK_FALSE(table.stops_all("X")); // not in the table at all
}

TEST_CASE("replies", "[replies]") {
    CHECK(reply_ok() == "OK");
    CHECK(reply_empty().empty());
    CHECK(reply_error(ErrorCode::BadPacket) == "E01");
    CHECK(reply_error(ErrorCode::TooLarge) == "E05");
    CHECK(reply_error(ErrorCode::BadTracepoint) == "E0a");
    CHECK(reply_error(make_error(ErrorCode::MemoryAccess, "cannot read")) == "E03");
    CHECK(reply_error_text(make_error(ErrorCode::NotFound, "no such file")) == "E.no such file");
    // Text that would need escaping, or no text at all, falls back to the numeric form.
    CHECK(reply_error_text(make_error(ErrorCode::NotFound, "")) == "E06");
    for (std::string t : {"a#b", "a$b", "a}b", "a*b"}) {
        INFO(t);
        CHECK(reply_error_text(make_error(ErrorCode::SystemError, t)) == "E07");
    }
}
