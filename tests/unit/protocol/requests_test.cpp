#include "protocol/framing.hpp"
#include "protocol/packet.hpp"
#include "protocol/requests.hpp"
#include <catch2/catch.hpp>

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

using namespace tpagent;
using namespace tpagent::protocol;
using Bytes = std::vector<std::uint8_t>;

namespace {
template <typename T>
void check_rejected(const Result<T>& r, ErrorCode code = ErrorCode::BadPacket) {
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == code);
    CHECK_FALSE(r.error().text.empty());
}

// `parse` refuses every one of `texts` with `code`.
template <typename Parse>
void check_all_rejected(Parse parse, std::initializer_list<std::string_view> texts,
                        ErrorCode code = ErrorCode::BadPacket) {
    for (std::string_view s : texts) {
        INFO('"' << s << '"');
        check_rejected(parse(s), code);
    }
}
} // namespace

TEST_CASE("parse_memory_range", "[requests]") {
    auto r = parse_memory_range("1234,4");
    REQUIRE(r.ok());
    CHECK(r->addr == 0x1234);
    CHECK(r->length == 4);

    CHECK(parse_memory_range("ffffffffffffffff,1")->addr == 0xffffffffffffffff);
    CHECK(parse_memory_range("7ffff7dd1000,0")->length == 0);
    CHECK(parse_memory_range("0000000000001000,10")->addr == 0x1000);

    SECTION("kMaxTransfer is the largest length allowed") {
        CHECK(parse_memory_range("0,100000")->length == kMaxTransfer);
        check_rejected(parse_memory_range("0,100001"), ErrorCode::TooLarge);
        check_rejected(parse_memory_range("0,ffffffffffffffff"), ErrorCode::TooLarge);
    }
    SECTION("malformed") {
        check_all_rejected(parse_memory_range,
                           {"", "1234", "1234,", ",4", "1234;4", "1234,4,5", "g,4", "1,g",
                            "10000000000000000,1", "-1,4", "1234,4:"});
    }
}

TEST_CASE("parse_memory_write_hex (M)", "[requests]") {
    auto w = parse_memory_write_hex("1000,2:abCD");
    REQUIRE(w.ok());
    CHECK(w->addr == 0x1000);
    CHECK(w->bytes == Bytes{0xab, 0xcd});

    CHECK(parse_memory_write_hex("1000,0:")->bytes.empty());

    // Fewer or more bytes than declared, an odd digit count, not hex, no ':', no length.
    check_all_rejected(parse_memory_write_hex, {"1000,3:abcd", "1000,1:abcd", "1000,2:abc",
                                                "1000,2:abzz", "1000,2abcd", "1000:abcd", ""});
    check_rejected(parse_memory_write_hex("1000,200000:"), ErrorCode::TooLarge);
}

TEST_CASE("parse_memory_write_binary (X)", "[requests]") {
    auto w = parse_memory_write_binary("1000,3:a:b");
    REQUIRE(w.ok());
    CHECK(w->addr == 0x1000);
    CHECK(w->bytes == Bytes{'a', ':', 'b'});

    // gdb probes X support with a zero-length write.
    auto probe = parse_memory_write_binary("1000,0:");
    REQUIRE(probe.ok());
    CHECK(probe->bytes.empty());

    // Any byte is data, including NUL and the (already unescaped) reserved bytes.
    std::string args("0,6:\0#$}*\x03", 10);
    CHECK(parse_memory_write_binary(args)->bytes == Bytes{0x00, '#', '$', '}', '*', 0x03});

    // The length counts unescaped bytes: the decoded packet from the wire matches it.
    std::string wire = frame_packet("X2000,2:" + escape_binary(std::string_view("}*")));
    PacketDecoder d(4096);
    std::vector<FrameEvent> ev;
    d.feed(wire, ev);
    REQUIRE(ev.size() == 1);
    PacketView v = classify(ev[0].payload);
    REQUIRE(v.name == "X");
    CHECK(parse_memory_write_binary(v.args)->bytes == Bytes{'}', '*'});

    check_all_rejected(parse_memory_write_binary,
                       {"1000,2:abc", "1000,4:abc", "1000,2", "1000:ab"});
    check_rejected(parse_memory_write_binary("1000,100001:"), ErrorCode::TooLarge);
}

TEST_CASE("parse_breakpoint (Z/z)", "[requests]") {
    SECTION("type, address and kind") {
        const struct {
            std::string_view text;
            int type;
            std::uint64_t addr, kind;
        } accepted[] = {
            {"0,400000,1", 0, 0x400000, 1},
            {"2,601040,4", 2, 0x601040, 4},
            {"4,0,8", 4, 0, 8},
            {"0,400000,1;X3,220027", 0, 0x400000, 1},
            {"1,7fff0000,4;X3,220027;X2,2f00;cmds:0,X3,010203", 1, 0x7fff0000, 4},
            {"0,400000,1;", 0, 0x400000, 1},
        };
        for (const auto& a : accepted) {
            INFO('"' << a.text << '"');
            auto b = parse_breakpoint(a.text);
            REQUIRE(b.ok());
            CHECK(b->type == a.type);
            CHECK(b->addr == a.addr);
            CHECK(b->kind == a.kind);
        }
    }
    SECTION("conditions and commands, as gdb sends them (X entries back to back)") {
        auto b = parse_breakpoint("0,400000,1;X3,220027X2,2f00;cmds:1,X3,010203X1,27");
        REQUIRE(b.ok());
        using Bytes = std::vector<std::uint8_t>;
        CHECK(b->conditions == std::vector<Bytes>{{0x22, 0x00, 0x27}, {0x2f, 0x00}});
        CHECK(b->commands == std::vector<Bytes>{{0x01, 0x02, 0x03}, {0x27}});
        CHECK(b->persist);
        auto only_commands = parse_breakpoint("0,400000,1;cmds:0,X1,27");
        REQUIRE(only_commands.ok());
        CHECK(only_commands->conditions.empty());
        CHECK(only_commands->commands.size() == 1);
        CHECK_FALSE(only_commands->persist);
        auto plain = parse_breakpoint("0,400000,1");
        REQUIRE(plain.ok());
        CHECK(plain->conditions.empty());
        CHECK(plain->commands.empty());
    }
    SECTION("malformed") {
        check_all_rejected(parse_breakpoint,
                           {"", "0", "0,400000", "0,400000,1,2", "5,400000,1", "a,0,1", "0,zz,1",
                            "0,400000,", ",400000,1", "0,,1", ";X3,220027", "0,400000;1",
                            // options: short or bad bytes, no X, a bad persist flag
                            "0,400000,1;X3,2200", "0,400000,1;X3,22002z", "0,400000,1;Y3,220027",
                            "0,400000,1;X,", "0,400000,1;X3", "0,400000,1;cmds:2,X1,27",
                            "0,400000,1;cmds:1X1,27", "0,400000,1;X1,27cmds:0,X1,27"});
        // An expression longer than any agent expression may be, whatever bytes follow.
        check_rejected(parse_breakpoint("0,400000,1;X2001,00"), ErrorCode::TooLarge);
    }
}

TEST_CASE("parse_thread_id", "[requests]") {
    auto check_id = [](std::string_view text, std::int64_t pid, std::int64_t tid) {
        INFO('"' << text << '"');
        auto id = parse_thread_id(text);
        REQUIRE(id.ok());
        CHECK(id->pid == pid);
        CHECK(id->tid == tid);
    };
    check_id("p1.2", 1, 2);
    check_id("p1.-1", 1, ThreadId::kAll);
    check_id("p1", 1, ThreadId::kAll); // "p<pid>" means every thread of pid
    check_id("p-1", ThreadId::kAll, ThreadId::kAll);
    check_id("p-1.-1", ThreadId::kAll, ThreadId::kAll);
    check_id("p3039.303a", 0x3039, 0x303a);
    check_id("p1.0", 1, ThreadId::kAny);
    check_id("-1", ThreadId::kAny, ThreadId::kAll);
    check_id("0", ThreadId::kAny, ThreadId::kAny);
    check_id("1a2b", ThreadId::kAny, 0x1a2b);
    check_id("7fffffff", ThreadId::kAny, 0x7fffffff);

    check_all_rejected(parse_thread_id,
                       {"", "p", "p.", "p1.", "p.1", "px.1", "p1.x", "80000000", "p80000000.1",
                        "-2", "--1", "q1.2", "1.2", "p1.2.3", "P1.2"});
}

TEST_CASE("format_thread_id", "[requests]") {
    CHECK(format_thread_id(1, 2, true) == "p1.2");
    CHECK(format_thread_id(0x3039, 0x303a, true) == "p3039.303a");
    CHECK(format_thread_id(1, ThreadId::kAll, true) == "p1.-1");
    CHECK(format_thread_id(ThreadId::kAll, ThreadId::kAll, true) == "p-1.-1");
    CHECK(format_thread_id(1, 0x1a2b, false) == "1a2b");
    CHECK(format_thread_id(1, ThreadId::kAll, false) == "-1");
    CHECK(format_thread_id(0, 0, false) == "0");

    for (std::int64_t pid : {std::int64_t{1}, std::int64_t{0x7fffffff}, ThreadId::kAll})
        for (std::int64_t tid : {std::int64_t{0}, std::int64_t{2}, ThreadId::kAll}) {
            auto id = parse_thread_id(format_thread_id(pid, tid, true));
            REQUIRE(id.ok());
            CHECK(id->pid == pid);
            CHECK(id->tid == tid);
        }
}

TEST_CASE("parse_vcont", "[requests]") {
    using K = ResumeAction::Kind;

    SECTION("single action, no thread") {
        auto a = parse_vcont(";c");
        REQUIRE(a.ok());
        REQUIRE(a->size() == 1);
        CHECK((*a)[0].kind == K::Continue);
        CHECK((*a)[0].signal == 0);
        CHECK_FALSE((*a)[0].thread.has_value());
    }
    SECTION("actions with threads and signals") {
        auto a = parse_vcont(";s:p1.2;C05:p1.3;S0b:4;t:p1.-1;c");
        REQUIRE(a.ok());
        REQUIRE(a->size() == 5);
        CHECK((*a)[0].kind == K::Step);
        REQUIRE((*a)[0].thread.has_value());
        CHECK((*a)[0].thread->pid == 1);
        CHECK((*a)[0].thread->tid == 2);
        CHECK((*a)[1].kind == K::Continue);
        CHECK((*a)[1].signal == 5);
        CHECK((*a)[1].thread->tid == 3);
        CHECK((*a)[2].kind == K::Step);
        CHECK((*a)[2].signal == 0x0b);
        CHECK((*a)[2].thread->pid == ThreadId::kAny);
        CHECK((*a)[2].thread->tid == 4);
        CHECK((*a)[3].kind == K::Stop);
        CHECK((*a)[3].thread->tid == ThreadId::kAll);
        CHECK((*a)[4].kind == K::Continue);
        CHECK_FALSE((*a)[4].thread.has_value());
    }
    SECTION("the args classify hands to the vCont handler parse") {
        // classify strips the ';' after the name; the parser must take its output as is.
        PacketView v = classify("vCont;c:p1.2");
        REQUIRE(v.name == "vCont");
        auto a = parse_vcont(v.args);
        REQUIRE(a.ok());
        REQUIRE(a->size() == 1);
        CHECK((*a)[0].kind == K::Continue);
        CHECK((*a)[0].thread->pid == 1);
        CHECK((*a)[0].thread->tid == 2);

        auto b = parse_vcont(classify("vCont;s:p1.2;c").args);
        REQUIRE(b.ok());
        CHECK(b->size() == 2);
    }
    SECTION("malformed") {
        check_all_rejected(parse_vcont,
                           {"", ";", ";c;", ";;c", ";cc", ";c1", ";sx:p1.2", ";t0", ";C", ";C100",
                            ";Cxx", ";S", ";c:p1.", ";c:zz", ";c:p1.2:3"});
    }
    SECTION("range stepping") {
        auto r = parse_vcont(";r1000,2000:p1.2;c");
        REQUIRE(r.ok());
        CHECK((*r)[0].kind == ResumeAction::Kind::Step);
        CHECK((*r)[0].range_start == 0x1000);
        CHECK((*r)[0].range_end == 0x2000);
        CHECK((*r)[1].range_end == 0);
        check_all_rejected(parse_vcont, {";r1000", ";r1000,", ";r,2", ";rx,2", ";r1,2,3"});
    }
    SECTION("unknown actions are unsupported, not malformed") {
        check_all_rejected(parse_vcont, {";x", ";c;y1,2"}, ErrorCode::Unsupported);
    }
}

TEST_CASE("parse_legacy_resume (c/s/C/S)", "[requests]") {
    auto plain = parse_legacy_resume("", false);
    REQUIRE(plain.ok());
    CHECK(plain->signal == 0);
    CHECK_FALSE(plain->addr.has_value());

    CHECK(*parse_legacy_resume("400000", false)->addr == 0x400000);

    auto sig = parse_legacy_resume("05", true);
    REQUIRE(sig.ok());
    CHECK(sig->signal == 5);
    CHECK_FALSE(sig->addr.has_value());

    auto both = parse_legacy_resume("0b;400000", true);
    REQUIRE(both.ok());
    CHECK(both->signal == 0x0b);
    CHECK(*both->addr == 0x400000);

    CHECK_FALSE(parse_legacy_resume("05;", true)->addr.has_value());

    check_all_rejected([](std::string_view s) { return parse_legacy_resume(s, true); },
                       {"", "100", "zz", "05;zz"});
    check_all_rejected([](std::string_view s) { return parse_legacy_resume(s, false); },
                       {"zz", "05;400000"});
}

TEST_CASE("parse_xfer_read", "[requests]") {
    auto x = parse_xfer_read(classify("qXfer:features:read:target.xml:0,fff").args);
    REQUIRE(x.ok());
    CHECK(x->annex == "target.xml");
    CHECK(x->offset == 0);
    CHECK(x->length == 0xfff);

    auto auxv = parse_xfer_read(classify("qXfer:auxv:read::1000,800").args);
    REQUIRE(auxv.ok());
    CHECK(auxv->annex.empty());
    CHECK(auxv->offset == 0x1000);
    CHECK(auxv->length == 0x800);

    // An annex with ':' in it: the offset follows the last one.
    CHECK(parse_xfer_read("a:b:10,20")->annex == "a:b");

    check_all_rejected(parse_xfer_read,
                       {"target.xml", "target.xml:0", "target.xml:0,", "target.xml:,10"});
    check_rejected(parse_xfer_read("target.xml:0,100001"), ErrorCode::TooLarge);
}

TEST_CASE("parse_xfer_write", "[requests]") {
    const std::string packet = std::string("qXfer:siginfo:write::10:a:\0}", 28);
    auto x = parse_xfer_write(classify(packet).args);
    REQUIRE(x.ok());
    CHECK(x->annex.empty());
    CHECK(x->offset == 0x10);
    CHECK(x->data == std::string_view("a:\0}", 4)); // binary, ':' included
    auto empty = parse_xfer_write("annex:0:");
    REQUIRE(empty.ok());
    CHECK(empty->annex == "annex");
    CHECK(empty->data.empty());
    check_all_rejected(parse_xfer_write, {"", "annex", "annex:0", ":x:data", "::data"});
}

TEST_CASE("xfer_reply chunks with m/l and escapes", "[requests]") {
    const std::string data = "abcdef";
    CHECK(xfer_reply(data, 0, 3) == "mabc");
    CHECK(xfer_reply(data, 3, 3) == "ldef");
    CHECK(xfer_reply(data, 3, 100) == "ldef");
    CHECK(xfer_reply(data, 0, 6) == "labcdef");
    CHECK(xfer_reply(data, 5, 1) == "lf");
    CHECK(xfer_reply(data, 6, 3) == "l");
    CHECK(xfer_reply(data, 1000, 3) == "l");
    CHECK(xfer_reply(data, 0xffffffffffffffff, 0xffffffffffffffff) == "l");
    CHECK(xfer_reply(data, 2, 0xffffffffffffffff) == "lcdef");
    CHECK(xfer_reply("", 0, 10) == "l");

    SECTION("a zero-length request never gets an 'm' without data") {
        // gdb rejects an 'm' reply that carries no data.
        CHECK(xfer_reply(data, 0, 0) != "m");
        CHECK(xfer_reply(data, 3, 0) != "m");
    }
    SECTION("reserved bytes are escaped; offsets count raw bytes") {
        const std::string bin = "a#b$c}d*";
        CHECK(xfer_reply(bin, 0, 2) == std::string("ma}\x03", 4));
        CHECK(xfer_reply(bin, 2, 2) == std::string("mb}\x04", 4));
        CHECK(xfer_reply(bin, 4, 4) == "lc}]d}\n");
        CHECK(xfer_reply(bin, 0, 8) == std::string("la}\x03"
                                                   "b}\x04"
                                                   "c}]d}\n",
                                                   13));
    }
    SECTION("reading in chunks reassembles the object") {
        std::string object;
        for (int i = 0; i < 1000; ++i)
            object.push_back(static_cast<char>(i * 7));
        for (std::uint64_t chunk : {1, 7, 64, 999, 1000, 4096}) {
            std::string got;
            std::uint64_t off = 0;
            for (;;) {
                std::string reply = xfer_reply(object, off, chunk);
                REQUIRE_FALSE(reply.empty());
                REQUIRE((reply[0] == 'm' || reply[0] == 'l'));
                // Decode it the way gdb does: unframe, unescape.
                PacketDecoder d(1 << 16);
                std::vector<FrameEvent> ev;
                d.feed(frame_packet(reply), ev);
                REQUIRE(ev.size() == 1);
                REQUIRE(ev[0].kind == FrameEvent::Kind::Packet);
                std::string part = ev[0].payload.substr(1);
                CHECK(part.size() <= chunk);
                got += part;
                off += part.size();
                if (reply[0] == 'l') break;
                REQUIRE_FALSE(part.empty());
            }
            INFO("chunk " << chunk);
            CHECK(got == object);
        }
    }
}

TEST_CASE("parse_readonly_ranges", "[requests]") {
    auto r = parse_readonly_ranges("1000,2000:3000,3000");
    REQUIRE(r.ok());
    CHECK(*r == std::vector<AddressRange>{{0x1000, 0x2000}, {0x3000, 0x3000}});
    // Empty pieces are skipped; no range at all is none.
    CHECK(parse_readonly_ranges("")->empty());
    CHECK(parse_readonly_ranges(":10,20:")->size() == 1);
    check_all_rejected(parse_readonly_ranges,
                       {"10", "10,20,30", "x,20", "10,", "20,10", "10,20:5"});
    CHECK(parse_readonly_ranges("10").error().text == "expected start,end");
    CHECK(parse_readonly_ranges("20,10").error().text == "bad range");
}

TEST_CASE("parse_trace_notes", "[requests]") {
    // "alice", "lunch", "done"
    auto n = parse_trace_notes("user:616c696365;notes:6c756e6368;tstop:646f6e65;");
    REQUIRE(n.ok());
    CHECK(n->user == "alice");
    CHECK(n->notes == "lunch");
    CHECK(n->tstop == "done");
    auto only = parse_trace_notes("tstop:;notes:41");
    REQUIRE(only.ok());
    CHECK_FALSE(only->user);
    CHECK(only->notes == "A");
    CHECK(only->tstop == "");
    CHECK(parse_trace_notes("notes:41;notes:42")->notes == "B");
    CHECK_FALSE(parse_trace_notes("")->user);
    check_all_rejected(parse_trace_notes, {"user", "user:4", "user:zz", "owner:41"});
    CHECK(parse_trace_notes("user").error().text == "expected name:hex");
    CHECK(parse_trace_notes("owner:41").error().text == "unknown note");
}
