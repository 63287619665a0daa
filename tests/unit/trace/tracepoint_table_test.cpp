#include "trace/tracepoint_codec.hpp"
#include "trace/tracepoint_table.hpp"
#include "gdb13_captures.hpp"
#include "test_support.hpp"
#include <optional>
#include <string_view>
#include <vector>

using namespace tpagent;
using namespace tpagent::trace;
using namespace trace_test;
using Defined = TracepointTable::Defined;

namespace {

// A QTDP payload (after "QTDP:"), parsed as the server's handler parses it.
Result<TracepointTable::DefineOutcome> define(TracepointTable& table, std::string_view payload) {
    return table.define(parse_tracepoint_packet(payload, kRegisterCount));
}

// A QTDPsrc payload (after "QTDPsrc:"); one that does not parse is refused.
Status add_source(TracepointTable& table, std::string_view payload) {
    auto packet = parse_source_packet(payload);
    if (!packet) return packet.error();
    table.add_source(std::move(*packet));
    return ok_status();
}

void define_all(TracepointTable& table, const std::vector<std::string>& qtdp,
                const std::vector<std::string>& qtdpsrc = {}) {
    for (const std::string& p : qtdp) {
        INFO(p);
        auto r = define(table, p);
        REQUIRE(r.ok());
    }
    for (const std::string& p : qtdpsrc) {
        INFO(p);
        REQUIRE(add_source(table, p).ok());
    }
}

std::vector<std::string> all_pieces(const TracepointTable& table) {
    std::vector<std::string> out;
    UploadCursor cursor = table.upload();
    for (std::size_t guard = 0; guard < 10000; ++guard) {
        out.push_back(cursor.next());
        if (out.back() == "l") break;
    }
    return out;
}

} // namespace

TEST_CASE("table: gdb 13 session 1 definitions", "[trace][table]") {
    TracepointTable table(kRegisterCount);
    // Outcomes of each packet.
    std::vector<Defined> outcomes;
    for (const std::string& p : gdb13::kQtdp1) {
        auto r = define(table, p);
        REQUIRE(r.ok());
        outcomes.push_back(r->what);
    }
    CHECK(outcomes == std::vector<Defined>{Defined::Pending, Defined::Pending, Defined::Pending,
                                           Defined::Pending, Defined::Pending, Defined::Added,
                                           Defined::Pending, Defined::Pending, Defined::Added,
                                           Defined::Added, Defined::Added});
    for (const std::string& p : gdb13::kQtdpsrc1)
        REQUIRE(add_source(table, p).ok());
    REQUIRE(table.size() == 4);
    CHECK_FALSE(table.has_pending());

    const Tracepoint* work = table.find({1, 0x555555555144});
    REQUIRE(work);
    const TracepointDefinition& d = work->definition;
    CHECK(d.step_count == 2);
    REQUIRE(d.actions.size() == 3);
    CHECK(d.actions[0].actions.size() == 1); // R
    CHECK(d.actions[1].actions.size() == 4); // M X X X
    CHECK(d.actions[2].actions.size() == 3); // X X X
    REQUIRE(d.stepping_actions.size() == 2);
    CHECK(std::get<RegisterMask>(d.stepping_actions[0].actions[0]).test(16)); // rip
    CHECK(std::holds_alternative<Expression>(d.stepping_actions[1].actions[0]));
    REQUIRE(work->sources.size() == 7);
    CHECK(work->sources[0].type == "at");
    CHECK(work->sources[0].text == "work");
    CHECK(work->sources[6].text == "end");

    const Tracepoint* main_tp = table.find({2, 0x5555555551b1});
    REQUIRE(main_tp);
    CHECK(main_tp->definition.pass_count == 3);
    REQUIRE(main_tp->definition.condition);
    REQUIRE(main_tp->definition.actions.size() == 2);
    CHECK(std::holds_alternative<StaticData>(main_tp->definition.actions[0].actions[0]));
    CHECK(main_tp->definition.stepping_actions.empty());

    CHECK_FALSE(table.find({3, 0x5555555551b8})->definition.enabled);
    CHECK(table.find({4, 0x555555555141})->definition.actions.empty());
    CHECK_FALSE(table.find({1, 0x555555555141}));

    table.clear(); // QTinit
    CHECK(table.size() == 0);
}

TEST_CASE("table: one number at several addresses", "[trace][table]") {
    TracepointTable table(kRegisterCount);
    define_all(table, {"5:0000000000401000:E:0:0-", "-5:0000000000401000:R01",
                       "5:0000000000402000:E:0:0-", "-5:0000000000402000:M-1,10,4"});
    REQUIRE(table.size() == 2);
    CHECK(table.find({5, 0x401000})->definition.actions[0] ==
          *parse_action_string("R01", kRegisterCount));
    CHECK(table.find({5, 0x402000})->definition.actions[0] ==
          *parse_action_string("M-1,10,4", kRegisterCount));
    // QTDPsrc writes the address unpadded; it still names the same location.
    REQUIRE(add_source(table, "5:401000:at:0:4:6d61696e").ok());
    CHECK(table.find({5, 0x401000})->sources.size() == 1);
    CHECK(table.find({5, 0x402000})->sources.empty());
}

namespace {

// A QTDP ("QTDP:...") or QTDPsrc ("QTDPsrc:...") payload given to the table.
Status send(TracepointTable& table, std::string_view packet) {
    if (packet.starts_with("QTDPsrc:")) return add_source(table, packet.substr(8));
    REQUIRE(packet.starts_with("QTDP:"));
    auto r = define(table, packet.substr(5));
    if (!r) return r.error();
    return ok_status();
}

// A packet and, when the table must refuse it, the error code.
struct Step {
    std::string_view packet;
    std::optional<ErrorCode> refused = std::nullopt;
};
struct Refusal {
    const char* what;
    std::vector<Step> steps;
};

const std::vector<Refusal>& refusals() {
    constexpr ErrorCode kBad = ErrorCode::BadTracepoint;
    static const std::vector<Refusal> all = {
        {"continuation without a start", {{"QTDP:-2:0000555555555144:R01", kBad}}},
        // The half-built definition is gone: its own continuation is then refused too.
        {"continuation for another number",
         {{"QTDP:7:1000:E:0:0-"}, {"QTDP:-8:1000:R01", kBad}, {"QTDP:-7:1000:R01", kBad}}},
        {"continuation for another address", {{"QTDP:7:1000:E:0:0-"}, {"QTDP:-7:1001:R01", kBad}}},
        {"bad hex in an action",
         {{"QTDP:7:1000:E:0:0-"}, {"QTDP:-7:1000:R01-"}, {"QTDP:-7:1000:M-1,1z,4", kBad}}},
        {"bad bytecode in the last action",
         {{"QTDP:7:1000:E:0:0-"}, {"QTDP:-7:1000:X2,0227", ErrorCode::BadBytecode}}},
        {"bad bytecode in a condition",
         {{"QTDP:7:1000:E:0:0:X2,27", kBad}, {"QTDP:7:1000:E:0:0:X1,02", ErrorCode::BadBytecode}}},
        {"truncated packets",
         {{"QTDP:7:1000:E:0", kBad},
          {"QTDP:7:1000:E:0:0:X3,2201", kBad},
          {"QTDP:7:1000:E:0:0-"},
          {"QTDP:-7:1000:X0000000F,26000622", kBad}}},
        {"second while-stepping marker",
         {{"QTDP:7:1000:E:2:0-"}, {"QTDP:-7:1000:SR01-"}, {"QTDP:-7:1000:SR01", kBad}}},
        {"wrong tracepoint number", {{"QTDP:0:1000:E:0:0", kBad}, {"QTDP:10000:1000:E:0:0", kBad}}},
        {"bad header after an unfinished one",
         {{"QTDP:7:1000:E:0:0-"}, {"QTDP:8:1000:Q:0:0", kBad}}},
        {"empty packet after an unfinished one", {{"QTDP:7:1000:E:0:0-"}, {"QTDP:", kBad}}},
        {"bad source", {{"QTDPsrc:2:555555555144:at:0:4:776f7", kBad}}},
    };
    return all;
}

} // namespace

TEST_CASE("table: bad packets leave the table unchanged", "[trace][table]") {
    TracepointTable table(kRegisterCount);
    define_all(table, gdb13::kQtdp2, gdb13::kQtdpsrc2);
    const auto before = all_pieces(table);
    REQUIRE(before.size() == 21);

    SECTION("refused packets") {
        const Refusal& refusal = GENERATE(from_range(refusals()));
        INFO(refusal.what);
        for (const auto& [packet, refused] : refusal.steps) {
            INFO(packet);
            const Status st = send(table, packet);
            if (!refused) {
                REQUIRE(st.ok());
                // A definition that continues waits for its next packet.
                CHECK(table.has_pending() == packet.ends_with('-'));
                continue;
            }
            check_rejected(st, *refused);
            CHECK_FALSE(table.has_pending());
            CHECK(all_pieces(table) == before);
        }
    }
    SECTION("a new definition drops an unfinished one") {
        REQUIRE(define(table, "7:1000:E:0:0-").ok());
        REQUIRE(define(table, "8:2000:E:0:0")->what == Defined::Added);
        CHECK(table.size() == 3);
        CHECK_FALSE(table.find({7, 0x1000}));
    }
}

TEST_CASE("table: redefinition", "[trace][table]") {
    TracepointTable table(kRegisterCount);
    define_all(table, gdb13::kQtdp2, gdb13::kQtdpsrc2);
    const TracepointKey work{2, 0x555555555144};
    table.record_hit(work, 100);
    table.record_step(work, 50);

    SECTION("identical: accepted during a run, counters kept, sources replaced") {
        table.set_running(true);
        REQUIRE(table.set_enabled(work, false).ok());
        std::vector<Defined> outcomes;
        for (const auto& p : gdb13::kQtdp2)
            outcomes.push_back(define(table, p)->what);
        CHECK(outcomes[5] == Defined::Identical);
        CHECK(outcomes[7] == Defined::Identical);
        for (const auto& p : gdb13::kQtdpsrc2)
            REQUIRE(add_source(table, p).ok());
        const Tracepoint* tp = table.find(work);
        CHECK(tp->definition.enabled); // gdb re-sent it as E
        CHECK(tp->counters.hits == 1);
        CHECK(tp->counters.bytes_used == 150);
        CHECK(tp->sources.size() == 7); // not 14
        CHECK(table.size() == 2);
    }
    SECTION("different: a trap tracepoint's replaced during a run") {
        table.set_running(true);
        REQUIRE(define(table, "2:0000555555555144:E:0:0")->what == Defined::Replaced);
        CHECK(table.find(work)->definition.step_count == 0);
        // Its source comes again; one for a tracepoint gdb could not define is ignored.
        REQUIRE(add_source(table, "2:555555555144:at:0:4:776f726b").ok());
        REQUIRE(add_source(table, "9:1000:at:0:4:776f726b").ok());
        CHECK(table.find(work)->sources.size() == 1);
        CHECK_FALSE(table.find({9, 0x1000}));
    }
    SECTION("different: refused during a run for a fast tracepoint in the program") {
        REQUIRE(define(table, "5:401000:E:0:0:F5")->what == Defined::Added);
        table.mark_in_program({5, 0x401000});
        table.set_running(true);
        check_rejected(define(table, "5:401000:E:0:0"), ErrorCode::BadTracepoint);
        CHECK(table.find({5, 0x401000})->definition.kind == TracepointKind::Fast);
        // One collected through a trap site takes the new definition.
        REQUIRE(define(table, "2:0000555555555144:E:0:0:F5")->what == Defined::Replaced);
        table.set_running(false); // the run is over: the marks with it
        table.set_running(true);
        REQUIRE(define(table, "5:401000:E:0:0")->what == Defined::Replaced);
    }
    SECTION("different: replaces when no trace runs") {
        REQUIRE(define(table, "2:0000555555555144:D:0:5")->what == Defined::Replaced);
        const Tracepoint* tp = table.find(work);
        CHECK(tp->definition.pass_count == 5);
        CHECK_FALSE(tp->definition.enabled);
        CHECK(tp->definition.actions.empty());
        CHECK(tp->counters.hits == 0);
        CHECK(tp->sources.empty());
    }
}

TEST_CASE("table: enable, disable, counters", "[trace][table]") {
    TracepointTable table(kRegisterCount);
    define_all(table, gdb13::kQtdp1);
    auto key = parse_tracepoint_key("3:5555555551b8"); // QTEnable payload
    REQUIRE(key.ok());
    CHECK_FALSE(table.find(*key)->definition.enabled);
    REQUIRE(table.set_enabled(*key, true).ok());
    CHECK(table.find(*key)->definition.enabled);
    REQUIRE(table.set_enabled(*key, false).ok());
    CHECK_FALSE(table.find(*key)->definition.enabled);
    check_rejected(table.set_enabled({3, 0x1000}, true), ErrorCode::NotFound);

    const TracepointKey work{1, 0x555555555144};
    for (int i = 0; i < 0x11; ++i)
        table.record_hit(work, 0xa4c);
    table.record_step(work, 0x9d4);
    CHECK(format_counters(table.find(work)->counters) == "V11:b8e0");
    table.record_hit({9, 9}, 1); // unknown: ignored
    table.reset_counters();
    CHECK(format_counters(table.find(work)->counters) == "V0:0");
}

TEST_CASE("table: upload equals gdbserver's and round-trips", "[trace][table]") {
    TracepointTable table(kRegisterCount);
    define_all(table, gdb13::kQtdp2, gdb13::kQtdpsrc2);
    auto pieces = all_pieces(table);

    // Same as gdbserver's pieces except: our action pieces keep gdb's packet grouping and
    // are printed in minimal lower-case hex, we add V counter pieces, and the last tracepoint
    // comes first (gdb reverses the list it reads: the numbers then come out as defined).
    std::vector<std::string> expected = {
        "T2:555555555144:E:2:0",
        "A2:555555555144:R07ffffffffffffffffffffffffffffffffffffff",
        "A2:555555555144:M-1,555555558020,4Xf,26000622100222dc16080222040c27"
        "X12,26000622100222d01608020d081a22040c27X15,2500005555555580802202220404022a4022100c27",
        "A2:555555555144:Xd,25000055555555803022140c27Xc,2c000222010216402d000227"
        "X8,2c00022e00022927",
        "S2:555555555144:R010040",
        "S2:555555555144:Xf,26000622100222ec16080222040c27",
    };
    for (std::size_t i = 11; i <= 17; ++i)
        expected.push_back(gdb13::kUpload2[i]);
    expected.push_back("V2:555555555144:0:0");
    std::vector<std::string> third;
    for (std::size_t i = 18; i <= 22; ++i)
        third.push_back(gdb13::kUpload2[i]);
    third.push_back("V3:5555555551b1:0:0");
    expected.insert(expected.begin(), third.begin(), third.end());
    expected.push_back("l");
    CHECK(pieces == expected);

    SECTION("our upload defines the same tracepoints again") {
        TracepointTable again(kRegisterCount);
        for (const auto& def : pieces_to_packets(pieces))
            define_all(again, def.qtdp, def.qtdpsrc);
        REQUIRE(again.size() == table.size());
        for (const auto& [key, tp] : table.all()) {
            const Tracepoint* other = again.find(key);
            REQUIRE(other);
            CHECK(other->definition == tp.definition);
            CHECK(other->sources == tp.sources);
        }
        CHECK(all_pieces(again) == pieces);
    }
    SECTION("gdbserver's upload defines the same tracepoints") {
        TracepointTable from_gdbserver(kRegisterCount);
        for (const auto& def : pieces_to_packets(gdb13::kUpload2))
            define_all(from_gdbserver, def.qtdp, def.qtdpsrc);
        for (const auto& [key, tp] : table.all()) {
            const Tracepoint* other = from_gdbserver.find(key);
            REQUIRE(other);
            // gdbserver splits action strings into single actions; the actions are the same.
            auto flatten = [](const std::vector<ActionString>& list) {
                std::vector<Action> out;
                for (const auto& s : list)
                    out.insert(out.end(), s.actions.begin(), s.actions.end());
                return out;
            };
            CHECK(flatten(other->definition.actions) == flatten(tp.definition.actions));
            CHECK(flatten(other->definition.stepping_actions) ==
                  flatten(tp.definition.stepping_actions));
            CHECK(other->definition.condition == tp.definition.condition);
            CHECK(other->sources == tp.sources);
        }
    }
    SECTION("every kind of field round-trips") {
        TracepointTable t(kRegisterCount);
        define_all(t,
                   {"1f:0000000000401000:D:3:a:F5:X3,220127-", "-1f:0000000000401000:R0300-",
                    "-1f:0000000000401000:M6,fffffffffffffff0,8M-1,601000,20000L-",
                    "-1f:0000000000401000:SR01-", "-1f:0000000000401000:M7,8,10",
                    "20:402000:E:0:0:S"},
                   {"1f:401000:cmd:0:10:6c696d697473", "1f:401000:cmd:6:10:3a20616e6420736f6d65"});
        auto p = all_pieces(t);
        // 0x20 (the last) first, then 0x1f.
        CHECK(p[0] == "T20:402000:E:0:0:S");
        CHECK(p[1] == "V20:402000:0:0");
        CHECK(p[2] == "T1f:401000:D:3:a:F5:X3,220127");
        CHECK(p[3] == "A1f:401000:R0300");
        CHECK(p[4] == "A1f:401000:M6,fffffffffffffff0,8M-1,601000,20000L");
        CHECK(p[5] == "S1f:401000:R01");
        CHECK(p[6] == "S1f:401000:M7,8,10");
        CHECK(p[7] == "Z1f:401000:cmd:0:10:6c696d697473");
        CHECK(p[8] == "Z1f:401000:cmd:6:10:3a20616e6420736f6d65");
        CHECK(p[9] == "V1f:401000:0:0");
        TracepointTable again(kRegisterCount);
        for (const auto& def : pieces_to_packets(p))
            define_all(again, def.qtdp, def.qtdpsrc);
        CHECK(all_pieces(again) == p);
        CHECK(again.find({0x1f, 0x401000})->definition == t.find({0x1f, 0x401000})->definition);
    }
}

TEST_CASE("upload cursor", "[trace][table]") {
    UploadCursor empty;
    CHECK(empty.next() == "l");
    CHECK(empty.next() == "l");
    UploadCursor two({"a", "b"});
    CHECK_FALSE(two.done());
    CHECK(two.next() == "a");
    CHECK(two.next() == "b");
    CHECK(two.done());
    CHECK(two.next() == "l");
}
