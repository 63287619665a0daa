#include "trace/tracepoint_codec.hpp"
#include "gdb13_captures.hpp"
#include "test_support.hpp"

using namespace tpagent;
using namespace tpagent::trace;
using namespace trace_test;

namespace {

ActionString only(const Result<ActionString>& r) {
    REQUIRE(r.ok());
    return *r;
}

} // namespace

TEST_CASE("header: every field as gdb 13 sends it", "[trace][codec]") {
    auto h = parse_tracepoint_header("1:0000555555555144:E:2:0-", kRegisterCount);
    REQUIRE(h.ok());
    CHECK(h->more);
    CHECK(h->definition.key == TracepointKey{1, 0x555555555144});
    CHECK(h->definition.enabled);
    CHECK(h->definition.step_count == 2);
    CHECK(h->definition.pass_count == 0);
    CHECK(h->definition.kind == TracepointKind::Trap);
    CHECK_FALSE(h->definition.condition);

    h = parse_tracepoint_header("3:00005555555551b8:D:0:0", kRegisterCount);
    REQUIRE(h.ok());
    CHECK_FALSE(h->more);
    CHECK_FALSE(h->definition.enabled);

    // Condition "v > 0 && glob % 3 == 1", length written with minimal digits.
    h = parse_tracepoint_header(gdb13::kQtdp1[6], kRegisterCount);
    REQUIRE(h.ok());
    CHECK(h->more);
    CHECK(h->definition.pass_count == 3);
    REQUIRE(h->definition.condition);
    CHECK(h->definition.condition->bytes.size() == 0x3a);
    CHECK(h->definition.condition->bytes.front() == 0x26);
    CHECK(h->definition.condition->program.insns().size() > 0);

    SECTION("fast and static flags, upper-case hex") {
        h = parse_tracepoint_header("A:0000000000401000:E:0:1F:F5:X3,220127", kRegisterCount);
        REQUIRE(h.ok());
        CHECK(h->definition.key.number == 10);
        CHECK(h->definition.pass_count == 0x1f);
        CHECK(h->definition.kind == TracepointKind::Fast);
        CHECK(h->definition.fast_insn_length == 5);
        REQUIRE(h->definition.condition);
        CHECK(h->definition.condition->bytes == Bytes{0x22, 0x01, 0x27});

        h = parse_tracepoint_header("4:401000:E:0:0:S", kRegisterCount);
        REQUIRE(h.ok());
        CHECK(h->definition.kind == TracepointKind::Static);
    }
}

TEST_CASE("header: a trace file's fast tracepoint may have length 0", "[trace][codec]") {
    // gdb's tsave writes `F0`: it does not keep the length of an uploaded tracepoint. QTDP
    // still needs a real length (gdb always sends one).
    auto h = parse_tracepoint_header("3:401131:E:0:0:F0", kRegisterCount, HeaderSource::TraceFile);
    REQUIRE(h.ok());
    CHECK(h->definition.kind == TracepointKind::Fast);
    CHECK(h->definition.fast_insn_length == 0);
    CHECK(format_header(h->definition) == "3:401131:E:0:0:F0");
    h = parse_tracepoint_header("3:401131:E:0:0:F6", kRegisterCount, HeaderSource::TraceFile);
    REQUIRE(h.ok());
    CHECK(h->definition.fast_insn_length == 6);
    check_rejected(parse_tracepoint_header("3:401131:E:0:0:F0", kRegisterCount),
                   ErrorCode::BadTracepoint);
    check_rejected(
        parse_tracepoint_header("3:401131:E:0:0:F", kRegisterCount, HeaderSource::TraceFile),
        ErrorCode::BadTracepoint);
    check_rejected(
        parse_tracepoint_header("3:401131:E:0:0:F10000", kRegisterCount, HeaderSource::TraceFile),
        ErrorCode::BadTracepoint);
}

TEST_CASE("header: rejected", "[trace][codec]") {
    for (std::string_view s : {"",
                               "1",
                               "1:1000:E:0",
                               "1:1000:Y:0:0",
                               "1:1000:e:0:0",
                               "0:1000:E:0:0",
                               "10000:1000:E:0:0",
                               "g:1000:E:0:0",
                               "1:10g0:E:0:0",
                               "1:1000:E:x:0",
                               "1:1000:E:0:",
                               "1:1000:E:0:0:",
                               "1:1000:E:0:0:Q",
                               "1:1000:E:0:0:F",
                               "1:1000:E:0:0:F0",
                               "1:1000:E:0:0:F5:S",
                               "1:1000:E:0:0:Sx",
                               "1:1000:E:0:0:X2",
                               "1:1000:E:0:0:X2,22",
                               "1:1000:E:0:0:X3,220127ff",
                               "1:1000:E:0:0:X1,2g",
                               "1:1000:E:0:0:X3,220127:X3,220127",
                               "1:1000:E:0:0--",
                               "1:10000000000000000:E:0:0"}) {
        INFO('"' << s << '"');
        check_rejected(parse_tracepoint_header(s, kRegisterCount), ErrorCode::BadTracepoint);
    }
    // Bytecode that does not validate: no `end`; register beyond the count.
    check_rejected(parse_tracepoint_header("1:1000:E:0:0:X1,22", kRegisterCount),
                   ErrorCode::BadBytecode);
    check_rejected(parse_tracepoint_header("1:1000:E:0:0:X4,2600a027", kRegisterCount),
                   ErrorCode::BadBytecode);
    // A number a frame cannot record: the reason, in decimal as gdb numbers (65535 is the last).
    CHECK(parse_tracepoint_header("ffff:1000:E:0:0", kRegisterCount));
    auto above = parse_tracepoint_header("10000:1000:E:0:0", kRegisterCount);
    REQUIRE(!above);
    CHECK(above.error().text == "tracepoint 65536 is numbered above 65535, the most a trace frame "
                                "can record (a new gdb session numbers from 1 again)");
}

TEST_CASE("actions: R masks of any length", "[trace][codec]") {
    const auto all =
        only(parse_action_string("R07ffffffffffffffffffffffffffffffffffffff", kRegisterCount));
    REQUIRE(all.actions.size() == 1);
    const auto& mask = std::get<RegisterMask>(all.actions[0]);
    CHECK(mask.bytes.size() == 20);
    CHECK(mask.test(0));
    CHECK(mask.test(154));
    CHECK_FALSE(mask.test(155));
    CHECK_FALSE(mask.test(1000));

    // $rip and local's base register (rbp = 6): 0x010040 = bits 6 and 16.
    const auto step =
        std::get<RegisterMask>(only(parse_action_string("R010040", kRegisterCount)).actions[0]);
    CHECK(step.bytes == Bytes{0x40, 0x00, 0x01});
    CHECK(step.test(6));
    CHECK(step.test(16));
    CHECK_FALSE(step.test(0));

    // Odd digit counts, leading zeros and case do not matter.
    CHECK(
        std::get<RegisterMask>(only(parse_action_string("R1", kRegisterCount)).actions[0]).bytes ==
        Bytes{1});
    CHECK(std::get<RegisterMask>(only(parse_action_string("R00fF", kRegisterCount)).actions[0])
              .bytes == Bytes{0xff});
    CHECK(std::get<RegisterMask>(only(parse_action_string("R0", kRegisterCount)).actions[0])
              .bytes.empty());
    CHECK(format_action_string(only(parse_action_string("R0000000000000010040", kRegisterCount))) ==
          "R010040");
}

TEST_CASE("actions: M ranges", "[trace][codec]") {
    const auto a = only(parse_action_string("M-1,555555558080,190", kRegisterCount));
    REQUIRE(a.actions.size() == 1);
    auto m = std::get<MemoryRange>(a.actions[0]);
    CHECK(m.absolute());
    CHECK(m.offset == 0x555555558080);
    CHECK(m.length == 0x190);

    // Register based, upper case, negative offset in either spelling.
    m = std::get<MemoryRange>(
        only(parse_action_string("M6,FFFFFFFFFFFFFFEC,4", kRegisterCount)).actions[0]);
    CHECK(m.base_register == 6);
    CHECK(m.offset == static_cast<std::uint64_t>(-20));
    CHECK(m.length == 4);
    m = std::get<MemoryRange>(only(parse_action_string("M7,-14,4", kRegisterCount)).actions[0]);
    CHECK(m.base_register == 7);
    CHECK(m.offset == static_cast<std::uint64_t>(-20));
    CHECK(format_action_string(only(parse_action_string("M7,-14,4", kRegisterCount))) ==
          "M7,ffffffffffffffec,4");

    for (std::string_view s : {"M", "M-1", "M-1,10", "M-1,10,", "M,10,4", "M-2,10,4", "Mg,10,4",
                               "M-1,1g,4", "M-1,10,100000000", "Ma0,10,4"}) {
        INFO('"' << s << '"');
        check_rejected(parse_action_string(s, kRegisterCount), ErrorCode::BadTracepoint);
    }
}

TEST_CASE("actions: concatenated M and X, L", "[trace][codec]") {
    // `collect x, *p, glob, arr[2]@4` as one gdb packet.
    std::string_view text = gdb13::kQtdp1[2];
    text = text.substr(text.rfind(':') + 1);
    text.remove_suffix(1); // trailing '-'
    const auto a = only(parse_action_string(text, kRegisterCount));
    REQUIRE(a.actions.size() == 4);
    CHECK(std::get<MemoryRange>(a.actions[0]).length == 4);
    CHECK(std::get<Expression>(a.actions[1]).bytes.size() == 0xf);
    CHECK(std::get<Expression>(a.actions[2]).bytes.size() == 0x12);
    const auto& x3 = std::get<Expression>(a.actions[3]);
    CHECK(x3.bytes.size() == 0x15);
    CHECK(x3.program.collects());
    CHECK(format_action_string(a) == "M-1,555555558020,4Xf,26000622100222dc16080222040c27"
                                     "X12,26000622100222d01608020d081a22040c27"
                                     "X15,2500005555555580802202220404022a4022100c27");

    const auto l = only(parse_action_string("LM-1,10,4L", kRegisterCount));
    REQUIRE(l.actions.size() == 3);
    CHECK(std::holds_alternative<StaticData>(l.actions[0]));
    CHECK(std::holds_alternative<MemoryRange>(l.actions[1]));
    CHECK(std::holds_alternative<StaticData>(l.actions[2]));
    CHECK(format_action_string(l) == "LM-1,10,4L");

    // A register mask may be followed directly by another action.
    const auto rm = only(parse_action_string("R03M0,8,10X3,220127", kRegisterCount));
    REQUIRE(rm.actions.size() == 3);
    CHECK(std::get<MemoryRange>(rm.actions[1]).base_register == 0);
}

TEST_CASE("actions: rejected", "[trace][codec]") {
    for (std::string_view s : {"", "R", "Q", "r01", "X", "X2", "X2,", "X2,22", "X0000000F,2600",
                               "X1,2g27", "M-1,10,4Y", "R01 ", "SR01"}) {
        INFO('"' << s << '"');
        check_rejected(parse_action_string(s, kRegisterCount), ErrorCode::BadTracepoint);
    }
    // Validator failures: stack underflow; reg 0xa0 >= register count.
    check_rejected(parse_action_string("X2,0227", kRegisterCount), ErrorCode::BadBytecode);
    check_rejected(parse_action_string("X4,2600a027", kRegisterCount), ErrorCode::BadBytecode);
    auto r = parse_action_string("M-1,10,4X2,0227", kRegisterCount);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().text.find("X action at 8") != std::string::npos);
}

TEST_CASE("action packets", "[trace][codec]") {
    auto p = parse_action_packet(gdb13::kQtdp1[4], kRegisterCount); // "-1:...:SR010040-"
    REQUIRE(p.ok());
    CHECK(p->key == TracepointKey{1, 0x555555555144});
    CHECK(p->starts_stepping);
    CHECK(p->more);
    CHECK(std::holds_alternative<RegisterMask>(p->actions.actions.at(0)));

    p = parse_action_packet(gdb13::kQtdp1[5], kRegisterCount);
    REQUIRE(p.ok());
    CHECK_FALSE(p->starts_stepping);
    CHECK_FALSE(p->more);

    for (std::string_view s : {"", "1:1000:R01", "-1:1000", "-1:1000:", "-1:1000:S", "-1:1000:-",
                               "-0:1000:R01", "-1:zz:R01", "-1:1000:R01:"}) {
        INFO('"' << s << '"');
        CHECK_FALSE(parse_action_packet(s, kRegisterCount).ok());
    }
}

TEST_CASE("QTDP packets are told apart before they are parsed", "[trace][codec]") {
    auto header = parse_tracepoint_packet(gdb13::kQtdp1[0], kRegisterCount);
    const auto* h = std::get_if<Result<TracepointHeader>>(&header);
    REQUIRE(h);
    REQUIRE(h->ok());
    CHECK((*h)->definition.key == TracepointKey{1, 0x555555555144});

    auto actions = parse_tracepoint_packet(gdb13::kQtdp1[4], kRegisterCount);
    const auto* a = std::get_if<Result<ActionPacket>>(&actions);
    REQUIRE(a);
    REQUIRE(a->ok());
    CHECK((*a)->starts_stepping);

    // A packet that fails keeps its kind and its parser's error.
    auto bad_header = parse_tracepoint_packet("1:1000:Q:0:0", kRegisterCount);
    h = std::get_if<Result<TracepointHeader>>(&bad_header);
    REQUIRE(h);
    check_rejected(*h, ErrorCode::BadTracepoint);
    auto bad_actions = parse_tracepoint_packet("-1:1000:X2,0227", kRegisterCount);
    a = std::get_if<Result<ActionPacket>>(&bad_actions);
    REQUIRE(a);
    check_rejected(*a, ErrorCode::BadBytecode);

    // Nothing at all is of neither kind: refused as a header without its fields.
    auto empty = parse_tracepoint_packet("", kRegisterCount);
    const auto* e = std::get_if<Error>(&empty);
    REQUIRE(e);
    CHECK(e->code == ErrorCode::BadTracepoint);
    CHECK(e->text == parse_tracepoint_header("", kRegisterCount).error().text);
}

TEST_CASE("variable definitions", "[trace][codec]") {
    auto v = parse_variable_definition("3:fffffffffffffffd:0:6e6567");
    REQUIRE(v.ok());
    CHECK(v->number == 3);
    CHECK(v->initial == -3);
    CHECK_FALSE(v->builtin);
    CHECK(v->name == "neg");
    v = parse_variable_definition("1:0:1:74726163655f74696d657374616d70");
    REQUIRE(v.ok());
    CHECK(v->builtin);
    CHECK(v->name == "trace_timestamp");
    CHECK(parse_variable_definition("ffffffff:-10:0:")->initial == -16);
}

TEST_CASE("sources", "[trace][codec]") {
    auto s = parse_source_packet(gdb13::kQtdpsrc1[1]);
    REQUIRE(s.ok());
    CHECK(s->key == TracepointKey{1, 0x555555555144}); // unpadded address here
    CHECK(s->source.type == "cmd");
    CHECK(s->source.start == 0);
    CHECK(s->source.length == 0x27);
    CHECK(s->source.text == "collect $regs, x, *p, glob, arr[2]@4, s");
    CHECK(format_source(s->source) == std::string_view(gdb13::kQtdpsrc1[1]).substr(15));

    auto cond = parse_source_packet(gdb13::kQtdpsrc1[8]);
    REQUIRE(cond.ok());
    CHECK(cond->source.type == "cond");
    CHECK(cond->source.text == "v > 0 && glob % 3 == 1");

    // A piece of a longer string.
    auto part = parse_source_packet("1:1000:cmd:3:8:6162");
    REQUIRE(part.ok());
    CHECK(part->source.start == 3);
    CHECK(part->source.text == "ab");

    for (std::string_view s :
         {"", "1:1000:at:0:4", "1:1000:at:0:4:776f726b:", "1:1000::0:4:776f726b",
          "1:1000:at:0:4:776f726", "1:1000:at:0:3:776f726b",
          "1:1000:at:5:4:", "1:1000:at:x:4:776f726b", "0:1000:at:0:4:776f726b",
          // The type goes back to gdb unencoded (qTfP's Z lines): a word, nothing that frames.
          "1:1000:#on:0:4:776f726b", "1:1000:a$t:0:4:776f726b", "1:1000:AT:0:4:776f726b"}) {
        INFO('"' << s << '"');
        check_rejected(parse_source_packet(s), ErrorCode::BadTracepoint);
    }
}

TEST_CASE("keys", "[trace][codec]") {
    CHECK(*parse_tracepoint_key("3:5555555551B8") == TracepointKey{3, 0x5555555551b8});
    CHECK(*parse_tracepoint_key("3:00005555555551b8") == TracepointKey{3, 0x5555555551b8});
    CHECK(format_key({0x1f, 0x401000}) == "1f:401000");
    for (std::string_view s : {"", "3", "3:", ":1000", "3:1000:", "0:1000", "3:x"})
        CHECK_FALSE(parse_tracepoint_key(s).ok());
}

TEST_CASE("upload pieces of one tracepoint match gdbserver's", "[trace][codec]") {
    // Parse gdbserver's upload of tracepoint 3 back and print it again.
    auto header = parse_tracepoint_header(gdb13::kUpload2[18].substr(1), kRegisterCount);
    REQUIRE(header.ok());
    Tracepoint tp{header->definition, {}, {}};
    auto actions = parse_action_string("M-1,555555558080,190", kRegisterCount);
    tp.definition.actions.push_back(*actions);
    for (std::size_t i = 20; i <= 22; ++i)
        tp.sources.push_back(parse_source_packet(gdb13::kUpload2[i].substr(1))->source);
    tp.counters = {3, 0x1234};
    std::vector<std::string> expected(gdb13::kUpload2.begin() + 18, gdb13::kUpload2.begin() + 23);
    expected.push_back("V3:5555555551b1:3:1234");
    CHECK(upload_pieces(tp) == expected);
    CHECK(format_counters(tp.counters) == "V3:1234");
}
