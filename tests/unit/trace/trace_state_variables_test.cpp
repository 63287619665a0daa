#include "trace/trace_state_variables.hpp"
#include "trace/tracepoint_codec.hpp"
#include "gdb13_captures.hpp"
#include "test_support.hpp"

using namespace tpagent;
using namespace tpagent::trace;
using namespace trace_test;

namespace {
// A QTDV payload (after "QTDV:"), parsed as the server's handler parses it.
Status define(TraceStateVariables& vars, std::string_view payload) {
    auto variable = parse_variable_definition(payload);
    if (!variable) return variable.error();
    vars.define(std::move(*variable));
    return ok_status();
}

std::vector<std::string> all_pieces(const TraceStateVariables& vars) {
    std::vector<std::string> out;
    UploadCursor c = vars.upload();
    do
        out.push_back(c.next());
    while (out.back() != "l");
    return out;
}
} // namespace

TEST_CASE("tsv: built-in timestamp offered like gdbserver", "[trace][tsv]") {
    std::int64_t now = 0x445583c8;
    TraceStateVariables vars([&now] { return now; }, [] { return std::int64_t{7}; });
    // gdbserver's qTfV/qTsV on connect.
    CHECK(all_pieces(vars) ==
          std::vector<std::string>{"1:0:1:74726163655f74696d657374616d70", "l"});
    CHECK(vars.value_reply(1) == "V445583c8");
    now = 0x445583d0;
    CHECK(*vars.get(1) == 0x445583d0);
    CHECK_FALSE(vars.set(1, 5)); // read-only
    CHECK(vars.value_reply(2) == "U");

    // tpagent's nanosecond clock, under the name the user gives a variable of gdb's.
    REQUIRE(define(vars, "2:0:0:74726163655f74696d657374616d705f6e73").ok());
    CHECK(*vars.get(2) == 7);
    CHECK_FALSE(vars.set(2, 5));
    CHECK(vars.reading(2) == TraceStateVariables::Reading::Nanos);
    CHECK(vars.reading(1) == TraceStateVariables::Reading::Micros);

    // $trace_thread: the collecting thread's id; unknown when no thread collects it (qTV).
    REQUIRE(define(vars, "3:0:0:74726163655f746872656164").ok());
    CHECK(vars.reading(3) == TraceStateVariables::Reading::ThreadId);
    CHECK(*vars.get(3, TraceStateVariables::Collecting{4242, 4200}) == 4242);
    CHECK(vars.value_reply(3) == "U");
    CHECK_FALSE(vars.set(3, 5));

    // $trace_pid: the collecting thread's process (a trace that follows forks has several).
    REQUIRE(define(vars, "4:0:0:74726163655f706964").ok());
    CHECK(vars.reading(4) == TraceStateVariables::Reading::ProcessId);
    CHECK(*vars.get(4, TraceStateVariables::Collecting{4242, 4200}) == 4200);
    CHECK(vars.value_reply(4) == "U");
    CHECK_FALSE(vars.set(4, 5));
}

TEST_CASE("tsv: QTDV from gdb 13, get/set, qTV, upload", "[trace][tsv]") {
    TraceStateVariables vars([] { return std::int64_t{42}; }, nullptr);
    for (const auto& p : gdb13::kQtdv1)
        REQUIRE(define(vars, p).ok());
    CHECK(*vars.get(1) == 42); // still the clock after gdb re-sent it
    CHECK(*vars.get(2) == 5);
    CHECK(*vars.get(3) == -3);
    CHECK(*vars.get(4) == 0);
    CHECK(vars.value_reply(3) == "Vfffffffffffffffd");
    CHECK(vars.value_reply(2) == "V5");

    CHECK(vars.set(2, 6));
    CHECK(vars.value_reply(2) == "V6");
    CHECK_FALSE(vars.set(9, 1));
    CHECK_FALSE(vars.get(9));

    // The upload carries initial values, as gdbserver's "2:5:0:76" did after $v changed; the
    // newest first, as gdbserver's list.
    CHECK(all_pieces(vars) ==
          std::vector<std::string>{"4:0:0:7a", "3:fffffffffffffffd:0:6e6567", "2:5:0:76",
                                   "1:0:1:74726163655f74696d657374616d70", "l"});
    vars.reset_values(); // QTStart
    CHECK(*vars.get(2) == 5);

    // Redefinition replaces; `-` form accepted too.
    REQUIRE(define(vars, "2:-10:0:76").ok());
    CHECK(*vars.get(2) == -16);

    // Upload pieces parse back as QTDV.
    TraceStateVariables again([] { return std::int64_t{42}; }, nullptr);
    auto pieces = all_pieces(vars);
    pieces.pop_back();
    for (const auto& p : pieces)
        REQUIRE(define(again, p).ok());
    CHECK(all_pieces(again) == all_pieces(vars));

    vars.clear(); // QTinit
    CHECK(all_pieces(vars) ==
          std::vector<std::string>{"1:0:1:74726163655f74696d657374616d70", "l"});
}

TEST_CASE("tsv: rejected QTDV", "[trace][tsv]") {
    TraceStateVariables vars(nullptr, nullptr);
    for (std::string_view s :
         {"", "2", "2:5:0", "2:5:0:76:", "0:5:0:76", "100000000:5:0:76", "2:x:0:76",
          "2:10000000000000000:0:76", "2:5:2:76", "2:5::76", "2:5:0:7", "2:5:0:zz"}) {
        INFO('"' << s << '"');
        check_rejected(define(vars, s), ErrorCode::BadPacket);
    }
    CHECK_FALSE(vars.contains(2));
    CHECK(*vars.get(1) == 0); // no clock given
}

TEST_CASE("tsv: qTV reply for a value from a trace frame", "[trace][tsv]") {
    CHECK(format_tsv_value(std::nullopt) == "U");
    CHECK(format_tsv_value(0) == "V0");
    CHECK(format_tsv_value(-1) == "Vffffffffffffffff");
    CHECK(format_tsv_value(0x7) == "V7");
}
