// Writing frames into the shared buffer's chunks: the protocol every writer follows, the
// program's collecting threads (collector.cpp) and tpagent for its trap tracepoints' frames
// (experiment/shared_buffer_reader.cpp) alike. Header-only and freestanding: the in-process agent
// has no C library to lean on.
//
// A writer owns one chunk at a time and appends records to it; only `committed` (release)
// publishes a record. A full chunk is sealed: its index goes into the sealed ring. A writer
// needing a chunk takes a fresh one (never used this run) and, once none is left, in circular
// mode the one sealed longest ago, whose frames are thereby discarded: its epoch is bumped
// before any of its bytes change, so a reader copying a frame out sees whether it was
// overwritten meanwhile. Linear mode never reuses a chunk: its writers take record bytes from
// the budget, and the first record that does not fit stops the trace.
//
// Memory orders. Record bytes and a chunk's `generation` and `taken` are plain; the atomics
// that make them safe on a weakly ordered CPU (arm64; x86-64 keeps stores and loads in order
// anyway), each a release paired with an acquire:
// - A record: publish_record's release store of `committed`, the reader's acquire load of it
//   (SharedBufferReader::take_new), which reads only the bytes below what it loaded. A reused
//   chunk's `committed` is reset before its epoch is bumped (an RMW, acq_rel): a reader that loads
//   the new epoch with acquire reads the reset or a later value.
// - A chunk taken: the release store of state Owned, the reader's acquire load of `state`: it
//   then reads `taken`, and finds the taker's earlier chunks final (take_new reads chunks in
//   take order).
// - A chunk reused: the sealer's `sealed_count` increment (acq_rel, after its last record), the
//   reuser's acquire load of that count (or of a later seal's: RMWs continue the release
//   sequence), so the sealer's writes happen before the reuser's; the ring entry's
//   release/acquire says it again. The CAS on `reused_count` gives each seal to one reuser.
// - Overwritten bytes, circular mode: a seqlock on `epoch`. The taker bumps it and then a
//   release fence comes before any byte of the chunk changes; the reader copies, then an acquire
//   fence, then loads `epoch` again: a copy that read a byte written after a bump sees the bump.
//   On arm64 these fences are the DMB between the epoch's store and the bytes' stores, and the
//   one between the copy's loads and the reload. In the C++ model the copy still races with
//   those stores (plain bytes, not atomics), which ThreadSanitizer reports and cannot check;
//   tests/unit/experiment/inproc_chunks_stress_test.cpp checks that no torn copy is accepted.
// - Counters (`frames`, `discarded_frames`, `linear_budget`, `next_fresh`, `take_count`):
//   relaxed. They publish nothing: RMWs keep the shared ones exact, and the figures tpagent
//   makes of them (frames_created, bytes_free) may lag a moment.
#pragma once
#include "inproc/shared_buffer.hpp"
#include <atomic>
#include <cstdint>

namespace tpagent::inproc {

// One writer's state for a run.
struct ChunkWriter {
    ChunkHeader* chunk = nullptr;
    std::uint64_t generation = 0;   // the run `chunk` and `linear_credit` belong to
    std::int64_t linear_credit = 0; // budget bytes this writer already claimed
    std::uint32_t process = 0;      // the writer's process: its chunks' owner (0: tpagent)
};

inline std::uint32_t chunk_index(void* shared, const ChunkHeader* c) {
    const auto offset = static_cast<std::uint64_t>(reinterpret_cast<const std::uint8_t*>(c) -
                                                   static_cast<const std::uint8_t*>(shared));
    return static_cast<std::uint32_t>((offset - kChunksOffset) / header_of(shared)->chunk_bytes);
}

// The ring's entries hold (seal number << 16) | chunk index: a reader can tell an entry its
// sealer has not written yet from an older one.
inline constexpr std::uint64_t kSealNumberMask = (std::uint64_t{1} << 48) - 1;

inline void seal_chunk(void* shared, ChunkHeader* c) {
    Header* h = header_of(shared);
    c->state.store(static_cast<std::uint32_t>(ChunkState::Sealed), std::memory_order_release);
    // Release: the chunk's records happen before a reuser's writes (reuse_sealed_chunk).
    const std::uint64_t n = h->sealed_count.fetch_add(1, std::memory_order_acq_rel);
    sealed_ring(shared)[n % h->chunk_count].store(
        ((n & kSealNumberMask) << 16) | chunk_index(shared, c), std::memory_order_release);
}

// How a writer that has no other chunk gives way to a sealer between its two steps (counted,
// not yet in the ring), at its n-th wait: the program's threads yield their CPU, then sleep.
using YieldFn = void (*)(int n);

// The chunk sealed longest ago, taken out of the ring; null when none is sealed. An entry still
// being written is spun on briefly; then, given `yield`, waited for: a sealer preempted between
// its two steps would otherwise cost a frame (8 threads on 2 CPUs lost 2 in 40000). The wait is
// bounded, and a seal once waited for in vain (its sealer held by a ptrace stop, say) is not
// waited for again: later writers only spin. An entry naming no chunk of the run is refused.
// Recording: a chunk tpagent has not recorded yet is not taken (null).
inline ChunkHeader* reuse_sealed_chunk(void* shared, YieldFn yield = nullptr) {
    constexpr int kSpins = 1000;
    constexpr int kWaits = 200;
    Header* h = header_of(shared);
    if (h->chunk_count == 0) return nullptr;
    int waits = 0;
    for (int tries = 0; tries < kSpins + waits + 1; ++tries) {
        std::uint64_t head = h->reused_count.load(std::memory_order_acquire);
        // Acquire: a count above `head` comes from seal `head`'s increment or a later one, so
        // that seal's chunk writes happen before ours.
        if (head >= h->sealed_count.load(std::memory_order_acquire)) return nullptr;
        // Acquire: tpagent's reads of the recorded chunk happen before our writes to it.
        if (h->recording && head >= h->recorded_count.load(std::memory_order_acquire))
            return nullptr; // not recorded yet: no waiting for the disk here
        const std::uint64_t entry =
            sealed_ring(shared)[head % h->chunk_count].load(std::memory_order_acquire);
        if ((entry >> 16) != (head & kSealNumberMask)) { // its sealer is writing it
            if (tries < kSpins) continue;
            if (!yield || h->stalled_seal.load(std::memory_order_relaxed) == head) return nullptr;
            if (waits == kWaits) {
                h->stalled_seal.store(head, std::memory_order_relaxed);
                return nullptr;
            }
            yield(waits++);
            continue;
        }
        if ((entry & 0xffff) >= h->chunk_count) return nullptr;
        if (h->reused_count.compare_exchange_weak(head, head + 1, std::memory_order_acq_rel))
            return chunk_at(shared, entry & 0xffff);
    }
    return nullptr;
}

// A chunk an ended process left with room in it (Header::resumable_count), for a writer of
// process `owner` to go on filling as it is; null when there is none. Its earlier records
// stay as they are: its owner's `committed` release published them, and tpagent put it in
// its slot only once no thread of that process ran.
inline ChunkHeader* resume_chunk(void* shared, std::uint32_t owner) {
    Header* h = header_of(shared);
    if (h->resumable_count.load(std::memory_order_acquire) == 0) return nullptr;
    std::atomic<std::uint32_t>* slots = resumable_slots(shared);
    for (std::size_t i = 0; i < kMaxResumable; ++i) {
        std::uint32_t entry = slots[i].load(std::memory_order_acquire);
        if (entry == 0 || entry > h->chunk_count ||
            !slots[i].compare_exchange_strong(entry, 0, std::memory_order_acq_rel))
            continue;
        h->resumable_count.fetch_sub(1, std::memory_order_relaxed);
        ChunkHeader* c = chunk_at(shared, entry - 1);
        c->owner = owner;
        // (As for a chunk reused: a reader may read `taken` while it changes.)
        c->taken = h->take_count.fetch_add(1, std::memory_order_relaxed);
        c->state.store(static_cast<std::uint32_t>(ChunkState::Owned), std::memory_order_release);
        return c;
    }
    return nullptr;
}

// A chunk for a writer of process `owner` in run `generation`, emptied, or null.
inline ChunkHeader* take_chunk(void* shared, std::uint64_t generation, YieldFn yield,
                               std::uint32_t owner = 0) {
    Header* h = header_of(shared);
    ChunkHeader* c = resume_chunk(shared, owner);
    if (c) return c;
    // Circular: once the ring holds what the buffer's size asks for, its oldest chunk is reused
    // before a fresh one is taken. Fresh chunks are for more writers, not for more frames: each
    // writer gets a chunk however many write at once, and the newest frames of all are kept.
    if (h->circular && h->sealed_count.load(std::memory_order_acquire) -
                               h->reused_count.load(std::memory_order_acquire) >
                           h->circular_keep)
        c = reuse_sealed_chunk(shared);
    if (!c && h->next_fresh.load(std::memory_order_relaxed) < h->chunk_count) {
        const std::uint32_t i = h->next_fresh.fetch_add(1, std::memory_order_relaxed);
        if (i < h->chunk_count) c = chunk_at(shared, i);
    }
    if (!c && h->circular) c = reuse_sealed_chunk(shared, yield);
    if (!c) return nullptr;
    // Emptied before the epoch changes: a reader whose acquire load sees the new epoch (the
    // bump's release) then reads `committed` 0 or later, never the chunk's previous use's. (Reset
    // after the bump, a reader between the two took the old records again as the new epoch's,
    // skipped the new ones below their end and served overwritten bytes as whole frames: the
    // circular test of tests/unit/experiment/inproc_chunks_stress_test.cpp.) A reader still on the
    // old epoch finds nothing more to read.
    if (const std::uint32_t gone = c->frames.load(std::memory_order_relaxed))
        h->discarded_frames.fetch_add(gone, std::memory_order_relaxed);
    c->frames.store(0, std::memory_order_relaxed);
    c->committed.store(0, std::memory_order_release);
    // First the epoch, then the bytes: readers check it around their copies. The fence, not
    // the RMW's release (which orders only what precedes it), keeps every store below and the
    // records' after the bump.
    c->epoch.fetch_add(1, std::memory_order_acq_rel);
    std::atomic_thread_fence(std::memory_order_release);
    c->generation = generation;
    c->owner = owner;
    c->taken = h->take_count.fetch_add(1, std::memory_order_relaxed);
    // Publishes `taken` to a reader that finds the chunk Owned. A reused chunk was Sealed, not
    // Free, so a reader may read `taken` while it changes here: a race in the C++ model (eight
    // aligned bytes, not torn on either CPU; `taken` only orders the reader's pass).
    c->state.store(static_cast<std::uint32_t>(ChunkState::Owned), std::memory_order_release);
    return c;
}

// A new run for the writer: the chunk and credit it held are void.
inline void join_generation(ChunkWriter& w, std::uint64_t generation) {
    w.chunk = nullptr;
    w.linear_credit = 0;
    w.generation = generation;
}

// Where the writer's next record goes in the chunk it holds, with room for `bound` bytes; null
// when it holds none or that one is too full.
inline std::uint8_t* room_in_chunk(const Header& h, const ChunkWriter& w, std::uint64_t bound) {
    ChunkHeader* c = w.chunk;
    if (!c) return nullptr;
    // Relaxed: only its owner writes `committed`.
    const std::uint32_t committed = c->committed.load(std::memory_order_relaxed);
    if (committed + bound > chunk_payload(h)) return nullptr;
    return reinterpret_cast<std::uint8_t*>(c) + kChunkHeaderBytes + committed;
}

// Where the writer's next record goes, with room for `bound` bytes: in its chunk, else in a
// new one (the old one sealed). Null when no chunk is to be had.
inline std::uint8_t* reserve_record(void* shared, ChunkWriter& w, std::uint64_t bound,
                                    YieldFn yield) {
    Header* h = header_of(shared);
    // Acquire: the chunks and ring a new generation's configuration reset (released by its bump;
    // in the program the ptrace stops around a configuration order them too).
    const std::uint64_t generation = h->generation.load(std::memory_order_acquire);
    if (w.generation != generation) join_generation(w, generation);
    if (std::uint8_t* record = room_in_chunk(*h, w, bound)) return record;
    // A resumed chunk goes on after its records, and one too full for this record is sealed
    // in turn (a fresh chunk has room: configure_chunks sized them for the largest record).
    for (std::size_t tries = 0; tries <= kMaxResumable + 1; ++tries) {
        if (w.chunk) seal_chunk(shared, w.chunk);
        w.chunk = take_chunk(shared, generation, yield, w.process);
        if (!w.chunk) return nullptr;
        if (std::uint8_t* record = room_in_chunk(*h, w, bound)) return record;
    }
    return nullptr;
}

// Linear mode: `need` bytes from the budget, claimed up to 64 KiB at a time so writers seldom
// meet on it, but never more than a 64th of what is left: credit one writer holds is credit the
// others cannot have, and a writer finding the budget short stops the trace. (A whole 64 KiB
// taken by the first writer into a 32 KiB buffer stopped the trace at the second writer's
// first frame.) So the claims shrink as the buffer fills, to a frame each at its end. False
// when the budget cannot hold them: the buffer is full.
// `exact`: only `need` (a forked child's writer: credit it still held when its process ended
// would be lost to the trace).
inline bool claim_linear(Header* h, ChunkWriter& w, std::int64_t need, bool exact = false) {
    constexpr std::int64_t kClaim = 64 << 10;
    if (w.linear_credit < need) {
        const std::int64_t left = exact ? 0 : h->linear_budget.load(std::memory_order_relaxed) / 64;
        const std::int64_t most = left < kClaim ? left : kClaim;
        const std::int64_t claim = need > most ? need : most;
        const std::int64_t had = h->linear_budget.fetch_sub(claim, std::memory_order_relaxed);
        if (had < need) return false;
        w.linear_credit += had < claim ? had : claim;
    }
    w.linear_credit -= need;
    return true;
}

// Publishes the record of `size` bytes written at the writer's reserved place: the release
// store of `committed` pairs with the reader's acquire load of it (`frames` is only a figure).
inline void publish_record(ChunkWriter& w, std::uint32_t size) {
    ChunkHeader* c = w.chunk;
    c->frames.store(c->frames.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    c->committed.store(c->committed.load(std::memory_order_relaxed) + size,
                       std::memory_order_release);
}

} // namespace tpagent::inproc
