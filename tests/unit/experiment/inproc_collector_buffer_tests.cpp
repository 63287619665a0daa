// Where records go: chunks drained while threads write, new generations, the circular
// buffer's reuse of sealed chunks and the linear budget.
#include "tests/unit/experiment/inproc_collector_fixture.hpp"

using namespace tpagent::inproc_collector_fixture;

namespace {

// Four threads hit one tracepoint 20000 times each (circular) while this thread drains.
struct ConcurrentRun {
    static constexpr int kThreads = 4;
    static constexpr std::uint64_t kHits = 20000;
    std::size_t total = 0;
    std::size_t passes = 0;             // drains while the threads ran
    std::size_t backward = 0;           // a thread's record drained after a later one of its
    std::vector<std::vector<int>> seen; // [thread][sequence]: times drained
};

ConcurrentRun run_concurrently() {
    ConcurrentRun run;
    constexpr int kThreads = ConcurrentRun::kThreads;
    constexpr std::uint64_t kHits = ConcurrentRun::kHits;
    run.seen.assign(kThreads, std::vector<int>(kHits, 0));
    Config config; // circular
    // R (thread in rax, sequence in rbx) and M: the thread's own sequence word, at rsi.
    TracepointRecord& rec =
        config.add(5, 0x1000, {registers_action(), memory_action(0, 8, regnum("rsi"))});
    config.start();
    std::vector<std::uint64_t> last(kThreads, 0);
    std::vector<bool> any(kThreads, false);
    auto take = [&] {
        take_frames([&](const RecordHeader& rh, std::span<const std::uint8_t> staged) {
            Frame f;
            const std::string problem = parse(rh, staged, f);
            INFO(problem);
            REQUIRE(problem.empty());
            REQUIRE(f.has_registers);
            REQUIRE(f.memory.size() == 1);
            const std::uint64_t t = register_in(f.registers, "rax");
            const std::uint64_t seq = register_in(f.registers, "rbx");
            REQUIRE(t < static_cast<std::uint64_t>(kThreads));
            REQUIRE(seq < kHits);
            CHECK(load<std::uint64_t>(f.memory[0].bytes.data()) == seq);
            ++run.seen[t][seq];
            if (any[t] && seq < last[t]) ++run.backward;
            any[t] = true;
            last[t] = seq;
            ++run.total;
        });
    };
    on_threads(
        kThreads,
        [&](int t) {
            Block block;
            std::uint64_t sequence = 0;
            block.set("rax", static_cast<std::uint64_t>(t));
            block.set("rsi", address_of(&sequence));
            for (std::uint64_t i = 0; i < kHits; ++i) {
                sequence = i;
                block.set("rbx", i);
                hit(rec, block);
            }
        },
        [&] {
            take();
            ++run.passes;
        });
    take();
    CHECK(header().dropped_frames.load() == 0);
    CHECK(stop_reason() == StopReason::None);
    CHECK(drain().empty());
    return run;
}

} // namespace

TEST_CASE("inproc: four threads x 20000 hits drained while they run: each record once",
          "[inproc]") {
    const ConcurrentRun run = run_concurrently();
    INFO("drain passes while running: " << run.passes);
    CHECK(run.total == ConcurrentRun::kThreads * ConcurrentRun::kHits);
    std::size_t missing = 0, repeated = 0;
    for (const auto& thread : run.seen)
        for (int n : thread) {
            missing += n == 0;
            repeated += n > 1;
        }
    CHECK(missing == 0);
    CHECK(repeated == 0);
}

// A thread that moves from chunk A to chunk B during a drain: B's newer records must not come
// out before the rest of A (drain goes by the chunks' sequence, re-reading `committed`).
TEST_CASE("inproc: a thread's records are drained in the order it staged them", "[inproc]") {
    const ConcurrentRun run = run_concurrently();
    INFO("drain passes while running: " << run.passes);
    CHECK(run.backward == 0);
}

TEST_CASE("inproc: the linear budget stops the trace with BufferFull", "[inproc]") {
    // One frame's staged record. The collector charges the budget that much per frame, or
    // (an older accounting) that much plus the R block widened to the full `g` size; either
    // way the frames never take more than the budget.
    std::uint64_t size = 0;
    {
        Config config;
        TracepointRecord& rec = config.add(1, 0x1000, {registers_action()});
        size = hit_once(config, rec).header.size;
    }
    const std::uint64_t widened = size + host().g_size() - frame_block_bytes();

    SECTION("one thread: the frames the budget holds, then nothing") {
        const std::uint64_t budget = 10 * size + size / 2; // below one claim (64 KiB)
        Config config(false, static_cast<std::int64_t>(budget));
        TracepointRecord& rec = config.add(2, 0x1000, {registers_action()});
        config.start();
        Block block;
        hit_numbered(rec, block, "rbx", 20);
        auto frames = drain();
        INFO("record " << size << " bytes, widened " << widened << ", budget " << budget);
        CHECK((frames.size() == budget / size || frames.size() == budget / widened));
        for (std::uint64_t i = 0; i < frames.size(); ++i)
            CHECK(register_in(frames[i].registers, "rbx") == i);
        CHECK(stop_reason() == StopReason::BufferFull);
        CHECK(header().stop_tracepoint == 2);
        CHECK(header().tracing.load() == 0);
        hit(rec, block);
        CHECK(drain().empty());
    }

    SECTION("four threads: about N frames, never more than the budget holds") {
        constexpr std::uint64_t N = 2000;
        const std::uint64_t budget = N * size;
        Config config(false, static_cast<std::int64_t>(budget));
        TracepointRecord& rec = config.add(2, 0x1000, {registers_action()});
        config.start();
        on_threads(4, [&](int) {
            Block block;
            for (int i = 0; i < 1000; ++i)
                hit(rec, block);
        });
        auto frames = drain();
        INFO("record " << size << " bytes, widened " << widened << ", " << frames.size()
                       << " frames");
        CHECK(frames.size() <= N);
        // Each thread may leave up to one claim of credit unused (at most a 64th of what was
        // left, or a frame), and the stopping claim may leave less than a frame.
        CHECK(frames.size() * widened + 4 * (budget / 64 + widened) + widened >= budget);
        CHECK(stop_reason() == StopReason::BufferFull);
        CHECK(header().tracing.load() == 0);
        Block block;
        hit(rec, block);
        CHECK(drain().empty());
    }
}

TEST_CASE("inproc: a small linear buffer is filled by two writers, not ended by the second",
          "[inproc]") {
    std::uint64_t size = 0;
    {
        Config config;
        TracepointRecord& rec = config.add(1, 0x1000, {registers_action()});
        size = hit_once(config, rec).header.size;
    }
    // Far below the 64 KiB a writer may claim at once: the first writer's one frame must not
    // take it all (it did, and the second writer's first frame stopped the trace).
    const std::uint64_t budget = 40 * size;
    Config config(false, static_cast<std::int64_t>(budget));
    TracepointRecord& rec = config.add(2, 0x1000, {registers_action()});
    config.start();
    on_threads(1, [&](int) {
        Block block;
        hit(rec, block);
    });
    on_threads(1, [&](int) {
        Block block;
        for (int i = 0; i < 100; ++i)
            hit(rec, block);
    });
    const auto frames = drain();
    INFO("record " << size << " bytes, " << frames.size() << " frames");
    CHECK(frames.size() <= budget / size);
    // The budget is charged a record's size a frame. Lost: the first writer's unused credit
    // (one frame: a 64th of the buffer is less) and what the last claim leaves, under a frame.
    CHECK(frames.size() + 2 >= budget / size);
    CHECK(stop_reason() == StopReason::BufferFull);
}

TEST_CASE("inproc: a new generation drops the old chunks and records still arrive", "[inproc]") {
    Config config;
    TracepointRecord& rec = config.add(1, 0x1000, {registers_action()});
    config.start();
    Block block;

    // A thread takes a chunk, then waits while tpagent starts a new run.
    std::atomic<int> phase{0};
    std::thread other([&] {
        Block b;
        b.set("rax", 99);
        hit(rec, b);
        phase = 1;
        while (phase.load() != 2)
            ;
        // It ends in the new run: its old chunk is not its to seal any more.
    });
    while (phase.load() != 1)
        ;
    block.set("rax", 1);
    hit(rec, block); // the main thread's chunk in the old generation

    header().tracing.store(0);
    configure_chunks(kTestBuffer); // new generation: every chunk empty, nothing to find
    header().tracing.store(1);
    CHECK(drain().empty());

    block.set("rax", 2);
    hit(rec, block); // a new chunk
    phase = 2;
    other.join();
    block.set("rax", 3);
    hit(rec, block);
    auto frames = drain();
    REQUIRE(frames.size() == 2);
    CHECK(register_in(frames[0].registers, "rax") == 2);
    CHECK(register_in(frames[1].registers, "rax") == 3);
    // The main thread still owns its chunk: the other thread's exit did not seal it.
    std::size_t owned = 0;
    for (std::size_t i = 0; i < header().chunk_count; ++i) {
        const auto s = static_cast<ChunkState>(chunk_at(shared().local(), i)->state.load());
        CHECK(s != ChunkState::Sealed);
        owned += s == ChunkState::Owned;
    }
    CHECK(owned == 1);
    block.set("rax", 4);
    hit(rec, block);
    frames = drain();
    REQUIRE(frames.size() == 1);
    CHECK(register_in(frames[0].registers, "rax") == 4);
}

// Records of ~250 KB, two per 512 KiB chunk; a 1 MiB buffer gets 4 chunks.
TEST_CASE("inproc: circular: a full buffer reuses the chunk sealed longest ago", "[inproc]") {
    std::vector<std::uint8_t> memory(250000, 0x5a);
    Config config(true, 0, 1u << 20);
    // 1 MiB in chunks of 512 KiB (less their headers): three sealed chunks are kept, and 64
    // more are there for writers to fill.
    REQUIRE(header().circular_keep == 3);
    REQUIRE(header().chunk_count == 3 + 64);
    TracepointRecord& rec =
        config.add(1, 0x1000, {memory_action(address_of(memory.data()), 250000)});
    config.start();
    Block block;
    hit_numbered(rec, block, "rbx", 8);
    CHECK(drain().size() == 8);
    CHECK(frames_reader()->frames_created() == 8);
    // The first chunk (frames 0 and 1) is reused: its frames are gone, and said so.
    const std::uint64_t discards = frames_reader()->discards();
    block.set("rbx", 8);
    hit(rec, block);
    CHECK(frames_reader()->discards() == discards + 1);
    CHECK(header().dropped_frames.load() == 0);
    CHECK(header().discarded_frames.load() == 2);
    CHECK(frames_reader()->frames_created() == 9);
    auto frames = drain();
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].memory.size() == 4);
    CHECK(stop_reason() == StopReason::None);
}

TEST_CASE("inproc: recording: a sealed chunk is reused only once recorded, else the hit is "
          "dropped",
          "[inproc]") {
    std::vector<std::uint8_t> memory(250000, 0x5a);
    Config config(true, 0, 1u << 20); // 3 sealed chunks kept, 64 more for writers
    header().recording = 1;
    TracepointRecord& rec =
        config.add(1, 0x1000, {memory_action(address_of(memory.data()), 250000)});
    config.start();
    header().recording = 1; // (start configures the run anew)
    Block block;
    // Two frames a chunk: 67 chunks hold 134 frames, all kept while none is recorded.
    const unsigned fit = 2 * header().chunk_count;
    hit_numbered(rec, block, "rbx", fit);
    CHECK(header().dropped_frames.load() == 0);
    CHECK(header().discarded_frames.load() == 0);
    hit(rec, block); // every chunk is full and none is recorded
    CHECK(header().dropped_frames.load() == 1);
    CHECK(header().discarded_frames.load() == 0);
    CHECK(drain().size() == fit);
    // Two seals recorded: their chunks take the next four frames, which leave the buffer
    // (moved to the files); then the writer is out of chunks again.
    header().recorded_count.store(2, std::memory_order_release);
    for (int i = 0; i < 5; ++i)
        hit(rec, block);
    CHECK(header().discarded_frames.load() == 4);
    CHECK(header().dropped_frames.load() == 2);
    CHECK(drain().size() == 4);
    CHECK(stop_reason() == StopReason::None);
}

// Yields of writers waiting in the test below.
std::atomic<int> g_waits{0};

// A writer needing a chunk when every fresh one is taken and the only sealed one is between its
// sealer's two steps (counted, not yet in the ring): the writer waits for that chunk rather than
// dropping its frame, and takes it, not whatever an entry left from a zeroed ring or an earlier
// run names.
TEST_CASE("inproc: a writer waits for a chunk whose sealer is between its two steps", "[inproc]") {
    Config config(true, 0, 1u << 20);
    void* r = shared().local();
    Header& h = header();
    const std::uint64_t generation = h.generation.load();
    // An earlier run's seal 0 of chunk 0 in the ring, as a run that sealed chunk 0 first leaves.
    sealed_ring(r)[0].store(0);
    configure_chunks(1u << 20);
    REQUIRE(h.generation.load() == generation + 1);
    std::vector<ChunkHeader*> owned;
    for (std::uint32_t i = 0; i < h.chunk_count; ++i)
        owned.push_back(take_chunk(r, generation + 1, nullptr));
    REQUIRE(owned.back() != nullptr);
    CHECK(take_chunk(r, generation + 1, nullptr) == nullptr);

    // Chunk 5's sealer, halfway: seal 0 counted, its ring entry not written.
    ChunkHeader* sealed = owned[5];
    sealed->state.store(static_cast<std::uint32_t>(ChunkState::Sealed));
    REQUIRE(h.sealed_count.fetch_add(1) == 0);
    // Without a way to wait, the writer gives up (and would drop its frame).
    CHECK(take_chunk(r, generation + 1, nullptr) == nullptr);

    g_waits = 0;
    std::atomic<ChunkHeader*> taken{nullptr};
    std::atomic<bool> returned{false};
    std::thread writer([&] {
        taken = take_chunk(r, generation + 1, [](int) {
            ++g_waits;
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        });
        returned = true;
    });
    while (g_waits.load() < 10 && !returned.load())
        std::this_thread::yield();
    CHECK_FALSE(returned.load());
    // The sealer's second step.
    sealed_ring(r)[0].store((std::uint64_t{0} << 16) | chunk_index(r, sealed));
    writer.join();
    CHECK(taken == sealed);
    CHECK(h.reused_count.load() == 1);

    // A sealer that never takes its second step (held by a ptrace stop, say): the wait ends,
    // and no later writer waits for that seal again.
    owned[6]->state.store(static_cast<std::uint32_t>(ChunkState::Sealed));
    REQUIRE(h.sealed_count.fetch_add(1) == 1);
    const YieldFn count = [](int) { ++g_waits; };
    g_waits = 0;
    CHECK(take_chunk(r, generation + 1, count) == nullptr);
    CHECK(g_waits.load() == 200);
    g_waits = 0;
    CHECK(take_chunk(r, generation + 1, count) == nullptr);
    CHECK(g_waits.load() == 0);
}

TEST_CASE("inproc: a frame copied while its chunk is reused is refused", "[inproc]") {
    std::vector<std::uint8_t> memory(250000, 0x5a);
    Config config(true, 0, 1u << 20);
    TracepointRecord& rec =
        config.add(1, 0x1000, {memory_action(address_of(memory.data()), 250000)});
    config.start();
    Block block;
    hit(rec, block);
    std::vector<trace::SharedFrame> found;
    frames_reader()->take_new(found);
    REQUIRE(found.size() == 1);
    std::vector<std::uint8_t> copy;
    CHECK(frames_reader()->copy(found[0], copy));
    CHECK(copy.size() == found[0].size);
    for (int i = 0; i < 8; ++i) // the first chunk comes round again
        hit(rec, block);
    CHECK_FALSE(frames_reader()->holds(found[0]));
    CHECK_FALSE(frames_reader()->copy(found[0], copy));
}

TEST_CASE("inproc: linear credit does not outlive its run", "[inproc]") {
    {
        Config config(false);
        TracepointRecord& small = config.add(1, 0x1000, {registers_action()});
        config.start();
        Block block;
        hit(small, block); // this thread claims budget credit it does not use up
        REQUIRE(drain().size() == 1);
    }
    // A new run with no room at all: nothing may be staged.
    Config config(false, 0);
    TracepointRecord& small = config.add(1, 0x1000, {registers_action()});
    config.start();
    Block block;
    hit(small, block);
    CHECK(drain().empty());
    CHECK(stop_reason() == StopReason::BufferFull);
}

namespace {
// A record of `size` bytes by `w`, its header saying so: where it went.
std::uint8_t* write_record(void* r, ChunkWriter& w, std::uint32_t size) {
    std::uint8_t* at = reserve_record(r, w, size, nullptr);
    REQUIRE(at != nullptr);
    RecordHeader rh{size, 0, 0x1000, 1};
    std::memcpy(at, &rh, sizeof rh);
    publish_record(w, size);
    return at;
}
} // namespace

// A followed child ended while its thread held a chunk (trace-follow-fork): tpagent hands the
// chunk to the next writer, of another process, which goes on after the records there; a chunk
// with less than an eighth left is sealed instead. A child per request would otherwise spend a
// chunk each.
TEST_CASE("inproc: an ended process's chunk goes to the next writer, after its records",
          "[inproc]") {
    Config config(false, std::int64_t{1} << 30, 1u << 20);
    void* r = shared().local();
    Header& h = header();
    ChunkWriter ended;
    ended.process = 7;
    for (int i = 0; i < 3; ++i)
        write_record(r, ended, 64);
    ChunkHeader* held = ended.chunk;
    REQUIRE(held->owner == 7);
    const std::uint32_t fresh = h.next_fresh.load();
    shared().release_chunks_of(6); // not its process: nothing
    CHECK(h.resumable_count.load() == 0);
    shared().release_chunks_of(7);
    CHECK(h.resumable_count.load() == 1);
    CHECK(held->state.load() == static_cast<std::uint32_t>(ChunkState::Owned));

    ChunkWriter next;
    next.process = 8;
    const std::uint8_t* at = write_record(r, next, 64);
    CHECK(next.chunk == held);
    CHECK(at == reinterpret_cast<std::uint8_t*>(held) + kChunkHeaderBytes + 3 * 64);
    CHECK(held->owner == 8);
    CHECK(held->frames.load() == 4);
    CHECK(h.resumable_count.load() == 0);
    CHECK(h.next_fresh.load() == fresh); // no chunk taken for it
    std::vector<trace::SharedFrame> found;
    frames_reader()->take_new(found);
    CHECK(found.size() == 4);

    // Filled to within an eighth of its end, then its process ends: sealed, not handed on.
    const std::uint32_t room = static_cast<std::uint32_t>(chunk_payload(h)) - 4 * 64;
    write_record(r, next, (room - room / 16) / 8 * 8);
    REQUIRE(next.chunk == held);
    const std::uint64_t seals = h.sealed_count.load();
    shared().release_chunks_of(8);
    CHECK(h.resumable_count.load() == 0);
    CHECK(h.sealed_count.load() == seals + 1);
    CHECK(held->state.load() == static_cast<std::uint32_t>(ChunkState::Sealed));
}
