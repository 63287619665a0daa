#include "protocol/packet.hpp"
#include "protocol/packet_table.hpp"
#include "protocol/replies.hpp"
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace tpagent;
using namespace tpagent::protocol;

namespace {
void check_classify(std::string_view payload, std::string_view name, std::string_view args) {
    INFO('"' << payload << '"');
    PacketView v = classify(payload);
    CHECK(v.name == name);
    CHECK(v.args == args);
}
} // namespace

TEST_CASE("classify: single-letter packets", "[packet]") {
    check_classify("m1234,4", "m", "1234,4");
    check_classify("M1234,2:abcd", "M", "1234,2:abcd");
    check_classify("?", "?", "");
    check_classify("g", "g", "");
    check_classify("Z0,400000,1", "Z", "0,400000,1");
    check_classify("z0,400000,1;X2,2f00", "z", "0,400000,1;X2,2f00");
    check_classify("Hgp1.2", "H", "gp1.2");
    check_classify("c", "c", "");
    check_classify("C05;400000", "C", "05;400000");
    check_classify("T1", "T", "1");
    const std::string x("X1000,3:a\0#", 11); // binary data: NUL and '#' are plain bytes here
    check_classify(x, "X", x.substr(1));
    check_classify("", "", "");
}

TEST_CASE("classify: q/Q/v packets", "[packet]") {
    check_classify("qSupported:xmlRegisters=i386", "qSupported", "xmlRegisters=i386");
    check_classify("qSupported", "qSupported", "");
    check_classify("qC", "qC", "");
    check_classify("qfThreadInfo", "qfThreadInfo", "");
    check_classify("qAttached:1", "qAttached", "1");
    check_classify("qRcmd,6d6f6e", "qRcmd", "6d6f6e");
    check_classify("qThreadExtraInfo,p1.2", "qThreadExtraInfo", "p1.2");
    check_classify("QTDP:1:400000:E:0:0", "QTDP", "1:400000:E:0:0");
    check_classify("QTDP:-1:400000:S", "QTDP", "-1:400000:S");
    check_classify("QTinit", "QTinit", "");
    check_classify("QStartNoAckMode", "QStartNoAckMode", "");
    check_classify("qTStatus", "qTStatus", "");
    check_classify("vCont;c:p1.2", "vCont", "c:p1.2");
    check_classify("vCont?", "vCont?", "");
    check_classify("vCtrlC", "vCtrlC", "");
    check_classify("vKill;a", "vKill", "a");
    check_classify("vMustReplyEmpty", "vMustReplyEmpty", "");
}

TEST_CASE("classify: qXfer and vFile keep their object and operation", "[packet]") {
    check_classify("qXfer:features:read:target.xml:0,fff", "qXfer:features:read",
                   "target.xml:0,fff");
    check_classify("qXfer:auxv:read::0,1000", "qXfer:auxv:read", ":0,1000");
    check_classify("qXfer:threads:read::0,fff", "qXfer:threads:read", ":0,fff");
    check_classify("qXfer:features:read", "qXfer:features:read", "");
    check_classify("qXfer:features", "qXfer:features", "");
    check_classify("qXfer", "qXfer", "");
    check_classify("vFile:open:2f746d702f78,0,1c0", "vFile:open", "2f746d702f78,0,1c0");
    check_classify("vFile:pread:3,1000,0", "vFile:pread", "3,1000,0");
    check_classify("vFile:close:3", "vFile:close", "3");
    check_classify("vFile:setfs:0", "vFile:setfs", "0");
    check_classify("vFile:pwrite:3,0:a:b", "vFile:pwrite", "3,0:a:b");
    check_classify("vFile", "vFile", "");
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
