#include "tools/tracefile/trace_status.hpp"
#include <catch2/catch.hpp>

using namespace tpagent;
using namespace tpagent::tracefile;

TEST_CASE("gdbserver's status line") {
    auto s = parse_trace_status("0;tstop:6279:0;tframes:5;tcreated:6;tfree:4fcc84;tsize:500000;"
                                "circular:1;disconn:0;starttime:cc9c2489;stoptime:cc9c2a81;"
                                "notes:6869;username:6d65;future:x");
    REQUIRE(s.ok());
    CHECK_FALSE(s->running);
    CHECK(s->stop_reason == "tstop");
    CHECK(s->stop_text == "by");
    CHECK(s->stop_tracepoint == 0u);
    CHECK(s->frames == 5);
    CHECK(s->created == 6);
    CHECK(s->circular == true);
    CHECK(s->disconnected == false);
    CHECK(s->stop_time == 0xcc9c2a81);
    CHECK(s->notes == "hi");
    CHECK(s->user == "me");
    REQUIRE(s->other.size() == 1);
    CHECK(s->other[0].first == "future");
}

TEST_CASE("other stop reasons, the T prefix and running traces") {
    auto err = parse_trace_status("T1;terror:626164:3;tframes:0");
    REQUIRE(err.ok());
    CHECK(err->running);
    CHECK(err->stop_reason == "terror");
    CHECK(err->stop_text == "bad");
    CHECK(err->stop_tracepoint == 3u);
    auto pass = parse_trace_status("0;tpasscount:5");
    REQUIRE(pass.ok());
    CHECK(pass->stop_tracepoint == 5u);
    auto bare = parse_trace_status("0");
    REQUIRE(bare.ok());
    CHECK(bare->stop_reason.empty());
    CHECK_FALSE(bare->frames);
}

TEST_CASE("bad status lines") {
    for (const char* line : {"", "2;tnotrun:0", "0;tframes:xyz", "0;tstop:zz:0", "0;tstop",
                             "0;tpasscount:123456789", "0;notes:6"}) {
        INFO(line);
        auto s = parse_trace_status(line);
        REQUIRE_FALSE(s.ok());
        CHECK(s.error().text.rfind("status line: ", 0) == 0);
    }
}

TEST_CASE("a recorded file's status: its recording fields, the padding skipped") {
    auto s = parse_trace_status("1;tnotrun:0;tframes:1;tcreated:4;notes:6869;rfile:2;rfirst:1;"
                                "rlost:3;rdropped:4;runwritten:5;rpad:000000");
    REQUIRE(s.ok());
    REQUIRE(s->recorded);
    CHECK(s->recorded->file == 2);
    CHECK(s->recorded->first == 1);
    CHECK(s->recorded->lost == 3);
    CHECK(s->recorded->dropped == 4);
    CHECK(s->recorded->unwritten == 5);
    CHECK(s->other.empty());
    CHECK_FALSE(parse_trace_status("0;tstop::0;tframes:1")->recorded);
}
