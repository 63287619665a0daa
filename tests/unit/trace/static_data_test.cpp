// `$_sdata`: the text of a static tracepoint's arguments, and the S block that holds it.
#include "trace/static_data.hpp"
#include "trace/trace_frame.hpp"
#include <catch2/catch.hpp>
#include <string>

using namespace tpagent::trace;

namespace {

std::string written(char* out, std::size_t length) {
    REQUIRE(length >= 1);
    CHECK(out[length - 1] == '\0');
    return std::string(out, length - 1);
}

} // namespace

TEST_CASE("static data: signed in decimal, unsigned longs in hex, unknown as ?", "[trace]") {
    char out[128];
    StaticDataWriter w(out, sizeof out);
    w.argument(static_cast<std::uint64_t>(-5), 4, true);
    w.argument(0x7ffc0010, 8, false);
    w.argument(7, 4, false);
    w.unknown();
    w.argument(0, 8, false);
    w.argument(static_cast<std::uint64_t>(INT64_MIN), 8, true);
    CHECK(written(out, w.finish()) ==
          "arg1=-5 arg2=0x7ffc0010 arg3=7 arg4=? arg5=0x0 arg6=-9223372036854775808");
}

TEST_CASE("static data never writes past its room and always ends with a NUL", "[trace]") {
    char out[12];
    StaticDataWriter w(out, sizeof out);
    w.argument(123456789, 4, false);
    w.argument(1, 4, false);
    CHECK(written(out, w.finish()) == "arg1=123456");
    char none[1];
    StaticDataWriter empty(none, sizeof none);
    empty.argument(1, 4, false);
    CHECK(written(none, empty.finish()).empty());
    StaticDataWriter zero(nullptr, 0);
    zero.unknown();
    CHECK(zero.finish() == 0);
}

TEST_CASE("an S block is written, walked past and read back", "[trace]") {
    FrameBuilder b(8);
    b.start(3);
    const std::uint8_t text[] = "arg1=1";
    b.add_variable(1, 42);
    b.add_static_data(text);
    b.add_memory(0x1000, std::vector<std::uint8_t>{1, 2});
    const FrameView view(b.bytes(), 8);
    const auto blocks = view.blocks();
    REQUIRE(blocks.size() == 3);
    CHECK(blocks[1].type == 'S');
    CHECK(std::string(view.static_data().begin(), view.static_data().end()) ==
          std::string("arg1=1", sizeof text));
    CHECK(view.variable(1) == 42);
    std::uint8_t byte = 0;
    CHECK(view.read_memory(0x1001, std::span(&byte, 1)) == 1);
    CHECK(byte == 2);

    FrameBuilder plain(8);
    plain.start(1);
    CHECK(FrameView(plain.bytes(), 8).static_data().empty());
}
