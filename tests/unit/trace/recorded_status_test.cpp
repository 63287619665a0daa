// A recorded file's status line (trace/recorded_status.hpp): always the same width, whatever
// its notes, so that it is rewritten in place; restated with a frame count and a note.
#include "trace/recorded_status.hpp"
#include "protocol/hex.hpp"
#include <catch2/catch.hpp>

using namespace tpagent;

TEST_CASE("recorded status: fixed width, recording fields, notes shortened to fit",
          "[recorded-status]") {
    protocol::TraceStatus status;
    status.running = true;
    status.frames = 5;
    status.notes = "short";
    const trace::RecordingFields fields{3, 100, 2, 1, 0};
    const std::string payload = trace::recorded_status_payload(status, fields);
    CHECK(payload.size() == trace::kRecordedStatusWidth);
    CHECK(payload.starts_with("1;"));
    CHECK(payload.find(";tframes:5;") != std::string::npos);
    CHECK(payload.find(";rfile:3;rfirst:64;rlost:2;rdropped:1;runwritten:0;rpad:0") !=
          std::string::npos);
    CHECK(payload.find("notes:" + protocol::to_hex("short")) != std::string::npos);

    status.notes = std::string(2000, 'n'); // 4000 hex digits: cut to fit
    status.user = std::string(100, 'u');
    const std::string cut = trace::recorded_status_payload(status, fields);
    CHECK(cut.size() == trace::kRecordedStatusWidth);
    CHECK(cut.find("username:" + protocol::to_hex(std::string(100, 'u'))) != std::string::npos);
    CHECK(cut.find(";rpad:") != std::string::npos);
}

TEST_CASE("recorded status: restated with the frames found and a note, same width",
          "[recorded-status]") {
    protocol::TraceStatus status;
    status.notes = "user's";
    const std::string payload = trace::recorded_status_payload(status, {1, 0, 0, 0, 0});
    const auto restated = trace::restate_recorded_status(payload, 42, "sealed after a cut");
    REQUIRE(restated);
    CHECK(restated->size() == payload.size());
    CHECK(restated->find(";tframes:2a;") != std::string::npos);
    CHECK(restated->find("notes:" + protocol::to_hex("user's; sealed after a cut")) !=
          std::string::npos);
    CHECK(restated->find(";rfile:1;") != std::string::npos);
    // A note too long to fit is left out; the count is still restated.
    const auto long_note = trace::restate_recorded_status(payload, 7, std::string(900, 'x'));
    REQUIRE(long_note);
    CHECK(long_note->size() == payload.size());
    CHECK(long_note->find(";tframes:7;") != std::string::npos);
    // Not a recorded file's status (tsave's): nothing.
    CHECK_FALSE(trace::restate_recorded_status("0;tstop:0;tframes:3;tcreated:3;notes:", 3, "x"));
}
