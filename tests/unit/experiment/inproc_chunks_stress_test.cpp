// The chunk protocol (inproc/frame_chunks.hpp) under load: writer threads append records
// through the functions the collector calls (reserve_record, claim_linear, publish_record,
// seal_chunk), tpagent appends frames of its own (SharedBufferReader::append), and a reader indexes
// and copies frames as tpagent does (SharedBufferReader, TraceFrameBuffer), all at once, for about
// a second. The protocol is compiled into this test rather than exercised through
// libtpagent-inproc.so: that library is built without sanitizers and maps the shared buffer at
// another address than tpagent's side, so ThreadSanitizer could see neither its accesses nor
// their pairing with the reader's. Tag [tsan]: the tsan preset runs these under
// ThreadSanitizer (scripts/test.sh tsan).
#include "inproc/frame_chunks.hpp"
#include "inproc/shared_buffer.hpp"
#include "experiment/shared_buffer_reader.hpp"
#include "experiment/shared_buffer.hpp"
#include "trace/frame_format.hpp"
#include "trace/trace_frame_buffer.hpp"
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

#if defined(__SANITIZE_THREAD__)
#define TP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TP_TSAN 1
#endif
#endif
#ifdef TP_TSAN
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
#endif

namespace {

using namespace tpagent;
using namespace tpagent::inproc;
using experiment::SharedBuffer;
using experiment::SharedBufferReader;
using Clock = std::chrono::steady_clock;

constexpr int kWriters = 4;
constexpr std::uint32_t kTpagent = kWriters; // the writer number of tpagent's own frames
// How long the writers run: longer in circular mode, where a reader meets a chunk changing
// hands only now and then (under ThreadSanitizer, a few times a second).
constexpr auto kLinearTime = std::chrono::milliseconds(800);
constexpr auto kCircularTime = std::chrono::milliseconds(1500);
// Records of up to 4 KiB: a 64 KiB chunk holds a few dozen, so chunks change hands often.
constexpr std::uint32_t kMaxLength = 4000;

// A shared buffer as the agent library makes it (a memfd of that name, its header), mapped by
// SharedBuffer::open as tpagent maps a program's. Where a test of this process loaded the
// library, open() may find the library's shared buffer first: either serves, each test configuring
// its own run. Our memfd is closed before returning, so it is never found later.
std::shared_ptr<SharedBuffer> open_shared_buffer() {
    const int fd = memfd_create(kMemfdName, MFD_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, static_cast<off_t>(kSharedBufferBytes)) == 0);
    void* p = mmap(nullptr, kHeaderBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    REQUIRE(p != MAP_FAILED);
    Header* h = header_of(p);
    h->version = kVersion;
    h->shared_buffer_bytes = static_cast<std::uint32_t>(kSharedBufferBytes);
    h->shared_buffer_address = reinterpret_cast<std::uint64_t>(p);
    __atomic_store_n(&h->magic, kMagic, __ATOMIC_RELEASE);
    munmap(p, kHeaderBytes);
    auto shared = SharedBuffer::open(getpid());
    close(fd);
    INFO((shared ? std::string() : shared.error().text));
    REQUIRE(shared);
    return std::shared_ptr<SharedBuffer>(std::move(*shared));
}

// Record `seq` of writer `w`: one M block of a length and bytes both derive from (w, seq), so
// a torn or misplaced frame shows. Its bytes go c, c + 7, c + 14, ... (mod 256) for a c of
// (w, seq): a run of `steps` starting at c * 7^-1 (mod 256).
std::uint32_t length_of(std::uint32_t w, std::uint64_t seq) {
    return 8 + static_cast<std::uint32_t>((seq * 37 + w * 11) % kMaxLength);
}
std::uint64_t address_of(std::uint32_t w, std::uint64_t seq) {
    return (std::uint64_t{w} << 48) | seq;
}
const std::uint8_t* bytes_of(std::uint32_t w, std::uint64_t seq) {
    static const auto steps = [] {
        std::array<std::uint8_t, 256 + 8 + kMaxLength> s{};
        for (std::size_t j = 0; j < s.size(); ++j)
            s[j] = static_cast<std::uint8_t>(j * 7);
        return s;
    }();
    const auto c = static_cast<std::uint8_t>(seq * 131 + w * 17);
    return steps.data() + static_cast<std::uint8_t>(c * 183); // 7 * 183 = 1 (mod 256)
}
std::uint64_t pc_of(std::uint32_t w, std::uint64_t seq) {
    return 0x400000 + (std::uint64_t{w} << 32) + seq;
}
// Frame header and the M block of record (w, seq) at `frame`; returns the frame's length.
std::size_t write_frame(std::uint8_t* frame, std::uint32_t w, std::uint64_t seq) {
    const std::uint32_t length = length_of(w, seq);
    std::uint8_t* p = frame + trace::kFrameHeaderSize;
    p = trace::store_memory_header(p, address_of(w, seq), static_cast<std::uint16_t>(length));
    std::memcpy(p, bytes_of(w, seq), length);
    const auto data = static_cast<std::uint32_t>(trace::kMemoryBlockHeaderSize + length);
    trace::store_frame_header(frame, static_cast<std::uint16_t>(w + 1), data);
    return trace::kFrameHeaderSize + data;
}
std::uint64_t bound_of(std::uint32_t w, std::uint64_t seq) {
    return (kRecordBlocksOffset + trace::kMemoryBlockHeaderSize + length_of(w, seq) + 7) & ~7ull;
}

// The writer and record a frame's bytes say they are, if they are whole and consistent.
struct Identity {
    std::uint32_t writer;
    std::uint64_t seq;
};
std::optional<Identity> identify(std::span<const std::uint8_t> frame) {
    if (frame.size() < trace::kFrameHeaderSize + trace::kMemoryBlockHeaderSize) return {};
    const std::uint32_t w = trace::frame_tracepoint(frame.data()) - 1u;
    const std::uint8_t* block = frame.data() + trace::kFrameHeaderSize;
    const std::uint64_t address = trace::memory_block_address(block);
    const std::uint64_t seq = address & ((std::uint64_t{1} << 48) - 1);
    const std::uint32_t length = trace::memory_block_length(block);
    if (w > kTpagent || address >> 48 != w || length != length_of(w, seq) ||
        block[0] != trace::kMemoryBlock ||
        trace::frame_length(frame.data()) != trace::kMemoryBlockHeaderSize + length ||
        frame.size() != trace::kFrameHeaderSize + trace::kMemoryBlockHeaderSize + length ||
        std::memcmp(block + trace::kMemoryBlockHeaderSize, bytes_of(w, seq), length) != 0)
        return {};
    return Identity{w, seq};
}

// Frame stamps: increasing for each writer, comparable across them. Relaxed: the counter
// must not order the writers' accesses for ThreadSanitizer.
std::atomic<std::uint64_t> g_stamp{1};

// One writer, as the collector writes a hit's record: reserve, blocks, linear budget, headers,
// publish; its chunk sealed when it ends. Returns how many records it published (0 .. n-1).
std::uint64_t write_records(void* shared, std::uint32_t w, Clock::time_point deadline,
                            std::uint64_t& dropped) {
    Header* h = header_of(shared);
    ChunkWriter writer;
    std::uint64_t seq = 0;
    while (Clock::now() < deadline) {
        const std::uint64_t bound = bound_of(w, seq);
        std::uint8_t* record = reserve_record(shared, writer, bound, [](int n) {
            if (n < 20)
                std::this_thread::yield();
            else
                std::this_thread::sleep_for(std::chrono::microseconds(50));
        });
        if (!record) { // linear: no chunk left; circular: none to be had now
            ++dropped;
            if (!h->circular) break;
            continue;
        }
        const std::uint64_t stamp = g_stamp.fetch_add(1, std::memory_order_relaxed);
        const std::size_t frame = write_frame(record + sizeof(RecordHeader), w, seq);
        const std::uint64_t size = (sizeof(RecordHeader) + frame + 7) & ~7ull;
        if (!h->circular && !claim_linear(h, writer, static_cast<std::int64_t>(size))) break;
        trace::store_le<std::uint64_t>(record, size | std::uint64_t{w} << 32);
        trace::store_le<std::uint64_t>(record + 8, pc_of(w, seq));
        trace::store_le<std::uint64_t>(record + 16, stamp);
        publish_record(writer, static_cast<std::uint32_t>(size));
        // More writers than CPUs here: the reader gets its turns.
        if (++seq % 8 == 0) std::this_thread::yield();
    }
    // A thread that ends seals its chunk (the collector's on_thread_exit).
    if (writer.chunk) seal_chunk(shared, writer.chunk);
    return seq;
}

// In circular mode the reader copies bytes a writer may be overwriting meanwhile: a seqlock,
// whose epoch check refuses such a copy, and a data race all the same for ThreadSanitizer.
// It ignores the reader's accesses there; the writers' are checked against each other, and
// the linear test checks the reader's.
class SeqlockReads {
  public:
    explicit SeqlockReads(bool racy) : racy_(racy) {
#ifdef TP_TSAN
        if (racy_) AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
#endif
    }
    ~SeqlockReads() {
#ifdef TP_TSAN
        if (racy_) AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
#endif
    }
    SeqlockReads(const SeqlockReads&) = delete;
    SeqlockReads& operator=(const SeqlockReads&) = delete;

  private:
    bool racy_;
};

struct Tally {
    std::vector<std::vector<int>> seen; // [writer][seq]: times found
    std::vector<std::int64_t> last;     // [writer]: the last seq found
    std::uint64_t found = 0, copied = 0, refused = 0, backward = 0, bad = 0, served = 0;
    std::uint64_t recopied = 0, gone = 0, appended = 0, passes = 0;
    std::vector<trace::SharedFrame> earlier; // the previous pass's frames
    Tally() : seen(kTpagent + 1), last(kTpagent + 1, -1) {}
    void count(std::uint64_t pc) {
        const std::uint64_t w = (pc - pc_of(0, 0)) >> 32, seq = (pc - pc_of(0, 0)) & 0xffffffff;
        if (w > kTpagent) {
            ++bad;
            return;
        }
        auto& s = seen[w];
        if (s.size() <= seq) s.resize(seq + 1);
        ++s[seq];
        if (static_cast<std::int64_t>(seq) <= last[w]) ++backward;
        last[w] = static_cast<std::int64_t>(seq);
    }
    // A copy of f: whole and f's, or refused and f no longer held.
    bool check_copy(SharedBufferReader& frames, const trace::SharedFrame& f,
                    std::vector<std::uint8_t>& copy) {
        if (!frames.copy(f, copy)) {
            if (frames.holds(f)) ++bad;
            return false;
        }
        const auto id = identify(copy);
        if (!id || f.pc != pc_of(id->writer, id->seq)) ++bad;
        return true;
    }
};

// What tpagent does meanwhile: takes the new frames and copies each (the copy checked against
// its chunk's epoch); one pass in 8 also copies some of the previous pass's frames again (more
// likely reused by now), serves a few through a TraceFrameBuffer (a second reader of its own:
// an index over the same chunks) and, given `append`, writes one frame of its own. (The other
// passes come quicker, so more of them meet a chunk as it changes hands.)
void read_pass(SharedBufferReader& frames, const trace::TraceFrameBuffer& buffer, bool circular,
               bool append, Tally& t) {
    std::vector<trace::SharedFrame> found;
    std::vector<std::uint8_t> copy;
    const bool more = t.passes++ % 8 == 0;
    {
        SeqlockReads racy(circular);
        frames.take_new(found);
        for (const auto& f : found) {
            ++t.found;
            t.count(f.pc);
            if (t.check_copy(frames, f, copy))
                ++t.copied;
            else
                ++t.refused;
        }
        if (!more) {
            if (!found.empty()) t.earlier = std::move(found);
            return;
        }
        for (std::size_t i = 0; i < t.earlier.size(); i += 4)
            if (t.check_copy(frames, t.earlier[i], copy))
                ++t.recopied;
            else
                ++t.gone;
        if (!found.empty()) t.earlier = std::move(found);
        const std::size_t n = buffer.frame_count();
        for (std::size_t i : {std::size_t{0}, n / 2, n - 1}) {
            if (i >= n) continue;
            if (const auto view = buffer.frame(i)) {
                ++t.served;
                if (!identify(view->bytes())) ++t.bad;
            } else if (!circular) {
                ++t.bad; // linear: nothing is overwritten
            }
        }
    }
    if (!append) return;
    std::vector<std::uint8_t> own(trace::kFrameHeaderSize + trace::kMemoryBlockHeaderSize + 8 +
                                  kMaxLength);
    const std::size_t length = write_frame(own.data(), kTpagent, t.appended);
    if (frames.append(std::span(own.data(), length), pc_of(kTpagent, t.appended)) ==
        trace::CommitResult::Stored)
        ++t.appended;
}

struct Run {
    std::vector<std::uint64_t> published = std::vector<std::uint64_t>(kWriters);
    std::uint64_t dropped = 0;
    Tally tally;
    std::uint64_t passes = 0;
    std::uint64_t discards = 0;
    std::uint64_t created = 0;
    std::uint64_t total() const {
        std::uint64_t n = tally.appended;
        for (std::uint64_t p : published)
            n += p;
        return n;
    }
};

// One run: kWriters writers until the deadline (or, linear, the buffer is full), tpagent
// reading meanwhile, then once more after they ended.
Run run(const std::shared_ptr<SharedBuffer>& shared, bool circular, std::size_t buffer_bytes,
        Clock::time_point deadline) {
    shared->begin_configuration(circular, static_cast<std::int64_t>(buffer_bytes));
    REQUIRE(shared->configure_chunks(buffer_bytes, 1024));
    SharedBufferReader frames(shared);
    SharedBufferReader index_source(shared);
    trace::TraceFrameBuffer buffer(0);
    buffer.share(&index_source);
    Run r;
    std::vector<std::uint64_t> dropped(kWriters, 0);
    std::atomic<int> running{kWriters};
    std::vector<std::thread> threads;
    for (std::uint32_t w = 0; w < kWriters; ++w)
        threads.emplace_back([&, w] {
            r.published[w] = write_records(shared->local(), w, deadline, dropped[w]);
            running.fetch_sub(1);
        });
    while (running.load() > 0) {
        read_pass(frames, buffer, circular, true, r.tally);
        ++r.passes;
    }
    for (auto& t : threads)
        t.join();
    read_pass(frames, buffer, circular, false, r.tally);
    for (std::uint64_t d : dropped)
        r.dropped += d;
    r.discards = frames.discards();
    r.created = frames.frames_created();
    if (!circular) { // every frame indexed, whole
        const std::size_t n = buffer.frame_count();
        CHECK(n == r.total());
        for (std::size_t i = 0; i < n; i += 97) {
            const auto view = buffer.frame(i);
            CHECK((view && identify(view->bytes())));
        }
    }
    return r;
}

// Each frame found at most once (`all`: every one, each writer's in its order), whole.
void check_found_once(const Run& r, bool all) {
    const Tally& t = r.tally;
    CHECK(t.bad == 0);
    // Circular: take_new orders its pass by the chunks' `taken` noted first, and a reused chunk
    // (Sealed, not Free) is noted before its new taker writes `taken`: a writer's records in a
    // chunk it took during the pass may come out before those of one it took earlier, in the
    // next pass (TraceFrameBuffer merges them back by stamp).
    if (all) CHECK(t.backward == 0);
    std::uint64_t missing = 0, repeated = 0;
    for (std::uint32_t w = 0; w <= kTpagent; ++w) {
        const std::uint64_t n = w < kTpagent ? r.published[w] : t.appended;
        const auto& s = t.seen[w];
        CHECK(s.size() <= n);
        for (std::uint64_t i = 0; i < n; ++i) {
            const int times = i < s.size() ? s[i] : 0;
            missing += times == 0;
            repeated += times > 1;
        }
    }
    CHECK(repeated == 0);
    if (all) CHECK(missing == 0);
}

} // namespace

TEST_CASE("inproc chunks: writers and a reader at once, linear: every frame found once, whole",
          "[chunks][tsan]") {
    const auto shared = open_shared_buffer();
    // Runs of a small buffer, one after the other: each starts with the writers taking fresh
    // chunks at once and ends with the budget running out under them.
    const auto end = Clock::now() + kLinearTime;
    int runs = 0;
    do {
        const Run r = run(shared, false, 512u << 10, end);
        INFO("run " << runs << ": " << r.passes << " passes, " << r.tally.found << " found");
        CHECK(r.tally.refused == 0);
        CHECK(r.tally.gone == 0);
        CHECK(r.discards == 0);
        check_found_once(r, true);
        CHECK(r.created == r.total());
        CHECK(r.tally.found == r.total());
        ++runs;
    } while (Clock::now() < end);
}

TEST_CASE("inproc chunks: writers and a reader at once, circular: frames of reused chunks are "
          "refused, never served torn",
          "[chunks][tsan]") {
    const auto shared = open_shared_buffer();
    // 256 KiB: five 64 KiB chunks kept, so the writers reuse chunks all the time. (With a
    // reused chunk's `committed` reset after its epoch bump, a reader took thousands of old
    // records again per run and had overwritten ones copied as whole: bad and repeated.)
    const Run r = run(shared, true, 256u << 10, Clock::now() + kCircularTime);
    INFO(r.passes << " passes, " << r.tally.found << " found, " << r.tally.refused << "+"
                  << r.tally.gone << " refused, " << r.discards << " chunks reused, " << r.dropped
                  << " dropped, " << r.tally.backward << " out of a writer's order");
    check_found_once(r, false);
    CHECK(r.tally.copied > 0);
    CHECK(r.discards > 0);
    CHECK(r.created == r.total());
}
