#include "trace/trace_frame_buffer.hpp"
#include "gdb13_captures.hpp"
#include "test_support.hpp"

#include <csignal>
#include <deque>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace tpagent;
using namespace tpagent::trace;
using namespace trace_test;
using Commit = TraceFrameBuffer::Commit;

namespace {

Bytes frame_bytes(const FrameBuilder& b) {
    return Bytes(b.bytes().begin(), b.bytes().end());
}

// A frame of exactly `size` bytes (>= 17) for tracepoint tp, filled with `fill`.
FrameBuilder sized_frame(std::uint16_t tp, std::size_t size, std::uint8_t fill) {
    FrameBuilder b(0);
    b.start(tp);
    b.add_memory(0x1000, Bytes(size - kFrameHeaderSize - 11, fill));
    REQUIRE(b.size() == size);
    return b;
}

Bytes read_all(const TraceFrameBuffer& buf, std::size_t chunk) {
    Bytes out;
    Bytes piece(chunk);
    for (;;) {
        std::size_t n = buf.read_raw(out.size(), piece);
        if (n == 0) break;
        out.insert(out.end(), piece.begin(), piece.begin() + static_cast<std::ptrdiff_t>(n));
    }
    return out;
}

} // namespace

TEST_CASE("frame: exact bytes", "[trace][frame]") {
    FrameBuilder b(4);
    b.start(0x1234);
    REQUIRE(b.add_registers(Bytes{1, 2, 3, 4}).ok());
    b.add_memory(0x1122334455667788, Bytes{0xaa, 0xbb});
    b.add_variable(0x0a0b0c0d, -2);
    CHECK(b.tracepoint() == 0x1234);
    CHECK(frame_bytes(b) == bytes_of("3412"       // tracepoint
                                     "1f000000"   // data length: 5 + 13 + 13
                                     "5201020304" // R
                                     "4d8877665544332211"
                                     "0200"
                                     "aabb" // M
                                     "560d0c0b0a"
                                     "feffffffffffffff")); // V
    check_rejected(b.add_registers(Bytes{1, 2, 3}), ErrorCode::BadPacket);
    b.start(7); // reuse
    CHECK(frame_bytes(b) == bytes_of("0700"
                                     "00000000"));
}

TEST_CASE("frame: same bytes as gdbserver's, and read back", "[trace][frame]") {
    const Bytes captured = bytes_of(gdb13::kFrame0);
    FrameView gdbserver_frame(captured, gdb13::kRegisterBlockSize);
    auto blocks = gdbserver_frame.blocks();
    REQUIRE(blocks.size() == 8);

    // Rebuild it block by block.
    FrameBuilder b(gdb13::kRegisterBlockSize);
    b.start(gdbserver_frame.tracepoint());
    for (const FrameBlock& block : blocks) {
        if (block.type == 'R') REQUIRE(b.add_registers(block.data).ok());
        if (block.type == 'M') b.add_memory(block.address, block.data);
        if (block.type == 'V') b.add_variable(block.variable, block.value);
    }
    CHECK(frame_bytes(b) == captured);

    TraceFrameBuffer buf(gdb13::kRegisterBlockSize);
    REQUIRE(buf.commit(b, 0x555555555144) == Commit::Stored);
    FrameBuilder step(gdb13::kRegisterBlockSize);
    const Bytes captured_step_bytes = bytes_of(gdb13::kFrame1);
    FrameView captured_step(captured_step_bytes, gdb13::kRegisterBlockSize);
    step.start(2);
    for (const FrameBlock& block : captured_step.blocks()) {
        if (block.type == 'R') REQUIRE(step.add_registers(block.data).ok());
        if (block.type == 'M') step.add_memory(block.address, block.data);
    }
    REQUIRE(buf.commit(step, 0x555555555147) == Commit::Stored);

    // qTBuffer bytes = gdbserver's trace file frame section.
    Bytes expected = captured;
    Bytes second = bytes_of(gdb13::kFrame1);
    expected.insert(expected.end(), second.begin(), second.end());
    CHECK(buf.raw_size() == expected.size());
    CHECK(read_all(buf, 2000) == expected);

    auto frame = buf.frame(0);
    REQUIRE(frame);
    CHECK(frame->tracepoint() == 2);
    CHECK(frame->traceframe_info() == gdb13::kFrame0Info);
    auto regs = frame->registers();
    REQUIRE(regs);
    REQUIRE(regs->size() == 0x9c4);
    std::uint64_t rip = 0;
    for (int i = 7; i >= 0; --i)
        rip = rip << 8 | (*regs)[16 * 8 + i];
    CHECK(rip == 0x555555555144);
    CHECK(*frame->variable(2) == 6);
    CHECK_FALSE(frame->variable(1));

    Bytes out(32, 0xee);
    // s = {3, "hello"} at 0x555555558030, 20 bytes.
    CHECK(frame->read_memory(0x555555558030, std::span(out).first(20)) == 20);
    CHECK(Bytes(out.begin(), out.begin() + 9) == bytes_of("0300000068656c6c6f"));
    // Partial: only 4 bytes are collected from 0x555555558040 on.
    CHECK(frame->read_memory(0x555555558040, out) == 4);
    // Spanning two adjacent blocks: glob (0x..8020, 4) is not adjacent to s (0x..8030).
    CHECK(frame->read_memory(0x555555558020, out) == 4);
    CHECK(frame->read_memory(0x55555555801f, out) == 0);
    CHECK(frame->read_memory(0x555555558024, out) == 0);
    // Nothing asked (`m ADDR,0`) inside a block: nothing read, and no copy to a null span
    // (UBSan's report killed a sanitized tpagent here; found by test_faults_hostile_packets).
    CHECK(frame->read_memory(0x555555558031, std::span<std::uint8_t>()) == 0);

    auto step_view = buf.frame(1);
    REQUIRE(step_view);
    CHECK(step_view->traceframe_info() ==
          "<traceframe-info>\n<memory start=\"0x7fffffffe67c\" length=\"0x4\"/>\n"
          "</traceframe-info>\n");
}

TEST_CASE("frame: large ranges split into M blocks", "[trace][frame]") {
    FrameBuilder b(0);
    b.start(1);
    Bytes big(0x10000 + 5);
    std::iota(big.begin(), big.end(), std::uint8_t{0});
    b.add_memory(0x7000, big);
    b.add_memory(0x90000, Bytes{}); // empty range: one empty block
    TraceFrameBuffer buf(0, 1 << 20);
    REQUIRE(buf.commit(b, 0) == Commit::Stored);
    auto f = buf.frame(0);
    auto blocks = f->blocks();
    REQUIRE(blocks.size() == 3);
    CHECK(blocks[0].address == 0x7000);
    CHECK(blocks[0].data.size() == 0xffff);
    CHECK(blocks[1].address == 0x7000 + 0xffff);
    CHECK(blocks[1].data.size() == 6);
    CHECK(blocks[2].data.empty());
    CHECK(b.size() == 6 + 11 + 0xffff + 11 + 6 + 11);
    // Reads across the split see one range.
    Bytes out(0x20000);
    CHECK(f->read_memory(0x7000, out) == big.size());
    CHECK(Bytes(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(big.size())) == big);
    CHECK(f->read_memory(0x7000 + 0xfff0, std::span(out).first(0x20)) == 0x15);
    CHECK(out[0] == static_cast<std::uint8_t>(0xfff0));
    CHECK(f->traceframe_info() ==
          "<traceframe-info>\n<memory start=\"0x7000\" length=\"0x10005\"/>\n"
          "<memory start=\"0x90000\" length=\"0x0\"/>\n</traceframe-info>\n");
}

TEST_CASE("frame: overlapping memory, latest wins; several variables", "[trace][frame]") {
    FrameBuilder b(0);
    b.start(1);
    b.add_memory(0x100, Bytes{1, 1, 1, 1});
    b.add_variable(3, 30);
    b.add_memory(0x102, Bytes{2, 2, 2, 2});
    b.add_variable(2, 20);
    b.add_variable(3, 31);
    TraceFrameBuffer buf(0, 4096);
    REQUIRE(buf.commit(b, 0) == Commit::Stored);
    auto f = buf.frame(0);
    Bytes out(8);
    CHECK(f->read_memory(0x100, out) == 6);
    CHECK(Bytes(out.begin(), out.begin() + 6) == Bytes{1, 1, 2, 2, 2, 2});
    CHECK(*f->variable(3) == 31);
    CHECK_FALSE(f->registers());
    CHECK(f->traceframe_info() ==
          "<traceframe-info>\n<memory start=\"0x100\" length=\"0x4\"/>\n"
          "<memory start=\"0x102\" length=\"0x4\"/>\n<tvar id=\"2\"/>\n<tvar id=\"3\"/>\n"
          "</traceframe-info>\n");
}

TEST_CASE("buffer: linear fills up", "[trace][buffer]") {
    TraceFrameBuffer buf(0, 100);
    CHECK(buf.size() == 100);
    CHECK(buf.bytes_free() == 100);
    CHECK_FALSE(buf.circular());
    REQUIRE(buf.commit(sized_frame(1, 40, 0x11), 0x10) == Commit::Stored);
    REQUIRE(buf.commit(sized_frame(2, 40, 0x22), 0x20) == Commit::Stored);
    CHECK(buf.bytes_free() == 20);
    CHECK(buf.commit(sized_frame(3, 21, 0x33), 0x30) == Commit::Full);
    REQUIRE(buf.commit(sized_frame(3, 20, 0x33), 0x30) == Commit::Stored);
    CHECK(buf.bytes_free() == 0);
    CHECK(buf.commit(sized_frame(4, 17, 0x44), 0x40) == Commit::Full);
    CHECK(buf.frame_count() == 3);
    CHECK(buf.frames_created() == 3);
    CHECK(buf.info(0)->tracepoint == 1);
    CHECK(buf.info(2)->pc == 0x30);
    CHECK(buf.raw_size() == 100);

    CHECK(buf.commit(FrameBuilder(0), 0) == Commit::Invalid); // tracepoint 0
    buf.clear();
    CHECK(buf.frame_count() == 0);
    CHECK(buf.raw_size() == 0);
    CHECK(buf.bytes_free() == 100);
    CHECK(buf.commit(sized_frame(1, 101, 0), 0) == Commit::Full);
}

TEST_CASE("buffer: circular wrap, numbering from the oldest kept frame", "[trace][buffer]") {
    TraceFrameBuffer buf(0, 100);
    buf.set_circular(true);
    std::vector<FrameBuilder> frames;
    for (std::uint16_t i = 1; i <= 5; ++i)
        frames.push_back(sized_frame(i, 30, static_cast<std::uint8_t>(i)));
    for (std::uint16_t i = 0; i < 3; ++i)
        REQUIRE(buf.commit(frames[i], 0x100 + i) == Commit::Stored);
    CHECK(buf.bytes_free() == 10);
    // Frame 4 does not fit at 90: it goes to 0 and frame 1 is discarded.
    REQUIRE(buf.commit(frames[3], 0x103) == Commit::Stored);
    CHECK(buf.frame_count() == 3);
    CHECK(buf.frames_created() == 4);
    CHECK(buf.info(0)->tracepoint == 2); // tfind start = oldest kept
    CHECK(buf.info(0)->pc == 0x101);
    CHECK(buf.info(2)->tracepoint == 4);
    CHECK_FALSE(buf.info(3));
    // Room between the new frame (0..30) and the oldest (30..60) is none; tail 90..100 unused.
    CHECK(buf.bytes_free() == 0);
    REQUIRE(buf.commit(frames[4], 0x104) == Commit::Stored);
    CHECK(buf.frame_count() == 3);
    CHECK(buf.info(0)->tracepoint == 3);

    // Raw reads present the kept frames oldest first, contiguous.
    Bytes expected;
    for (std::size_t i : {2, 3, 4}) {
        Bytes f = frame_bytes(frames[i]);
        expected.insert(expected.end(), f.begin(), f.end());
    }
    CHECK(buf.raw_size() == 90);
    CHECK(read_all(buf, 2000) == expected);
    CHECK(read_all(buf, 7) == expected);
    Bytes tail(5);
    CHECK(buf.read_raw(88, tail) == 2);
    CHECK(buf.read_raw(90, tail) == 0);
    CHECK(buf.read_raw(1000, tail) == 0);

    // A frame bigger than the buffer never fits.
    CHECK(buf.commit(sized_frame(9, 101, 0), 0) == Commit::Full);
    // One as big as the buffer replaces everything.
    REQUIRE(buf.commit(sized_frame(9, 100, 9), 0x109) == Commit::Stored);
    CHECK(buf.frame_count() == 1);
    CHECK(buf.frames_created() == 6);
    CHECK(buf.info(0)->tracepoint == 9);

    // Switching to linear keeps the frames and stops discarding.
    buf.set_circular(false);
    CHECK(buf.commit(sized_frame(1, 20, 0), 0) == Commit::Full);
    CHECK(buf.frame_count() == 1);
}

TEST_CASE("buffer: circular, random frame sizes keep every kept frame intact", "[trace][buffer]") {
    for (std::uint32_t seed = 1; seed <= 20; ++seed) {
        INFO("seed " << seed);
        std::mt19937 rng(seed);
        const std::size_t size = 200 + rng() % 2000;
        TraceFrameBuffer buf(0, size);
        buf.set_circular(true);
        std::deque<std::pair<Bytes, std::uint64_t>> all; // every committed frame, in order
        for (std::uint32_t i = 0; i < 500; ++i) {
            std::size_t len = 17 + rng() % std::min<std::size_t>(size - 16, 300);
            auto f = sized_frame(static_cast<std::uint16_t>(1 + i % 7), len,
                                 static_cast<std::uint8_t>(i));
            REQUIRE(buf.commit(f, 0x1000 + i) == Commit::Stored);
            all.emplace_back(frame_bytes(f), 0x1000 + i);
        }
        REQUIRE(buf.frames_created() == 500);
        const std::size_t kept = buf.frame_count();
        REQUIRE(kept >= 1);
        // The kept frames are the newest ones, in order, unchanged.
        Bytes expected;
        std::size_t total = 0;
        for (std::size_t n = 0; n < kept; ++n) {
            const auto& [bytes, pc] = all[all.size() - kept + n];
            auto view = buf.frame(n);
            REQUIRE(view);
            CHECK(Bytes(view->bytes().begin(), view->bytes().end()) == bytes);
            CHECK(buf.info(n)->pc == pc);
            CHECK(buf.info(n)->number == n);
            expected.insert(expected.end(), bytes.begin(), bytes.end());
            total += bytes.size();
        }
        CHECK(total <= size);
        // Nothing older would have fitted as well (at most one tail gap is wasted, and a
        // discarded frame was needed to make room): kept bytes exceed half the buffer.
        CHECK(total + 300 > size / 2);
        CHECK(read_all(buf, 1 + seed * 13) == expected);
    }
}

TEST_CASE("buffer: QTFrame lookups", "[trace][buffer]") {
    TraceFrameBuffer buf(0, 4096);
    // tracepoint, pc per frame
    const std::vector<std::pair<std::uint16_t, std::uint64_t>> hits = {
        {1, 0x1000}, {2, 0x2000}, {1, 0x1004}, {1, 0x1000}, {3, 0x3000}, {2, 0x2000}};
    for (auto [tp, pc] : hits)
        REQUIRE(buf.commit(sized_frame(tp, 20, 0), pc) == Commit::Stored);
    auto number = [&](const FrameQuery& q, std::optional<std::size_t> current) -> long {
        auto f = buf.find(q, current);
        return f ? static_cast<long>(f->number) : -1;
    };
    CHECK(number(FrameByNumber{0}, std::nullopt) == 0);
    CHECK(number(FrameByNumber{5}, 2) == 5);
    CHECK(number(FrameByNumber{6}, std::nullopt) == -1);
    CHECK(number(FrameByNumber{-1}, 3) == -1);

    CHECK(number(FrameAtPc{0x1000}, std::nullopt) == 0);
    CHECK(number(FrameAtPc{0x1000}, 0) == 3);
    CHECK(number(FrameAtPc{0x1000}, 3) == -1);
    CHECK(number(FrameAtPc{0x9999}, std::nullopt) == -1);

    CHECK(number(FrameOfTracepoint{2}, std::nullopt) == 1);
    CHECK(number(FrameOfTracepoint{2}, 1) == 5);
    CHECK(number(FrameOfTracepoint{3}, 4) == -1);

    CHECK(number(FrameInRange{0x1001, 0x1004}, std::nullopt) == 2);
    CHECK(number(FrameInRange{0x2000, 0x3000}, 1) == 4); // both ends inclusive
    CHECK(number(FrameInRange{0x2000, 0x2fff}, 1) == 5);

    CHECK(number(FrameOutsideRange{0x1000, 0x1fff}, std::nullopt) == 1);
    CHECK(number(FrameOutsideRange{0x1000, 0x2000}, 1) == 4);
    CHECK(number(FrameOutsideRange{0x0, 0xffffffffffffffff}, std::nullopt) == -1);

    auto f = buf.find(FrameOfTracepoint{3}, std::nullopt);
    REQUIRE(f);
    CHECK(frame_found_reply(f->number, f->tracepoint) == "F4T3");
    CHECK(frame_not_found_reply() == "F-1");
}

TEST_CASE("buffer: many frames, direct lookups", "[trace][buffer]") {
    TraceFrameBuffer buf(0, 64 << 20);
    buf.set_circular(true);
    FrameBuilder b(0);
    std::size_t n = 0;
    for (; buf.frames_created() < 4'000'000; ++n) {
        b.start(static_cast<std::uint16_t>(1 + n % 100));
        b.add_variable(1, static_cast<std::int64_t>(n));
        if (buf.commit(b, n) != Commit::Stored) FAIL("commit " << n);
    }
    const std::size_t kept = buf.frame_count();
    CHECK(kept == (64u << 20) / 19);
    auto last = buf.frame(kept - 1);
    REQUIRE(last);
    CHECK(*last->variable(1) == static_cast<std::int64_t>(n - 1));
    CHECK(*buf.frame(0)->variable(1) == static_cast<std::int64_t>(n - kept));
    Bytes out(19);
    REQUIRE(buf.read_raw(buf.raw_size() - 19, out) == 19);
    CHECK(out == frame_bytes(b));
}

// Runs `body` in a child process; its exit status, or 128 + the signal that ended it.
template <typename Body> int in_child(Body body) {
    pid_t pid = fork();
    if (pid == 0) {
        std::signal(SIGSEGV, SIG_DFL); // a sanitizer's handler would turn the fault into exit 1
        _exit(body());
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST_CASE("buffer storage: its own mapping, with a guard page past the end", "[trace][buffer]") {
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    MappedBytes bytes(page + 1);
    REQUIRE(bytes.data() != nullptr);
    std::fill_n(bytes.data(), 2 * page, std::uint8_t{0xa5}); // the size rounded up to pages
    CHECK(bytes.data()[2 * page - 1] == 0xa5);
    MappedBytes moved(std::move(bytes));
    CHECK(bytes.data() == nullptr);
    CHECK(moved.data()[0] == 0xa5);
    // Past the end, and before the start, is a fault, not another allocation's memory.
    CHECK(in_child([&] { return moved.data()[2 * page] = 1; }) == 128 + SIGSEGV);
    CHECK(in_child([&] { return moved.data()[-1] = 1; }) == 128 + SIGSEGV);
}

TEST_CASE("buffer: a size the system cannot give is refused, and the frames are kept",
          "[trace][buffer]") {
    // A child whose address space may grow by 256 MiB more asks for a 1 GiB buffer.
    CHECK(in_child([] {
              std::ifstream status("/proc/self/status");
              std::string line;
              std::size_t vm_kib = 0;
              while (std::getline(status, line))
                  if (line.rfind("VmSize:", 0) == 0) vm_kib = std::stoull(line.substr(7));
              const rlim_t limit = (vm_kib << 10) + (rlim_t{256} << 20);
              const rlimit as{limit, limit};
              if (vm_kib == 0 || setrlimit(RLIMIT_AS, &as) != 0) return 10;
              TraceFrameBuffer buf(8, 0x1000);
              if (buf.commit(sized_frame(1, 20, 7), 0) != Commit::Stored) return 11;
              auto refused = buf.set_size(TraceFrameBuffer::kMaxSize);
              if (refused.ok() || refused.error().code != ErrorCode::SystemError) return 12;
              if (refused.error().text.find("trace buffer of 0x40000000 bytes") != 0) return 13;
              if (buf.size() != 0x1000 || buf.frame_count() != 1) return 14;
              return 0;
          }) == 0);
}

TEST_CASE("buffer: size and settings", "[trace][buffer]") {
    TraceFrameBuffer buf(8);
    CHECK(buf.size() == TraceFrameBuffer::kDefaultSize);
    CHECK(buf.register_block_size() == 8);
    CHECK(buf.make_builder().register_block_size() == 8);
    REQUIRE(buf.commit(sized_frame(1, 20, 0), 0) == Commit::Stored);
    REQUIRE(buf.set_size(0x1000).ok());
    CHECK(buf.size() == 0x1000);
    CHECK(buf.frame_count() == 0); // resizing discards frames
    check_rejected(buf.set_size(0), ErrorCode::TooLarge);
    check_rejected(buf.set_size(TraceFrameBuffer::kMaxSize + 1), ErrorCode::TooLarge);
    CHECK(buf.size() == 0x1000);

    auto s = parse_buffer_setting("size:-1");
    REQUIRE(s.ok());
    CHECK(std::get<BufferSizeSetting>(*s).size == TraceFrameBuffer::kDefaultSize);
    CHECK(std::get<BufferSizeSetting>(*parse_buffer_setting("size:A0000")).size == 0xa0000);
    CHECK(std::get<BufferSizeSetting>(*parse_buffer_setting("size:40000000")).size == 1u << 30);
    check_rejected(parse_buffer_setting("size:40000001"), ErrorCode::TooLarge);
    check_rejected(parse_buffer_setting("size:0"), ErrorCode::TooLarge);
    CHECK(std::get<BufferCircularSetting>(*parse_buffer_setting("circular:1")).circular);
    CHECK_FALSE(std::get<BufferCircularSetting>(*parse_buffer_setting("circular:0")).circular);
    for (std::string_view p :
         {"", "size:", "size:-2", "size:x", "circular:2", "circular:", "other:1"}) {
        INFO('"' << p << '"');
        check_rejected(parse_buffer_setting(p), ErrorCode::BadPacket);
    }
}

TEST_CASE("QTFrame payloads", "[trace][buffer]") {
    CHECK(std::get<FrameByNumber>(*parse_frame_query("0")).number == 0);
    CHECK(std::get<FrameByNumber>(*parse_frame_query("1f")).number == 0x1f);
    CHECK(std::get<FrameByNumber>(*parse_frame_query("ffffffff")).number == -1); // tfind none
    CHECK(std::get<FrameByNumber>(*parse_frame_query("-1")).number == -1);
    CHECK(std::get<FrameAtPc>(*parse_frame_query("pc:555555555139")).pc == 0x555555555139);
    CHECK(std::get<FrameOfTracepoint>(*parse_frame_query("tdp:2")).tracepoint == 2);
    auto r = std::get<FrameInRange>(*parse_frame_query("range:555555555139:555555555140"));
    CHECK(r.start == 0x555555555139);
    CHECK(r.end == 0x555555555140);
    auto o = std::get<FrameOutsideRange>(*parse_frame_query("outside:555555555139:4"));
    CHECK(o.start == 0x555555555139);
    CHECK(o.end == 4);
    for (std::string_view p : {"", "x", "100000000", "-2", "pc:", "pc:x", "tdp:", "range:1",
                               "range:1:2:3", "outside:1:", "foo:1"}) {
        INFO('"' << p << '"');
        check_rejected(parse_frame_query(p), ErrorCode::BadPacket);
    }
}

// Fast tracepoints' frames: the R block holds only the first registers_valid bytes. The buffer
// stores them short (and only whole blocks, the staging record may be padded) and raw reads see
// the frame exactly as a full-size frame built with FrameBuilder.
TEST_CASE("buffer: frames with a short register block are widened for raw reads",
          "[trace][buffer]") {
    constexpr std::size_t kFull = 16, kShort = 4;
    FrameBuilder full(kFull);
    full.start(3);
    full.add_memory(0x2000, Bytes{9, 8, 7});
    REQUIRE(full.add_registers(Bytes{1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
    full.add_variable(5, -2);

    FrameBuilder short_frame(kShort);
    short_frame.start(3);
    short_frame.add_memory(0x2000, Bytes{9, 8, 7});
    REQUIRE(short_frame.add_registers(Bytes{1, 2, 3, 4}));
    short_frame.add_variable(5, -2);
    Bytes staged = frame_bytes(short_frame);
    staged.insert(staged.end(), {0, 0, 0}); // a staging record's padding

    TraceFrameBuffer buf(kFull, 4096);
    REQUIRE(buf.commit_bytes(staged, 0x400123, kShort) == Commit::Stored);
    REQUIRE(buf.commit(full, 0x400456) == Commit::Stored);
    CHECK(buf.info(0)->size == short_frame.size());
    CHECK(buf.info(0)->registers_valid == kShort);
    CHECK(buf.info(1)->registers_valid == 0);
    CHECK(buf.frame(0)->registers()->size() == kShort);
    CHECK(buf.frame(0)->variable(5) == -2);

    Bytes expected = frame_bytes(full);
    expected.insert(expected.end(), full.bytes().begin(), full.bytes().end());
    CHECK(buf.raw_size() == expected.size());
    for (std::size_t chunk : {1u, 7u, 64u})
        CHECK(read_all(buf, chunk) == expected);
}
