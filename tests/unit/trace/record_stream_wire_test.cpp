// The record stream's wire format (trace/record_stream_wire.hpp): what one end encodes the
// other decodes, and a peer that is not a record stream, or sends an operation too large or of
// an unknown kind, is refused with a clear error rather than trusted.
#include "trace/record_stream_wire.hpp"
#include <catch2/catch.hpp>

using namespace tpagent;

TEST_CASE("record stream: hello, resume, operation and ack round trips", "[record-stream]") {
    const trace::RecordHello hello{0x1122334455667788, 42};
    auto h = trace::decode_hello(trace::encode_hello(hello));
    REQUIRE(h);
    CHECK(h->stream == hello.stream);
    CHECK(h->number == 42);
    auto r = trace::decode_resume(trace::encode_resume({7, 9}));
    REQUIRE(r);
    CHECK((r->stream == 7 && r->number == 9));
    // A hello is not a resume: each end checks it talks to the other kind.
    CHECK_FALSE(trace::decode_resume(trace::encode_hello(hello)));

    const trace::RecordOpHeader op{trace::RecordOpKind::Write, 5, 3, 4096, 100};
    auto d = trace::decode_op_header(trace::encode_op_header(op));
    REQUIRE(d);
    CHECK(d->kind == trace::RecordOpKind::Write);
    CHECK((d->seq == 5 && d->file == 3 && d->offset == 4096 && d->length == 100));
    CHECK(trace::decode_ack(trace::encode_ack(123456789)) == 123456789);
}

TEST_CASE("record stream: bad operations are refused", "[record-stream]") {
    auto too_big = trace::encode_op_header(
        {trace::RecordOpKind::Write, 1, 1, 0, trace::kRecordMaxOpBytes + 1});
    CHECK_FALSE(trace::decode_op_header(too_big));
    auto create_with_bytes = trace::encode_op_header({trace::RecordOpKind::Create, 1, 1, 0, 1});
    CHECK_FALSE(trace::decode_op_header(create_with_bytes));
    auto unknown = trace::encode_op_header({static_cast<trace::RecordOpKind>(9), 1, 1, 0, 0});
    auto e = trace::decode_op_header(unknown);
    REQUIRE_FALSE(e);
    CHECK(e.error().text.find("unknown operation 9") != std::string::npos);
    auto far =
        trace::encode_op_header({trace::RecordOpKind::Write, 1, 1, trace::kRecordMaxFileBytes, 1});
    CHECK_FALSE(trace::decode_op_header(far));
    std::array<std::uint8_t, trace::kRecordHelloSize> garbage{};
    CHECK_FALSE(trace::decode_hello(garbage));
}
