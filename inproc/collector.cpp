// A fast-tracepoint hit, on the thread that hit it, called from the jump pad: condition,
// pass count, then one frame written in place in the thread's own chunk of the shared trace
// buffer (frame_chunks.hpp). No locks and no shared writes on the common path: the chunk's
// `committed` and the thread's hit counters are its own cache lines; the pass count and the
// linear budget are shared only when they apply (the budget is claimed up to 64 KiB at a time,
// less as the buffer fills: claim_linear).
#include "inproc/inproc.hpp"
#include "inproc/frame_chunks.hpp"
#include "arch/frame_clock.hpp"
#include "arch/sdt_argument.hpp"
#include "bytecode/compiler.hpp"
#include "bytecode/interpreter.hpp"
#include "trace/static_data.hpp"
#include <cstring>
#include <ctime>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace tpagent::inproc {

#if !TPAGENT_INPROC_IMAGE
constinit __attribute__((tls_model("initial-exec"))) thread_local ThreadState t_state;
#endif

namespace {

using bytecode::EvalStatus;

constexpr std::uint32_t kNoTail = ~0u;

#if !TPAGENT_INPROC_IMAGE
pthread_key_t g_exit_key;
bool g_exit_key_ok = false;

// A thread that ends seals its chunk: circular mode can reuse it. (The image has no such hook:
// its table's entry, with the chunk, passes to the next thread the C library gives the ended
// one's thread pointer; never two live threads at once.)
void on_thread_exit(void*) {
    ChunkWriter& w = t_state.writer;
    // (A chunk a forked child's thread inherited is its parent thread's.)
    if (w.chunk && g_shared_buffer && t_state.process == g_process.pid &&
        w.generation == header_of(g_shared_buffer)->generation.load(std::memory_order_relaxed))
        seal_chunk(g_shared_buffer, w.chunk);
    w.chunk = nullptr;
}

__attribute__((constructor)) void make_exit_key() {
    g_exit_key_ok = pthread_key_create(&g_exit_key, on_thread_exit) == 0;
}
#endif

// Adds to a counter: plain load and store where the row is the thread's own.
void bump(HitCounter& c, std::atomic<std::uint64_t> HitCounter::*field, std::uint64_t by,
          bool own) {
    if (own)
        (c.*field).store((c.*field).load(std::memory_order_relaxed) + by,
                         std::memory_order_relaxed);
    else
        (c.*field).fetch_add(by, std::memory_order_relaxed);
}

void stop_tracing(Header* h, StopReason why, std::uint32_t tracepoint, std::uint64_t status = 0,
                  std::uint64_t address = 0) {
    // Claim the stop, write its details, then publish the reason: tpagent reads the details
    // only once it sees the reason.
    std::uint32_t none = static_cast<std::uint32_t>(StopReason::None);
    if (h->stop_reason.compare_exchange_strong(
            none, static_cast<std::uint32_t>(StopReason::Stopping), std::memory_order_acq_rel)) {
        h->stop_tracepoint = tracepoint;
        h->stop_status = status;
        h->stop_address = address;
        h->stop_reason.store(static_cast<std::uint32_t>(why), std::memory_order_release);
    }
    h->tracing.store(0, std::memory_order_release);
}

// Which 64 KiB pieces of the chunk area this process has mapped (whatever the runs' chunk
// sizes), in run g_mapped_generation: tpagent gives a buffer's pages back between runs
// (SharedBuffer::release_buffer), so a new run maps its chunks anew. (Two threads starting
// over at once only map a chunk twice.)
std::atomic<std::uint64_t> g_mapped[kMaxChunks / 64];
std::atomic<std::uint64_t> g_mapped_generation{0};

// Maps a chunk's pages into this process in one system call, once: touched one by one, each
// first write to a page of the shared buffer would be a fault of its own in the collecting
// thread (tpagent has allocated the pages). An older kernel without MADV_POPULATE_WRITE
// refuses, and the pages fault in as before.
void map_chunk(const ChunkHeader* chunk, std::uint64_t bytes, std::uint64_t generation) {
    if (g_mapped_generation.load(std::memory_order_relaxed) != generation) {
        for (auto& word : g_mapped)
            word.store(0, std::memory_order_relaxed);
        g_mapped_generation.store(generation, std::memory_order_relaxed);
    }
    const auto offset =
        static_cast<std::uint64_t>(reinterpret_cast<const std::uint8_t*>(chunk) -
                                   static_cast<const std::uint8_t*>(g_shared_buffer)) -
        kChunksOffset;
    if (offset + bytes <= header_of(g_shared_buffer)->mapped_chunk_bytes) return;
    const std::uint64_t first = offset / kMinChunkBytes, end = (offset + bytes) / kMinChunkBytes;
    bool mapped = true;
    for (std::uint64_t p = first; p < end && p < kMaxChunks; ++p)
        mapped = mapped && (g_mapped[p / 64].load(std::memory_order_relaxed) >> (p % 64)) & 1;
    if (mapped) return;
    tpagent_syscall(SYS_madvise, reinterpret_cast<long>(chunk), static_cast<long>(bytes),
                    MADV_POPULATE_WRITE, 0, 0, 0);
    for (std::uint64_t p = first; p < end && p < kMaxChunks; ++p)
        g_mapped[p / 64].fetch_or(std::uint64_t{1} << (p % 64), std::memory_order_relaxed);
}

// One hit's view for the bytecode callbacks, and the frame being written.
struct Hit {
    Header* header;
    const std::uint8_t* block; // staged R bytes: the core of the `g` block
    std::uint8_t* out;         // next frame byte
    std::uint8_t* out_end;     // the tracepoint's frame bound
    bool has_registers = false;
    // The FP/vector state the pad saved, for a tracepoint that collects it; else null.
    const std::uint8_t* saved_state = nullptr;
    // Collecting: the frame's stamp, taken again right before the first clock an expression
    // reads, so that frames in stamp order hold $trace_timestamp values in order too.
    bool collecting = false;
    bool clock_read = false;
    std::uint64_t stamp = 0;
};

// Copies register bytes: whole words by a jump into a straight run of 8-byte moves (Duff's
// device: the block's size is the same at every hit), then the 4-byte registers one by one as
// the pad stored them (a load is forwarded from one store, never from two). For the x86-64
// core block (164 bytes) that is 42 moves and one indirect jump: measured against 32 bytes a
// step in a loop, 50 instructions fewer per `collect $regs`. The library's memcpy goes a word
// at a time.
__attribute__((always_inline)) inline void move_word(std::uint8_t* d, const std::uint8_t* s,
                                                     unsigned back) {
    std::uint64_t w;
    __builtin_memcpy(&w, s - 8 * back, 8);
    __builtin_memcpy(d - 8 * back, &w, 8);
}
void copy_registers(std::uint8_t* d, const std::uint8_t* s, std::uint32_t n) {
    std::uint32_t words = n / 8;
    for (; words > 32; words -= 32, d += 256, s += 256)
        __builtin_memcpy(d, s, 256); // inlined as 8-byte moves (general registers only)
    d += 8 * words;
    s += 8 * words;
    // NOLINTBEGIN(bugprone-branch-clone): an unrolled copy, one word per case
    switch (words) {
    case 32:
        move_word(d, s, 32);
        [[fallthrough]];
    case 31:
        move_word(d, s, 31);
        [[fallthrough]];
    case 30:
        move_word(d, s, 30);
        [[fallthrough]];
    case 29:
        move_word(d, s, 29);
        [[fallthrough]];
    case 28:
        move_word(d, s, 28);
        [[fallthrough]];
    case 27:
        move_word(d, s, 27);
        [[fallthrough]];
    case 26:
        move_word(d, s, 26);
        [[fallthrough]];
    case 25:
        move_word(d, s, 25);
        [[fallthrough]];
    case 24:
        move_word(d, s, 24);
        [[fallthrough]];
    case 23:
        move_word(d, s, 23);
        [[fallthrough]];
    case 22:
        move_word(d, s, 22);
        [[fallthrough]];
    case 21:
        move_word(d, s, 21);
        [[fallthrough]];
    case 20:
        move_word(d, s, 20);
        [[fallthrough]];
    case 19:
        move_word(d, s, 19);
        [[fallthrough]];
    case 18:
        move_word(d, s, 18);
        [[fallthrough]];
    case 17:
        move_word(d, s, 17);
        [[fallthrough]];
    case 16:
        move_word(d, s, 16);
        [[fallthrough]];
    case 15:
        move_word(d, s, 15);
        [[fallthrough]];
    case 14:
        move_word(d, s, 14);
        [[fallthrough]];
    case 13:
        move_word(d, s, 13);
        [[fallthrough]];
    case 12:
        move_word(d, s, 12);
        [[fallthrough]];
    case 11:
        move_word(d, s, 11);
        [[fallthrough]];
    case 10:
        move_word(d, s, 10);
        [[fallthrough]];
    case 9:
        move_word(d, s, 9);
        [[fallthrough]];
    case 8:
        move_word(d, s, 8);
        [[fallthrough]];
    case 7:
        move_word(d, s, 7);
        [[fallthrough]];
    case 6:
        move_word(d, s, 6);
        [[fallthrough]];
    case 5:
        move_word(d, s, 5);
        [[fallthrough]];
    case 4:
        move_word(d, s, 4);
        [[fallthrough]];
    case 3:
        move_word(d, s, 3);
        [[fallthrough]];
    case 2:
        move_word(d, s, 2);
        [[fallthrough]];
    case 1:
        move_word(d, s, 1);
        [[fallthrough]];
    default:
        break;
    }
    // NOLINTEND(bugprone-branch-clone)
    for (n %= 8; n >= 4; n -= 4, d += 4, s += 4) {
        std::uint32_t w;
        __builtin_memcpy(&w, s, 4);
        __builtin_memcpy(d, &w, 4);
    }
    for (; n > 0; --n)
        *d++ = *s++;
}

} // namespace

bool read_memory(void* /*user*/, std::uint64_t addr, void* out, std::size_t len) {
    return safe_read(out, addr, len) == len;
}

namespace {

bool read_register(void* user, unsigned regnum, std::uint64_t* value) {
    const Hit* hit = static_cast<const Hit*>(user);
    return staged_register(hit->header, hit->block, regnum, value);
}

// `collect $_sdata` at an SDT marker: its arguments, read from the staged registers and the
// program's memory, as the text a trap tracepoint's frame holds (trace::StaticDataWriter).
void collect_static_data(Hit& hit, const ActionRecord& a) {
    const auto room = static_cast<std::uint64_t>(hit.out_end - hit.out);
    if (room <= trace::kStaticDataBlockHeaderSize) return;
    const std::uint64_t text_room = room - trace::kStaticDataBlockHeaderSize < a.length
                                        ? room - trace::kStaticDataBlockHeaderSize
                                        : a.length;
    char* text = reinterpret_cast<char*>(hit.out + trace::kStaticDataBlockHeaderSize);
    trace::StaticDataWriter writer(text, text_room);
    const auto* args = at<const arch::SdtArgument>(g_shared_buffer, a.insns_offset);
    for (std::uint32_t i = 0; i < a.insn_count; ++i) {
        std::uint64_t value = 0;
        const bool known = arch::sdt_argument_value(
            args[i],
            [&](int regnum, std::uint64_t* v) {
                return regnum >= 0 &&
                       staged_register(hit.header, hit.block, static_cast<unsigned>(regnum), v);
            },
            [](std::uint64_t addr, void* out, unsigned size) {
                return safe_read(out, addr, size) == size;
            },
            &value);
        if (known)
            writer.argument(value, args[i].size, args[i].is_signed);
        else
            writer.unknown();
    }
    const std::size_t n = writer.finish();
    hit.out = trace::store_static_data_header(hit.out, static_cast<std::uint16_t>(n)) + n;
}

Variable* variable(unsigned num) {
    if (num >= kMaxVariables) return nullptr;
    Variable* v = at<Variable>(g_shared_buffer, kVariablesOffset) + num;
    return v->defined ? v : nullptr;
}

// The C library's clock (the vDSO's, no kernel entry) where there is one; the image's is the
// system call.
void read_clock(clockid_t clock, timespec* ts) {
#if TPAGENT_INPROC_IMAGE
    tpagent_syscall(SYS_clock_gettime, clock, reinterpret_cast<long>(ts), 0, 0, 0, 0);
#else
    clock_gettime(clock, ts);
#endif
}

bool get_tsv(void* user, unsigned num, std::int64_t* value) {
    Variable* v = variable(num);
    if (!v) return false;
    timespec ts{};
    if (v->reading == 1 || v->reading == 2) {
        Hit& hit = *static_cast<Hit*>(user);
        if (hit.collecting && !hit.clock_read) {
            hit.clock_read = true;
            hit.stamp = arch::frame_clock();
        }
    }
    // NOLINTBEGIN(bugprone-branch-clone): each case reads its own source
    switch (v->reading) {
    case 1:
        read_clock(CLOCK_REALTIME, &ts);
        *value = static_cast<std::int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
        return true;
    case 2:
        read_clock(CLOCK_MONOTONIC, &ts);
        *value = static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
        return true;
    case 3:
        *value = tpagent_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0);
        return true;
    case 4:
        *value = g_process.pid;
        return true;
    default:
        *value = v->value.load(std::memory_order_relaxed);
        return true;
    }
    // NOLINTEND(bugprone-branch-clone)
}

bool set_tsv(void*, unsigned num, std::int64_t value) {
    Variable* v = variable(num);
    if (!v || v->reading) return false;
    v->value.store(value, std::memory_order_relaxed);
    return true;
}

// M blocks; what does not fit the frame bound, or cannot be read, is left out.
__attribute__((noinline)) std::uint8_t* collect_pieces(std::uint8_t* out, std::uint8_t* out_end,
                                                       std::uint64_t addr, std::uint64_t len) {
    while (len > 0) {
        const auto room = static_cast<std::uint64_t>(out_end - out);
        if (room <= trace::kMemoryBlockHeaderSize) break;
        std::uint64_t piece = len < trace::kMaxMemoryBlock ? len : trace::kMaxMemoryBlock;
        if (piece > room - trace::kMemoryBlockHeaderSize)
            piece = room - trace::kMemoryBlockHeaderSize;
        const std::size_t got = safe_read(out + trace::kMemoryBlockHeaderSize, addr, piece);
        if (got == 0) break;
        out = trace::store_memory_header(out, addr, static_cast<std::uint16_t>(got)) + got;
        if (got < piece) break;
        addr += got;
        len -= got;
    }
    return out;
}

// The usual range is one block that fits: read in line; others go piece by piece.
__attribute__((always_inline)) inline void collect_range(Hit& hit, std::uint64_t addr,
                                                         std::uint64_t len) {
    const auto room = static_cast<std::uint64_t>(hit.out_end - hit.out);
    if (len <= trace::kMaxMemoryBlock && len + trace::kMemoryBlockHeaderSize <= room) {
        const std::size_t got =
            safe_read_in_line(hit.out + trace::kMemoryBlockHeaderSize, addr, len);
        if (got)
            hit.out =
                trace::store_memory_header(hit.out, addr, static_cast<std::uint16_t>(got)) + got;
        return;
    }
    hit.out = collect_pieces(hit.out, hit.out_end, addr, len);
}

bool collect_memory(void* user, std::uint64_t addr, std::uint64_t len) {
    Hit& hit = *static_cast<Hit*>(user);
    hit.out = collect_pieces(hit.out, hit.out_end, addr, len);
    return true;
}

bool collect_tsv(void* user, unsigned num, std::int64_t value) {
    Hit& hit = *static_cast<Hit*>(user);
    if (static_cast<std::uint64_t>(hit.out_end - hit.out) < trace::kVariableBlockSize) return false;
    hit.out = trace::store_variable_block(hit.out, num, value);
    return true;
}

// The R block: the registers the pad staged, then the tail: the process's constant registers
// and the thread-pointer registers, as the thread took them when it joined the run.
__attribute__((always_inline)) inline void collect_registers(Hit& hit, const ThreadState& t) {
    const std::uint32_t core = hit.header->core_register_bytes;
    const std::uint32_t tail = t.tail_bytes; // what the thread took when it joined the run
    const std::uint32_t state = hit.saved_state ? hit.header->saved_state_bytes : 0;
    if (hit.has_registers || tail > sizeof t.tail_registers ||
        static_cast<std::uint64_t>(hit.out_end - hit.out) <
            trace::registers_block_size(core + tail + state))
        return;
    hit.out = trace::store_registers_header(hit.out);
    copy_registers(hit.out, hit.block, core);
    hit.out += core;
    // 8-byte registers, at most four (checked above): no loop, no memcpy call
    if (tail >= 8) __builtin_memcpy(hit.out, &t.tail_registers[0], 8);
    if (tail >= 16) __builtin_memcpy(hit.out + 8, &t.tail_registers[1], 8);
    if (tail >= 24) __builtin_memcpy(hit.out + 16, &t.tail_registers[2], 8);
    if (tail >= 32) __builtin_memcpy(hit.out + 24, &t.tail_registers[3], 8);
    hit.out += tail;
    if (state) {
        std::memcpy(hit.out, hit.saved_state, state);
        hit.out += state;
    }
    hit.has_registers = true;
}

// The callbacks an expression gets; built only when one runs (a zeroed Context costs a
// `rep stos` on every hit otherwise).
bytecode::Context make_context(Hit& hit, bool collects) {
    bytecode::Context ctx;
    ctx.user = &hit;
    ctx.read_memory = read_memory;
    ctx.read_register = read_register;
    ctx.registers = hit.block;
    ctx.get_tsv = get_tsv;
    ctx.set_tsv = set_tsv;
    if (collects) {
        ctx.collect_memory = collect_memory;
        ctx.collect_tsv = collect_tsv;
    }
    return ctx;
}

EvalStatus run_expression(const ActionRecord& a, const bytecode::Context& ctx,
                          bytecode::EvalOut& out) {
    if (a.compiled) return reinterpret_cast<bytecode::CompiledFn>(a.compiled)(&ctx, &out);
    return bytecode::run_insns(at<const bytecode::Insn>(g_shared_buffer, a.insns_offset),
                               a.backward_jump_budget, nullptr, ctx, out);
}

// Whether the condition lets the hit go on; one that fails stops the trace.
__attribute__((noinline)) bool condition_holds(Header* h, const TracepointRecord* tp,
                                               const std::uint8_t* block) {
    Hit hit{h, block, nullptr, nullptr};
    bytecode::EvalOut out;
    const EvalStatus s = run_expression(tp->condition, make_context(hit, false), out);
    if (s != EvalStatus::Ok) {
        stop_tracing(h, StopReason::Error, tp->number, static_cast<std::uint64_t>(s),
                     out.fault_address);
        return false;
    }
    return out.value != 0;
}

// An X action, collecting through its trace opcodes into [out, out_end): where the frame's
// next byte now is (null when the action failed: the trace stops), and its stamp. By value,
// so that the caller's hit never has its address taken and stays in registers. A static
// tracepoint's `$_sdata` goes through here too: a call site of its own in the collector
// costs every hit 3 to 5 instructions (callgrind, bench/hit_instructions.py).
struct Collected {
    std::uint8_t* out;
    std::uint64_t stamp;
};
__attribute__((noinline)) Collected run_collecting(Header* h, const TracepointRecord* tp,
                                                   const ActionRecord& a, const std::uint8_t* block,
                                                   std::uint8_t* out, std::uint8_t* out_end,
                                                   std::uint64_t stamp) {
    Hit hit{h, block, out, out_end};
    if (a.kind == ActionKind::StaticData) {
        collect_static_data(hit, a);
        return {hit.out, stamp};
    }
    hit.collecting = true;
    hit.stamp = stamp;
    bytecode::EvalOut result;
    const EvalStatus s = run_expression(a, make_context(hit, true), result);
    if (s == EvalStatus::Ok || s == EvalStatus::MemoryError || s == EvalStatus::CollectError)
        return {hit.out, hit.stamp};
    stop_tracing(h, StopReason::Error, tp->number, static_cast<std::uint64_t>(s),
                 result.fault_address);
    return {nullptr, stamp};
}

// A new run for this thread: its slot, and its writer emptied (the old chunk is void).
__attribute__((noinline)) void join_run(Header* h, ThreadState& t, std::uint64_t generation) {
    const std::uint32_t n = h->slots_taken.fetch_add(1, std::memory_order_relaxed);
    t.slot = n < kMaxThreadSlots ? thread_slot(g_shared_buffer, n) : nullptr;
    t.counters = t.slot ? counter_row(g_shared_buffer, n) : nullptr;
    t.slot_generation = generation;
    t.process = g_process.pid;
    t.last_range = {}; // (a forked child's thread had its parent thread's)
    if (t.slot) t.slot->pid.store(g_process.pid, std::memory_order_relaxed);
    join_generation(t.writer, generation);
    t.writer.process = g_process.pid;
    // (Sizes from the program's own memory: a tail that does not fit is collected by no hit.)
    const std::uint32_t constants = h->tail_constant_bytes, tail = h->tail_register_bytes;
    t.tail_bytes = kNoTail;
    if (constants <= sizeof h->tail_constants && constants % 8 == 0 && tail >= constants &&
        tail - constants <= 16 && tail % 8 == 0 && tail <= sizeof t.tail_registers) {
        std::memcpy(t.tail_registers, h->tail_constants, constants);
        if (tail > constants)
            tpagent_thread_registers(t.tail_registers + constants / 8, h->tail_by_instruction);
        t.tail_bytes = tail;
    }
    if (h->completion.constants_size) tpagent_thread_constants(t.thread_constants);
}

} // namespace

void complete_block(const Header* h, const ThreadState& t, std::uint64_t pc, std::uint8_t* block,
                    const std::uint8_t* anchor) {
    const BlockCompletion c = h->completion; // a local: the stores below may alias the header
    if (c.pc_size == 8) __builtin_memcpy(block + c.pc_offset, &pc, 8);
    if (c.sp_size == 8) {
        const std::uint64_t sp = reinterpret_cast<std::uint64_t>(anchor) + c.sp_bias;
        __builtin_memcpy(block + c.sp_offset, &sp, 8);
    }
    // Flags and constants as whole words where 4-byte flags start a word that the constants
    // go on from (x86-64's eflags and selectors): an 8-byte load of the block, the copy's,
    // then meets one store, not two (a load forwarded from two stores waits for them to
    // retire: +1.5 ns a hit).
    const std::uint8_t* from = t.thread_constants;
    std::uint8_t* to = block + c.constants_offset;
    std::uint32_t done = 0; // constants bytes written
    if (c.flags_size == 4 && c.flags_offset % 8 == 0 && c.constants_offset == c.flags_offset + 4 &&
        c.constants_size >= 4) {
        std::uint32_t flags, first;
        __builtin_memcpy(&flags, anchor, 4);
        __builtin_memcpy(&first, from, 4);
        const std::uint64_t w = flags | std::uint64_t{first} << 32;
        __builtin_memcpy(block + c.flags_offset, &w, 8);
        done = 4;
    } else if (c.flags_size == 4) { // NOLINT(bugprone-branch-clone): 4 and 8 bytes
        __builtin_memcpy(block + c.flags_offset, anchor, 4);
    } else if (c.flags_size == 8) {
        __builtin_memcpy(block + c.flags_offset, anchor, 8);
    }
    for (; done + 8 <= c.constants_size; done += 8)
        __builtin_memcpy(to + done, from + done, 8);
    if (done + 4 <= c.constants_size) __builtin_memcpy(to + done, from + done, 4);
}

namespace {

// The thread's chunk is full (or it has none): the next one, mapped into the process.
__attribute__((noinline)) std::uint8_t* reserve_in_new_chunk(Header* h, ThreadState& t,
                                                             std::uint64_t bound) {
    const ChunkHeader* had = t.writer.chunk;
    std::uint8_t* record = reserve_record(g_shared_buffer, t.writer, bound, [](int n) {
        // Yields let a preempted sealer on this CPU run; sleeps let an idle CPU pull it over.
        if (n < 20) {
            tpagent_syscall(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
        } else {
            const struct timespec pause { 0, 50000 };
            tpagent_syscall(SYS_nanosleep, reinterpret_cast<long>(&pause), 0, 0, 0, 0, 0);
        }
    });
    if (record && t.writer.chunk != had)
        map_chunk(t.writer.chunk, h->chunk_bytes, t.writer.generation);
#if !TPAGENT_INPROC_IMAGE
    if (!t.key_set && g_exit_key_ok) {
        pthread_setspecific(g_exit_key, reinterpret_cast<void*>(1));
        t.key_set = true;
    }
#endif
    return record;
}

// No chunk left: every one is owned by a writer (circular) or holds frames (linear).
__attribute__((noinline)) void drop_frame(Header* h, const TracepointRecord* tp, bool last_pass) {
    h->dropped_frames.fetch_add(1, std::memory_order_relaxed);
    if (!h->circular) stop_tracing(h, StopReason::BufferFull, tp->number);
    if (last_pass) stop_tracing(h, StopReason::PassCount, tp->number);
}

// In line in the collector: the common hit (no condition, registers and ranges) calls nothing
// but the clock and the memory reads.
__attribute__((always_inline)) inline void hit(Header* h, ThreadState& t, TracepointRecord* tp,
                                               std::uint8_t* block, std::uint64_t frame,
                                               const std::uint8_t* anchor) {
    if (tp->complete_block) complete_block(h, t, tp->address, block, anchor);
    if (tp->has_condition && !condition_holds(h, tp, block)) return;
    bool last_pass = false;
    if (tp->pass_count) {
        const std::uint64_t n = tp->pass_hits.fetch_add(1, std::memory_order_relaxed) + 1;
        if (n > tp->pass_count) return; // another thread is stopping the trace
        last_pass = n == tp->pass_count;
    }

    const std::uint32_t index = record_index(g_shared_buffer, tp);
    const bool own_counter = t.counters && index < kMaxCountedRecords;
    HitCounter& counter = own_counter ? t.counters[index] : tp->shared_hits;
    bump(counter, &HitCounter::hits, 1, own_counter);

    const std::uint64_t bound = tp->frame_bound;
    std::uint8_t* record = room_in_chunk(*h, t.writer, bound);
    if (!record) record = reserve_in_new_chunk(h, t, bound);
    if (!record) {
        drop_frame(h, tp, last_pass);
        return;
    }
    std::uint64_t stamp = arch::frame_clock();
    Hit hit{h, block, record + kRecordBlocksOffset, record + bound}; // headers written last
    // Only where the pad saved it: below the block (a thread still in an older run's pad may
    // call with a record of this run that collects it).
    if (tp->collects_state && h->saved_state_bytes &&
        frame + h->saved_state_frame_offset + h->saved_state_bytes <=
            reinterpret_cast<std::uint64_t>(block))
        hit.saved_state =
            reinterpret_cast<const std::uint8_t*>(frame + h->saved_state_frame_offset);

    const auto* actions = at<const ActionRecord>(g_shared_buffer, tp->actions_offset);
    for (std::uint32_t i = 0; i < tp->action_count; ++i) {
        const ActionRecord& a = actions[i];
        if (a.kind == ActionKind::Registers) {
            collect_registers(hit, t);
        } else if (a.kind == ActionKind::Memory) {
            std::uint64_t base = 0;
            if (a.base_register >= 0 &&
                !staged_register(h, block, static_cast<unsigned>(a.base_register), &base))
                continue;
            collect_range(hit, base + a.offset, a.length);
        } else if (a.kind == ActionKind::Expression || a.kind == ActionKind::StaticData) {
            const Collected c = run_collecting(h, tp, a, block, hit.out, hit.out_end, stamp);
            if (!c.out) return;
            hit.out = c.out;
            stamp = c.stamp;
        }
    }

    // Frame header, record header; the record is padded to 8 bytes.
    const std::uint64_t data = static_cast<std::uint64_t>(hit.out - record) - kRecordBlocksOffset;
    const std::uint64_t size = (static_cast<std::uint64_t>(hit.out - record) + 7) & ~7ull;
    if (!h->circular &&
        !claim_linear(h, t.writer, static_cast<std::int64_t>(size), g_process.forked != 0)) {
        stop_tracing(h, StopReason::BufferFull, tp->number);
        return;
    }
    static_assert(sizeof(RecordHeader) == 24);
    const std::uint32_t flags = hit.saved_state && hit.has_registers ? kRecordHoldsState : 0;
    trace::store_le<std::uint64_t>(record, size | std::uint64_t{index | flags} << 32);
    trace::store_le<std::uint64_t>(record + 8, tp->address);
    trace::store_le<std::uint64_t>(record + 16, stamp);
    trace::store_frame_header(record + 24, static_cast<std::uint16_t>(tp->number),
                              static_cast<std::uint32_t>(data));
    publish_record(t.writer, static_cast<std::uint32_t>(size));
    bump(counter, &HitCounter::bytes, size - sizeof(RecordHeader), own_counter);
    if (last_pass) stop_tracing(h, StopReason::PassCount, tp->number);
}

// A hit inside a hit (a signal handler's), or one of a thread the image's table has no room for.
__attribute__((noinline)) void drop_nested_hit(Header* h) {
    h->dropped_frames.fetch_add(1, std::memory_order_relaxed);
}

} // namespace
} // namespace tpagent::inproc

using namespace tpagent::inproc;

extern "C" void tpagent_inproc_collect(std::uint64_t record, std::uint8_t* block,
                                       std::uint64_t frame, const std::uint8_t* anchor) {
    if (!g_shared_buffer || g_process.forked == kForkedUntraced) return;
    Header* h = header_of(g_shared_buffer);
    if (!h->tracing.load(std::memory_order_acquire)) return;
    ThreadState* state = this_thread();
    if (!state) {
        drop_nested_hit(h); // no entry left for this thread: counted as dropped
        return;
    }
    ThreadState& t = *state;
    if (t.busy) {
        drop_nested_hit(h);
        return;
    }
    t.busy = true;
    const std::uint64_t generation = h->generation.load(std::memory_order_acquire);
    if (t.slot_generation != generation || t.process != g_process.pid) join_run(h, t, generation);
    // tpagent runs a thread it stops while this is set on to the return, even out of the
    // library (the vDSO's clock): no run starts or ends with a frame half written.
    ThreadSlot* slot = t.slot;
    if (slot) slot->frame.store(frame, std::memory_order_relaxed);
    // Tracepoints sharing an address share the pad: their records are chained.
    for (auto* tp = reinterpret_cast<TracepointRecord*>(record); tp;
         tp = tp->next ? at<TracepointRecord>(g_shared_buffer, tp->next) : nullptr)
        if (tp->enabled && h->tracing.load(std::memory_order_relaxed))
            hit(h, t, tp, block, frame, anchor);
    if (slot) slot->frame.store(0, std::memory_order_release);
    t.busy = false;
}
