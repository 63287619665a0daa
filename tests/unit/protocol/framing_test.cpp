#include "protocol/framing.hpp"
#include "protocol/hex.hpp"
#include "tests/unit/protocol/gdb_reading.hpp"
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

using namespace tpagent::protocol;
using Kind = FrameEvent::Kind;
using tpagent::protocol::testing::unescape;

namespace {

std::vector<FrameEvent> decode(std::string_view bytes, std::size_t max_payload = 4096) {
    PacketDecoder d(max_payload);
    std::vector<FrameEvent> out;
    d.feed(bytes, out);
    return out;
}

std::string bytes_str(std::initializer_list<int> bytes) {
    std::string s;
    for (int b : bytes)
        s.push_back(static_cast<char>(b));
    return s;
}

// Comparable form of an event list, so a mismatch prints readably.
std::vector<std::pair<int, std::string>> flat(const std::vector<FrameEvent>& events) {
    std::vector<std::pair<int, std::string>> out;
    for (const auto& e : events)
        out.emplace_back(static_cast<int>(e.kind), e.payload);
    return out;
}

// The reader side of run-length encoding, as gdb applies it; fails the test on an encoding gdb
// would reject.
std::string rle_expand(std::string_view in) {
    auto out = testing::rle_expand(in);
    INFO("gdb rejects the run-length encoding " << in);
    REQUIRE(out);
    return *out;
}

// The two checksum digits for `data`, as frame_packet writes them.
std::string cs_hex(std::string_view data) {
    std::uint8_t cs = checksum(data);
    return to_hex(std::span(&cs, 1));
}

} // namespace

TEST_CASE("checksum is the modulo-256 sum of the data", "[framing]") {
    CHECK(checksum("") == 0);
    CHECK(checksum("OK") == 0x9a);
    CHECK(checksum("qC") == 0xb4);
    CHECK(checksum(bytes_str({0xff, 0xff})) == 0xfe); // wraps
}

TEST_CASE("frame_notification is a packet with % for $", "[framing]") {
    // RSP "Notification Packets": the %Stop example's checksum is the payload's, as for $.
    CHECK(frame_notification("Stop:T05") == "%Stop:T05#" + cs_hex("Stop:T05"));
    CHECK(frame_notification("") == "%#00");
}

TEST_CASE("frame_packet produces exact wire bytes", "[framing]") {
    CHECK(frame_packet("OK") == "$OK#9a");
    CHECK(frame_packet("") == "$#00");
    CHECK(frame_packet("E01") == "$E01#a6");
    CHECK(frame_packet("qC") == "$qC#b4");
    CHECK(frame_packet("T05thread:p1.1;") == "$T05thread:p1.1;#a6");
    // Checksum digits are lower case, two of them even when the high nibble is zero.
    CHECK(frame_packet(bytes_str({0x01})) == bytes_str({'$', 0x01, '#', '0', '1'}));
    CHECK(frame_packet(bytes_str({0xfe, 0xff})) == bytes_str({'$', 0xfe, 0xff, '#', 'f', 'd'}));
}

TEST_CASE("decoder: single packet, acks, nacks and interrupt", "[framing]") {
    auto ev = decode("$OK#9a");
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].kind == Kind::Packet);
    CHECK(ev[0].payload == "OK");

    CHECK(flat(decode("+")) == flat({{Kind::Ack, ""}}));
    CHECK(flat(decode("-")) == flat({{Kind::Nack, ""}}));
    CHECK(flat(decode("\x03")) == flat({{Kind::Interrupt, ""}}));
    CHECK(flat(decode("$#00")) == flat({{Kind::Packet, ""}}));
    CHECK(decode("").empty());
}

TEST_CASE("decoder: several packets, acks and 0x03 in one feed", "[framing]") {
    std::string stream = "+$OK#9a-\x03$qC#b4+" + frame_packet("m1234,4") + "\x03";
    auto ev = decode(stream);
    CHECK(flat(ev) == flat({{Kind::Ack, ""},
                            {Kind::Packet, "OK"},
                            {Kind::Nack, ""},
                            {Kind::Interrupt, ""},
                            {Kind::Packet, "qC"},
                            {Kind::Ack, ""},
                            {Kind::Packet, "m1234,4"},
                            {Kind::Interrupt, ""}}));
}

TEST_CASE("decoder: input split at every byte position decodes identically", "[framing]") {
    std::string stream = "+" + frame_packet("qSupported:multiprocess+;xmlRegisters=i386") + "-" +
                         "\x03" + frame_packet(escape_binary(std::string_view("X0,4:}#$*"))) +
                         "noise" + frame_packet("vCont;c:p1.2") + "$OK#00" + "+";
    const auto whole = flat(decode(stream));
    REQUIRE(whole.size() == 8);
    CHECK(whole[4].second == "X0,4:}#$*");
    CHECK(whole[6].first == static_cast<int>(Kind::BadChecksum));

    for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
        INFO("split at " << cut);
        PacketDecoder d(4096);
        std::vector<FrameEvent> out;
        d.feed(std::string_view(stream).substr(0, cut), out);
        d.feed(std::string_view(stream).substr(cut), out);
        CHECK(flat(out) == whole);
    }

    SECTION("one byte per feed") {
        PacketDecoder d(4096);
        std::vector<FrameEvent> out;
        for (char c : stream)
            d.feed(std::string_view(&c, 1), out);
        CHECK(flat(out) == whole);
    }

    SECTION("two cuts at every pair of positions") {
        for (std::size_t a = 0; a <= stream.size(); a += 3) {
            for (std::size_t b = a; b <= stream.size(); b += 5) {
                PacketDecoder d(4096);
                std::vector<FrameEvent> out;
                std::string_view s(stream);
                d.feed(s.substr(0, a), out);
                d.feed(s.substr(a, b - a), out);
                d.feed(s.substr(b), out);
                INFO("cuts at " << a << ", " << b);
                CHECK(flat(out) == whole);
            }
        }
    }
}

TEST_CASE("decoder: bad checksum", "[framing]") {
    SECTION("wrong digits") {
        CHECK(flat(decode("$OK#9b")) == flat({{Kind::BadChecksum, "OK"}}));
        CHECK(flat(decode("$OK#a9")) == flat({{Kind::BadChecksum, "OK"}}));
    }
    SECTION("non-hex digits") {
        CHECK(flat(decode("$OK#9g")) == flat({{Kind::BadChecksum, "OK"}}));
        CHECK(flat(decode("$OK#g9")) == flat({{Kind::BadChecksum, "OK"}}));
        CHECK(flat(decode("$OK#zz")) == flat({{Kind::BadChecksum, "OK"}}));
        CHECK(flat(decode("$OK#-+")) == flat({{Kind::BadChecksum, "OK"}}));
        // A non-hex first digit must not be rescued by a matching low nibble: 0x0a == 'x'<<4 | a
        // would be wrong, and so would treating the bad digit as zero.
        CHECK(flat(decode("$\x0a#xa")) == flat({{Kind::BadChecksum, "\x0a"}}));
    }
    SECTION("upper-case digits are accepted") {
        CHECK(flat(decode("$OK#9A")) == flat({{Kind::Packet, "OK"}}));
    }
    SECTION("the checksum covers the escaped bytes as sent") {
        std::string escaped = "}]"; // one '}' byte
        std::string good = "$" + escaped + "#" + cs_hex(escaped);
        CHECK(flat(decode(good)) == flat({{Kind::Packet, "}"}}));
        std::string bad = "$" + escaped + "#" + cs_hex("}");
        CHECK(flat(decode(bad)) == flat({{Kind::BadChecksum, "}"}}));
    }
    SECTION("the decoder recovers for the next packet") {
        CHECK(flat(decode("$OK#00$OK#9a")) ==
              flat({{Kind::BadChecksum, "OK"}, {Kind::Packet, "OK"}}));
        CHECK(flat(decode("$OK#zz+$OK#9a")) ==
              flat({{Kind::BadChecksum, "OK"}, {Kind::Ack, ""}, {Kind::Packet, "OK"}}));
    }
}

TEST_CASE("decoder: '}' escapes", "[framing]") {
    std::string raw = bytes_str({'a', '}', '#', '$', '*', 0x03, 'z'});
    std::string framed = frame_packet(escape_binary(raw));
    CHECK(framed.substr(0, 12) ==
          bytes_str({'$', 'a', '}', ']', '}', 0x03, '}', 0x04, '}', '\n', 0x03, 'z'}));
    CHECK(flat(decode(framed)) == flat({{Kind::Packet, raw}}));

    SECTION("split right after each escape character") {
        for (std::size_t cut = 0; cut < framed.size(); ++cut) {
            if (framed[cut] != '}') continue;
            INFO("split after '}' at " << cut);
            PacketDecoder d(4096);
            std::vector<FrameEvent> out;
            d.feed(std::string_view(framed).substr(0, cut + 1), out);
            CHECK(out.empty());
            d.feed(std::string_view(framed).substr(cut + 1), out);
            CHECK(flat(out) == flat({{Kind::Packet, raw}}));
        }
    }
    SECTION("an escaped '}' split from its escape") {
        std::string f = frame_packet("}]}]");
        PacketDecoder d(4096);
        std::vector<FrameEvent> out;
        d.feed(f.substr(0, 2), out); // "$}"
        d.feed(f.substr(2, 2), out); // "]}"
        d.feed(f.substr(4), out);    // "]#cs"
        CHECK(flat(out) == flat({{Kind::Packet, "}}"}}));
    }
    SECTION("0x03 inside a packet is data, not an interrupt") {
        std::string p = "X0,1:" + bytes_str({0x03});
        CHECK(flat(decode(frame_packet(p))) == flat({{Kind::Packet, p}}));
    }
    SECTION("acks inside a packet are data") {
        CHECK(flat(decode(frame_packet("+-+"))) == flat({{Kind::Packet, "+-+"}}));
    }
}

TEST_CASE("decoder: every byte value round-trips through escape_binary", "[framing]") {
    std::string all;
    for (int b = 0; b < 256; ++b)
        all.push_back(static_cast<char>(b));
    std::string payload = "X1000,100:" + escape_binary(all);
    auto ev = decode(frame_packet(payload));
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].kind == Kind::Packet);
    CHECK(ev[0].payload == "X1000,100:" + all);
}

TEST_CASE("decoder: oversize packets are dropped and the next one still decodes", "[framing]") {
    constexpr std::size_t kMax = 8;
    SECTION("exactly max_payload is accepted") {
        CHECK(flat(decode(frame_packet("12345678"), kMax)) == flat({{Kind::Packet, "12345678"}}));
    }
    SECTION("one byte over") {
        CHECK(flat(decode(frame_packet("123456789") + "$OK#9a", kMax)) ==
              flat({{Kind::Oversize, ""}, {Kind::Packet, "OK"}}));
    }
    SECTION("much longer, fed in pieces") {
        std::string stream = frame_packet(std::string(10000, 'a')) + "+" + frame_packet("qC");
        PacketDecoder d(kMax);
        std::vector<FrameEvent> out;
        for (std::size_t i = 0; i < stream.size(); i += 7)
            d.feed(std::string_view(stream).substr(i, 7), out);
        CHECK(flat(out) == flat({{Kind::Oversize, ""}, {Kind::Ack, ""}, {Kind::Packet, "qC"}}));
    }
    SECTION("the bound applies to unescaped data") {
        std::string eight_escaped = escape_binary(std::string_view("}}}}}}}}"));
        REQUIRE(eight_escaped.size() == 16);
        CHECK(flat(decode(frame_packet(eight_escaped), kMax)) ==
              flat({{Kind::Packet, "}}}}}}}}"}}));
        CHECK(flat(decode(frame_packet(eight_escaped + "}]"), kMax)) ==
              flat({{Kind::Oversize, ""}}));
    }
    SECTION("oversize wins over a bad checksum") {
        CHECK(flat(decode("$123456789#00$OK#9a", kMax)) ==
              flat({{Kind::Oversize, ""}, {Kind::Packet, "OK"}}));
    }
    SECTION("a '$' in an oversize packet starts a fresh one") {
        CHECK(flat(decode("$123456789abc$OK#9a", kMax)) == flat({{Kind::Packet, "OK"}}));
    }
    SECTION("max_payload is reported") {
        CHECK(PacketDecoder(kMax).max_payload() == kMax);
    }
}

TEST_CASE("decoder: a '$' inside a packet restarts it", "[framing]") {
    CHECK(flat(decode("$abc$OK#9a")) == flat({{Kind::Packet, "OK"}}));
    CHECK(flat(decode("$m1234$$OK#9a")) == flat({{Kind::Packet, "OK"}}));
    // The abandoned packet's pending escape and checksum do not leak into the new one.
    CHECK(flat(decode("$abc}$OK#9a")) == flat({{Kind::Packet, "OK"}}));
    PacketDecoder d(4096);
    std::vector<FrameEvent> out;
    d.feed("$qSupp", out);
    d.feed("$OK", out);
    d.feed("#9a", out);
    CHECK(flat(out) == flat({{Kind::Packet, "OK"}}));
}

TEST_CASE("decoder: garbage between packets is ignored", "[framing]") {
    std::string garbage = "xyz\r\n #00 9a}" + bytes_str({0x00, 0x7f, 0x80, 0xff});
    CHECK(flat(decode(garbage)).empty());
    CHECK(flat(decode(garbage + "$OK#9a" + garbage + "+" + garbage + "$qC#b4")) ==
          flat({{Kind::Packet, "OK"}, {Kind::Ack, ""}, {Kind::Packet, "qC"}}));
}

TEST_CASE("escape_binary escapes exactly the reserved bytes", "[framing]") {
    CHECK(escape_binary(std::string_view("#")) == bytes_str({'}', 0x03}));
    CHECK(escape_binary(std::string_view("$")) == bytes_str({'}', 0x04}));
    CHECK(escape_binary(std::string_view("}")) == "}]");
    CHECK(escape_binary(std::string_view("*")) == "}\n");
    CHECK(escape_binary(std::string_view("")).empty());
    CHECK(escape_binary(std::string_view("a#b")) == bytes_str({'a', '}', 0x03, 'b'}));

    std::vector<std::uint8_t> bytes{0x00, 0x03, 0x2b, 0x2d, 0x5d, 0xff};
    CHECK(escape_binary(bytes) == bytes_str({0x00, 0x03, 0x2b, 0x2d, 0x5d, 0xff}));

    for (int b = 0; b < 256; ++b) {
        std::string one(1, static_cast<char>(b));
        bool reserved = b == '#' || b == '$' || b == '}' || b == '*';
        INFO("byte " << b);
        CHECK(escape_binary(one) == (reserved ? bytes_str({'}', b ^ 0x20}) : one));
        CHECK(unescape(escape_binary(one)) == one);
    }
}

TEST_CASE("run_length_encode: exact encodings", "[framing][rle]") {
    CHECK(run_length_encode("") == "");
    CHECK(run_length_encode("0") == "0");
    CHECK(run_length_encode("000") == "000");
    CHECK(run_length_encode("0000") == "0* "); // the spec's example
    CHECK(run_length_encode("00000") == "0*!");
    CHECK(run_length_encode("000000") == "0*\"");
    // 6 and 7 repeats would need '#' and '$': 5 repeats plus the rest as is (the spec's example).
    CHECK(run_length_encode("0000000") == "0*\"0");
    CHECK(run_length_encode("00000000") == "0*\"00");
    CHECK(run_length_encode("000000000") == "0*%");
    CHECK(run_length_encode("xxxxxxxx") == "x*\"xx");
    CHECK(run_length_encode("AAAA") == "A* ");
    CHECK(run_length_encode("01234567") == "01234567");
    CHECK(run_length_encode("E01") == "E01");
    CHECK(run_length_encode("00000000ffffffff") == "0*\"00f*\"ff");
    CHECK(run_length_encode(std::string(98, '0')) == "0*~");
    CHECK(run_length_encode(std::string(99, '0')) == "0*~0");
}

TEST_CASE("run_length_encode: never touches non-hex characters", "[framing][rle]") {
    for (std::string s : {"gggggggg", "        ", "}}}}}}}}", "########", "OKOKOKOK", "TTTTTTTT",
                          "::::::::", ",,,,,,,,", ";;;;;;;;", "XXXXXXXX"}) {
        INFO(s);
        CHECK(run_length_encode(s) == s);
    }
    // Escaped binary keeps its escapes intact: '}' and the escaped byte are never folded.
    std::string escaped = escape_binary(std::string_view("****####$$$$}}}}"));
    CHECK(run_length_encode(escaped) == escaped);
}

TEST_CASE("run_length_encode: long runs round-trip and use legal counts", "[framing][rle]") {
    for (char c : {'0', 'f', 'A', 'x'}) {
        for (std::size_t n = 1; n <= 400; ++n) {
            std::string run(n, c);
            std::string enc = run_length_encode(run);
            INFO("char " << c << " run " << n << " -> " << enc);
            CHECK(rle_expand(enc) == run);
            CHECK(enc.size() <= run.size());
            CHECK(enc.find_first_of("#$") == std::string::npos);
        }
    }
}

TEST_CASE("run_length_encode: random data round-trips", "[framing][rle]") {
    std::mt19937 rng(1234);
    // Mostly hex and 'x' so runs are common; plus reserved and separator bytes.
    const std::string alphabet = "00000fffffxxxa9;:,}#$ gG\x03";
    for (int iter = 0; iter < 2000; ++iter) {
        std::string raw;
        std::size_t len = rng() % 300;
        while (raw.size() < len) {
            char c = alphabet[rng() % alphabet.size()];
            raw.append(1 + rng() % 120, c);
        }
        // Stub replies are escaped before they are encoded, which removes any literal '*'.
        std::string escaped = escape_binary(raw);
        std::string enc = run_length_encode(escaped);
        INFO("input " << escaped);
        REQUIRE(rle_expand(enc) == escaped);
        CHECK(unescape(rle_expand(enc)) == raw);
        // Every count character is printable and never a frame character.
        for (std::size_t i = 0; i + 1 < enc.size(); ++i) {
            if (enc[i] != '*') continue;
            char count = enc[i + 1];
            CHECK(count != '#');
            CHECK(count != '$');
            CHECK(static_cast<unsigned char>(count) >= 32);
            CHECK(static_cast<unsigned char>(count) <= 126);
            char repeated = enc[i - 1];
            CHECK((hex_digit_value(repeated) >= 0 || repeated == 'x'));
            ++i;
        }
    }
}
