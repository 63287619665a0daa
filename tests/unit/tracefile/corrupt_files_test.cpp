// Every way a trace file can be cut short or lie about a length gives an Error that names
// the byte offset, never a crash or a huge allocation: damage to the header or the text
// section fails the parse, damage to the frame section keeps the frames before it.
#include "tests/unit/tracefile/test_files.hpp"
#include "tests/unit/test_bytes.hpp"

#include <random>
#include <set>

using namespace tpagent;
using namespace tpagent::tracefile;
using tpagent::test::Bytes;
using tpagent::test::cat;
using tpagent::test::put_le;
using tracefile_test::file_bytes;

namespace {

// A small well-formed file: R 10 (16-byte register blocks), one tracepoint, one variable.
std::string text_section(std::string_view extra_lines = "") {
    std::string out(kMagic);
    out += "R 10\nstatus 0;tstop::0;tframes:1\ntsv 2:5:0:76\ntp T1:401000:E:0:0\n";
    out += extra_lines;
    out += "\n";
    return out;
}

Bytes frame(std::uint16_t tracepoint, const Bytes& data) {
    Bytes out;
    put_le(out, tracepoint, 2);
    put_le(out, data.size(), 4);
    out.insert(out.end(), data.begin(), data.end());
    return out;
}

Bytes r_block() {
    Bytes out{'R'};
    for (std::uint8_t i = 0; i < 16; ++i)
        out.push_back(i);
    return out;
}

Bytes m_block(std::uint64_t address, const Bytes& bytes, std::optional<std::size_t> length = {}) {
    Bytes out{'M'};
    put_le(out, address, 8);
    put_le(out, length.value_or(bytes.size()), 2);
    out.insert(out.end(), bytes.begin(), bytes.end());
    return out;
}

Bytes v_block(std::uint32_t number, std::int64_t value) {
    Bytes out{'V'};
    put_le(out, number, 4);
    put_le(out, static_cast<std::uint64_t>(value), 8);
    return out;
}

Bytes file_of(const std::string& text, const Bytes& frames, bool marker = true) {
    Bytes out(text.begin(), text.end());
    out.insert(out.end(), frames.begin(), frames.end());
    if (marker) out.insert(out.end(), 4, 0);
    return out;
}

// What is wrong with the file: the parse's error, or the damage the file was read up to.
Error problem(const Result<TraceFile>& r) {
    if (!r.ok()) return r.error();
    REQUIRE(r->damage());
    return *r->damage();
}

// The error text begins "offset N:"; returns N.
std::size_t error_offset(const Error& error) {
    INFO(error.text);
    REQUIRE(error.text.rfind("offset ", 0) == 0);
    return std::stoul(error.text.substr(7));
}
std::size_t error_offset(const Result<TraceFile>& r) {
    return error_offset(problem(r));
}

void check_problem(const Result<TraceFile>& r, std::size_t offset, std::string_view words) {
    const Error error = problem(r);
    CHECK(error_offset(error) == offset);
    INFO(error.text);
    CHECK(error.text.find(words) != std::string::npos);
}

void check_error(Bytes bytes, std::size_t offset, std::string_view words) {
    check_problem(parse_trace_file(std::move(bytes)), offset, words);
}

// The file parsed, damaged in the frame section after `frames` good frames.
void check_damage(Bytes bytes, std::size_t frames, std::size_t offset, std::string_view words) {
    auto r = parse_trace_file(std::move(bytes));
    REQUIRE(r.ok());
    CHECK(r->frames().size() == frames);
    check_problem(r, offset, words);
}

} // namespace

TEST_CASE("a well-formed synthetic file parses") {
    std::string text = text_section();
    Bytes frames =
        cat({frame(1, cat({r_block(), m_block(0x1000, {1, 2, 3}), v_block(2, -7)})), frame(1, {})});
    auto r = parse_trace_file(file_of(text, frames));
    REQUIRE(r.ok());
    REQUIRE(r->frames().size() == 2);
    const Frame& f = r->frames()[0];
    CHECK(f.offset == text.size());
    REQUIRE(f.blocks.size() == 3);
    CHECK(f.blocks[0].data.size() == 16);
    CHECK(f.blocks[1].address == 0x1000);
    CHECK(f.blocks[1].data.size() == 3);
    CHECK(f.variable(2) == -7);
    CHECK(r->frames()[1].blocks.empty());
    // No tdesc: the pc is the tracepoint's address.
    CHECK(r->frame_pc(f) == 0x401000);
    CHECK(r->variables()[0].initial == 5);
}

TEST_CASE("static tracepoint data blocks are read") {
    Bytes s{'S'};
    put_le(s, 5, 2);
    s.insert(s.end(), {'h', 'e', 'l', 'l', 'o'});
    auto r = parse_trace_file(file_of(text_section(), frame(1, cat({s, v_block(2, 1)}))));
    REQUIRE(r.ok());
    REQUIRE(r->frames()[0].blocks.size() == 2);
    CHECK(r->frames()[0].blocks[0].type == 'S');
    CHECK(r->frames()[0].blocks[0].data.size() == 5);
}

TEST_CASE("header and text section errors fail the parse") {
    CHECK_FALSE(parse_trace_file({0x7f, 'T', 'R', 'A'}).ok());
    std::string text = text_section();
    CHECK_FALSE(parse_trace_file(Bytes(text.begin(), text.end() - 1)).ok());
}

TEST_CASE("header errors") {
    check_error({}, 0, "ends inside the header");
    check_error({0x7f, 'T', 'R', 'A'}, 4, "ends inside the header");
    Bytes wrong(kMagic.begin(), kMagic.end());
    wrong[6] = '1';
    check_error(wrong, 6, "not a trace file");
    check_error({'G', 'I', 'F', '8', '9', 'a', 0, 0, 0}, 0, "not a trace file");
}

TEST_CASE("text section errors") {
    std::string text = text_section();
    SECTION("no empty line") {
        std::string cut = text.substr(0, text.size() - 1);
        check_error(Bytes(cut.begin(), cut.end()), cut.size(), "without the empty line");
        std::string mid = text.substr(0, 20);
        check_error(Bytes(mid.begin(), mid.end()), mid.rfind('\n') + 1, "without the empty line");
    }
    SECTION("register block size") {
        std::string big = std::string(kMagic) + "R 100000000\n\n";
        auto r = parse_trace_file(file_of(big, {}));
        CHECK(error_offset(r) == kMagic.size() + 2);
        CHECK(r.error().code == ErrorCode::TooLarge);
        std::string zero = std::string(kMagic) + "R 0\n\n";
        CHECK(error_offset(parse_trace_file(file_of(zero, {}))) == kMagic.size() + 2);
        std::string bad = std::string(kMagic) + "R 12x\n\n";
        check_error(file_of(bad, {}), kMagic.size() + 2, "R line");
        std::string twice = std::string(kMagic) + "R 10\nR 10\n\n";
        check_error(file_of(twice, {}), kMagic.size() + 5 + 2, "second R line");
    }
    SECTION("status, tsv and tp lines") {
        std::string base = text_section();
        base.pop_back(); // reopen the section for one more line
        auto with = [&](std::string_view line) {
            return file_of(base + std::string(line) + "\n\n", {});
        };
        for (auto line : {"status 2;tstop::0", "status 0;tframes:zz"}) {
            // The first status line is fine; this is a second one or a bad one.
            auto r = parse_trace_file(with(line));
            CHECK(error_offset(r) > 0);
        }
        // A bad line, where in it the error is, and words of the error.
        const struct {
            const char* line;
            std::size_t at;
            const char* words;
        } bad[] = {
            {"tsv 3:0:2:76", 4, "builtin"},
            {"tsv 3:0:0:7", 4, "hex name"},
            {"tp A9:401000:R01", 3, "before its T piece"},
            {"tp T1:401000:E:0:0", 3, "defined twice"},
            {"tp A1:401000:Q", 3, "unknown action"},
            {"tp T2:401000:E:0:0:Xffff,00", 3, "fewer present"},
            {"tp Z1:401000:at:0:2:6a6b6c6d", 3, "does not fit"},
        };
        for (const auto& b : bad) {
            INFO(b.line);
            check_error(with(b.line), base.size() + b.at, b.words);
        }
        // Unknown lines and unknown piece letters are skipped, as gdb does.
        CHECK(parse_trace_file(with("frobnicate 1\ntp Q1:401000:whatever")).ok());
    }
    SECTION("target description") {
        std::string t = std::string(kMagic) + "tdesc <target><reg name=\"x\" bitsize=\"12\"/>\n\n";
        check_error(file_of(t, {}), kMagic.size() + 6, "bitsize");
    }
}

TEST_CASE("frame section errors") {
    std::string text = text_section();
    const std::size_t start = text.size();
    SECTION("missing end marker") {
        check_damage(file_of(text, {}, false), 0, start, "end-of-frames marker");
        Bytes one = frame(1, v_block(2, 1));
        check_damage(file_of(text, one, false), 1, start + one.size(), "end-of-frames marker");
    }
    SECTION("the frames before a bad one are kept") {
        Bytes good = cat({frame(1, v_block(2, 1)), frame(1, v_block(2, 2))});
        Bytes bad = frame(1, cat({v_block(2, 3), Bytes{'Q', 0}}));
        auto r = parse_trace_file(file_of(text, cat({good, bad, frame(1, v_block(2, 4))})));
        REQUIRE(r.ok());
        REQUIRE(r->frames().size() == 2);
        CHECK(r->frames()[1].variable(2) == 2);
        REQUIRE(r->damage());
        CHECK(error_offset(*r->damage()) == start + good.size() + 6 + 13);
    }
    SECTION("truncated frame header") {
        Bytes bytes = file_of(text, {}, false);
        bytes.push_back(1);
        check_error(bytes, start, "truncated frame header");
        bytes.insert(bytes.end(), {0, 4, 0});
        check_error(bytes, start, "truncated frame header");
    }
    SECTION("frame length past the end of the file") {
        Bytes f = frame(1, v_block(2, 1));
        f[2] = 0xff; // length 0x..ff
        check_error(file_of(text, f), start + 2, "goes past the end of the file");
        Bytes huge = frame(1, {});
        huge[2] = huge[3] = huge[4] = huge[5] = 0xff;
        check_error(file_of(text, huge), start + 2, "0xffffffff");
    }
    SECTION("block longer than its frame") {
        Bytes m = m_block(0x1000, {1, 2, 3}, 0x400);
        check_error(file_of(text, frame(1, m)), start + 6, "M block needs 1034 bytes");
        Bytes r = r_block();
        r.resize(10);
        check_error(file_of(text, frame(1, cat({v_block(2, 1), r}))), start + 6 + 13,
                    "R block needs 16 bytes");
        Bytes v = v_block(2, 1);
        v.resize(5);
        check_error(file_of(text, frame(1, v)), start + 6, "V block needs 12 bytes");
        Bytes m_head{'M', 0, 0, 0};
        check_error(file_of(text, frame(1, m_head)), start + 6, "M block needs 10 bytes");
        Bytes s{'S', 9, 0, 'a'};
        check_error(file_of(text, frame(1, s)), start + 6, "S block needs 11 bytes");
    }
    SECTION("unknown block type") {
        check_error(file_of(text, frame(1, cat({v_block(2, 1), Bytes{'Q', 0}}))), start + 6 + 13,
                    "unknown block type 0x51");
    }
    SECTION("R block without a register block size") {
        std::string no_r = std::string(kMagic) + "\n";
        check_error(file_of(no_r, frame(1, r_block())), no_r.size() + 6, "no register block size");
    }
}

TEST_CASE("every prefix of a gdb file is damaged at an offset inside it, after the frames "
          "it holds whole") {
    Bytes whole = file_bytes("basic.tf");
    auto full = parse_trace_file(whole);
    REQUIRE(full.ok());
    // Cuts around every frame's header and end (every byte there) and a sample elsewhere.
    std::set<std::size_t> cuts;
    for (std::size_t n = 0; n + 2 < whole.size(); n += 61)
        cuts.insert(n);
    for (const Frame& f : full->frames()) {
        std::size_t end = f.offset + f.bytes.size();
        for (std::size_t n = f.offset - 16; n < f.offset + 64; ++n)
            cuts.insert(n);
        for (std::size_t n = end - 64; n < end + 2; ++n)
            cuts.insert(n);
    }
    for (std::size_t n : cuts) {
        Bytes cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(n));
        auto r = parse_trace_file(std::move(cut));
        INFO("prefix " << n);
        CHECK(error_offset(r) <= n);
        if (n < full->frame_section_offset()) {
            CHECK_FALSE(r.ok());
            continue;
        }
        REQUIRE(r.ok());
        std::size_t whole_frames = 0;
        for (const Frame& f : full->frames())
            if (f.offset + f.bytes.size() <= n) ++whole_frames;
        CHECK(r->frames().size() == whole_frames);
    }
    // The frames end 4 bytes before the file does; the first two marker bytes are enough.
    Bytes two(whole.begin(), whole.end() - 2);
    auto r = parse_trace_file(std::move(two));
    REQUIRE(r.ok());
    CHECK_FALSE(r->damage());
}

TEST_CASE("cutting inside a frame names that frame's length field, the frames before it "
          "are kept") {
    Bytes whole = file_bytes("basic.tf");
    auto full = parse_trace_file(whole);
    REQUIRE(full.ok());
    const Frame& f3 = full->frames()[3];
    Bytes cut(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(f3.offset + 100));
    auto r = parse_trace_file(std::move(cut));
    REQUIRE(r.ok());
    REQUIRE(r->damage());
    CHECK(error_offset(*r->damage()) == f3.offset + 2);
    CHECK(r->damage()->text.find("frame 3 (tracepoint 3)") != std::string::npos);
    REQUIRE(r->frames().size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(r->frames()[i].offset == full->frames()[i].offset);
        CHECK(r->frames()[i].blocks.size() == full->frames()[i].blocks.size());
    }
    CHECK(r->tracepoints().size() == full->tracepoints().size());
}

TEST_CASE("random byte changes give a file or an error, never a crash") {
    Bytes whole = file_bytes("stepping.tf");
    std::mt19937 rng(1234);
    std::size_t errors = 0;
    for (int i = 0; i < 300; ++i) {
        Bytes mutated = whole;
        for (int k = 0; k < 4; ++k) {
            std::size_t at = rng() % mutated.size();
            mutated[at] = static_cast<std::uint8_t>(rng());
        }
        auto r = parse_trace_file(std::move(mutated));
        if (!r.ok() || r->damage()) {
            ++errors;
            CHECK(problem(r).text.rfind("offset ", 0) == 0);
        }
    }
    CHECK(errors > 0);
}
