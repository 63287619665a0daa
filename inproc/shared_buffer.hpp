// The memory tpagent shares with its in-process agent (libtpagent-inproc.so): one memfd the
// library creates when it loads and maps in the traced program, and tpagent maps too (through
// /proc/PID/fd), so frames travel without ptrace.
//
// Handshake: the memfd is named kMemfdName; tpagent finds it among the program's open files
// (or mappings), maps it and checks the header (magic, version, layout size), which also tells
// where the library's collector and rt:: helpers are in the program.
//
// Who writes what:
// - tpagent, only while every thread of the program is stopped: the configuration (tracepoint
//   records, actions, expression code, variables, readable ranges, chunk geometry), `tracing`,
//   `generation`.
// - collectors (program threads, concurrently): frames into their own chunks, their hit
//   counters, pass counts, the linear budget, variable values, and the stop fields (first
//   stopper wins).
// - tpagent, concurrently with collectors: reads complete frames in place (it indexes them and
//   serves them from here: the chunks ARE the trace buffer of a run with fast tracepoints),
//   writes its own trap tracepoints' frames into chunks as one more writer, and refreshes the
//   readable ranges under a seqlock.
//
// Frames live in chunks (frame_chunks.hpp): a thread owns a chunk and appends records to it
// with no shared write but the chunk's own `committed`, so hits on several threads never
// contend. A record is [RecordHeader][trace frame in the trace-file format
// (trace/frame_format.hpp)], where a fast tracepoint's R block holds only the first
// core_register_bytes of the `g` block (the registers the jump pad saves); tpagent widens it
// when it serves the frame. Each record carries a stamp taken at the hit, so tpagent numbers
// the frames of all threads in collection order without moving them.
#pragma once
#include "arch/sdt_argument.hpp"
#include "bytecode/compiler.hpp"
#include "trace/frame_format.hpp"
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tpagent::inproc {

inline constexpr std::uint64_t kMagic = 0x31636f7270696e74; // "tinproc1"
inline constexpr std::uint32_t kVersion = 17;
inline constexpr const char* kMemfdName = "tpagent-inproc";

// Fixed geometry: sparse memfd pages cost nothing until touched.
inline constexpr std::size_t kHeaderBytes = 4096;
inline constexpr std::size_t kConfigOffset = kHeaderBytes;
inline constexpr std::size_t kConfigBytes = 2u << 20; // records, actions, expression code
inline constexpr std::size_t kRangesOffset = kConfigOffset + kConfigBytes;
inline constexpr std::size_t kMaxRanges = 8192;
inline constexpr std::size_t kVariablesOffset = kRangesOffset + kMaxRanges * 16;
inline constexpr std::size_t kMaxVariables = 4096; // gdb numbers variables from 1, densely
// Chunks: their size is chosen per run (Header::chunk_bytes) from the buffer size; the area
// holds the largest buffer (1 GiB) plus room for the chunks threads are filling.
inline constexpr std::size_t kMinChunkBytes = 64u << 10;
inline constexpr std::size_t kMaxChunkBytes = 1u << 20;
inline constexpr std::size_t kChunkAreaBytes = (1u << 30) + (64u << 20);
inline constexpr std::size_t kMaxChunks = kChunkAreaBytes / kMinChunkBytes;
// Sealed chunks in the order they were sealed: the ring circular mode reuses them from.
inline constexpr std::size_t kSealedOffset = 3u << 20;
// Threads that took a slot this run (a hit-counter row): who, and whether inside a collector.
inline constexpr std::size_t kThreadSlotsOffset = kSealedOffset + (256u << 10);
// Hit counters: one row per thread (slot), one column per tracepoint record.
inline constexpr std::size_t kCountersOffset = 4u << 20;
inline constexpr std::size_t kMaxThreadSlots = 256;
inline constexpr std::size_t kMaxCountedRecords = 1024;
// Lines gdb's agent-style dprintfs print in the program (PrintRing), after the counters: kept
// when the rest is given back (SharedBuffer::give_back), as the lines outlive trace runs.
inline constexpr std::size_t kPrintRingOffset = 8u << 20;
inline constexpr std::size_t kPrintRingBytes = (4u << 20) + 4096;
inline constexpr std::size_t kChunksOffset = 16u << 20;
inline constexpr std::size_t kSharedBufferBytes = kChunksOffset + kChunkAreaBytes;

inline constexpr std::size_t kMaxCoreRegisters = 64;

// Why collection stopped by itself (Header::stop_reason).
enum class StopReason : std::uint32_t {
    None = 0,
    BufferFull = 1,        // linear budget exhausted
    PassCount = 2,         // stop_tracepoint reached its pass count
    Error = 3,             // stop_tracepoint's condition or action failed (stop_status: EvalStatus)
    Stopping = 0xffffffff, // claimed: the details are being written; read as None
};

// A readable range [start, end) of the program's memory, from /proc/PID/maps.
struct ReadableRange {
    std::uint64_t start;
    std::uint64_t end;
};

struct Variable {
    std::atomic<std::int64_t> value;
    std::uint32_t defined; // 0: no such variable
    // Read, never stored (trace::TraceStateVariables::Reading): 1 CLOCK_REALTIME microseconds
    // ($trace_timestamp, as gdbserver's), 2 CLOCK_MONOTONIC nanoseconds ($trace_timestamp_ns),
    // 3 the collecting thread's id ($trace_thread), 4 its process's ($trace_pid); 0: the stored
    // value.
    std::uint32_t reading;
};

// What a process's agent knows of the process, in its own (private) memory at
// Header::forked_flag: tpagent writes it in a forked child the trace follows (trace-follow-fork)
// while the child is stopped at its birth. `forked`: 0 in the traced process; kForkedUntraced
// in a child whose frames are not the trace's (the library's fork hook sets it where tpagent
// wrote nothing); kForkedFollowed in a followed child, whose hits all go through the collector
// (its threads' states were copied from the parent's, chunks and all: each thread joins the run
// anew in the child). `pid`: the process's id ($trace_pid, the owner of its chunks and slots).
inline constexpr std::uint8_t kForkedUntraced = 1;
inline constexpr std::uint8_t kForkedFollowed = 2;
struct ProcessMark {
    std::uint8_t forked;
    std::uint8_t reserved[3];
    std::uint32_t pid;
};
static_assert(sizeof(ProcessMark) == 8);

// Offsets in the staged block; a size of 0 leaves that part alone.
struct BlockCompletion {
    std::uint16_t pc_offset;        // 8 bytes: the tracepoint's address
    std::uint16_t sp_offset;        // 8 bytes: the anchor plus sp_bias
    std::uint16_t flags_offset;     // flags_size bytes copied from the anchor
    std::uint16_t constants_offset; // constants_size bytes: tpagent_thread_constants
    std::uint8_t pc_size;
    std::uint8_t sp_size;
    std::uint8_t flags_size;
    std::uint8_t constants_size;
    std::int32_t sp_bias;
};
inline constexpr std::size_t kMaxThreadConstants = 32;

struct Header {
    // Written once by the library.
    std::uint64_t magic;
    std::uint32_t version;
    std::uint32_t shared_buffer_bytes;
    std::uint64_t shared_buffer_address; // where the library mapped the shared buffer
    std::uint64_t collector;             // tpagent_inproc_collect
    // The library's rt:: helpers, for expressions compiled to run in the program; printf is
    // rt::printf_flat, given formats placed in the program (bytecode::FormatAddresses).
    bytecode::HelperAddresses helpers;
    // 1: the collector and everything it calls use only general registers, so a pad need not
    // save the vector/FP state.
    std::uint32_t general_registers_only;
    std::uint32_t library_reserved;
    // The copy that reads memory tpagent listed as readable: a fault with the pc in
    // [copy_begin, copy_end) is the collector's, and tpagent (which sees every signal first)
    // moves the pc to copy_fault, which returns the bytes copied so far, instead of letting
    // the program take the signal. A page unmapped after tstart thus never harms the program.
    std::uint64_t copy_begin;
    std::uint64_t copy_end;
    std::uint64_t copy_fault;
    // gdb's breakpoints evaluated in the program: what their pads call (tpagent_inproc_break,
    // with a BreakpointRecord), and the trap it executes when a condition holds.
    std::uint64_t breakpoint_entry;
    std::uint64_t breakpoint_trap;
    // For pads that collect in line (arch::InlineCollection): where the calling thread's
    // ThreadState is from its thread pointer (the library's initial-exec TLS, the same in every
    // thread; 0 in the image, whose threads find theirs in a table), and the process's
    // ProcessMark (g_process), whose first byte is nonzero in a forked child.
    std::int64_t thread_state_offset;
    std::uint64_t forked_flag;
    // The image's table of thread states (thread_state.hpp), where its threads find theirs from
    // the load at fs:0: its address, index bits, entry size, where an entry's state is; 0: none.
    std::uint64_t thread_table;
    std::uint32_t thread_table_bits;
    std::uint32_t thread_entry_bytes;
    std::uint32_t thread_entry_state;
    std::uint32_t thread_table_reserved;

    // Configuration (tpagent).
    std::atomic<std::uint32_t> tracing; // collectors return at once when 0
    std::uint32_t circular;
    std::uint32_t g_size;              // bytes of a full R block
    std::uint32_t core_register_bytes; // bytes of the R block the pads stage
    // Bytes the collector appends to a frame's R block after those: first the process's
    // constant registers tpagent read at tstart (tail_constants, tail_constant_bytes of them:
    // arm64's pointer-authentication masks), then the thread-pointer registers
    // (tpagent_thread_registers), read once per thread and run, by instruction when
    // tail_by_instruction (else by system call). 0: none. Where the pads borrow the thread
    // pointer (arm64 Go: Architecture::agent_stacks_in_goroutine_m), its value at tstart is
    // one of the constants, and no thread-pointer register is read.
    std::uint32_t tail_register_bytes;
    std::uint32_t tail_by_instruction;
    std::uint32_t tail_constant_bytes; // 0 to 24
    std::uint32_t tail_reserved;
    std::uint64_t tail_constants[3];
    // The FP/vector state a pad saves for tracepoints that collect it
    // (Architecture::fast_saved_state()): its bytes, and where it starts relative to the
    // collector's frame argument. Such a tracepoint's R block goes on with it.
    std::uint32_t saved_state_bytes;
    std::int32_t saved_state_frame_offset;
    std::atomic<std::uint64_t> generation; // bumped at each start: threads drop old chunks
    // Where gdb register n lies in the staged R block; size 0: not saved by the pad.
    std::uint16_t register_offset[kMaxCoreRegisters];
    std::uint8_t register_size[kMaxCoreRegisters];
    // What the pads leave out of the staged block and the collector fills in when a hit reads
    // registers (TracepointRecord::complete_block; arch::FastBlockCompletion): the pc, the
    // stack pointer and flags from the pad's anchor, the thread's constant registers.
    BlockCompletion completion;
    // The run's chunks: chunk_count chunks of chunk_bytes from kChunksOffset.
    std::uint32_t chunk_bytes;
    std::uint32_t chunk_count;
    // Circular: the sealed chunks kept before the oldest is reused (the buffer's size); the
    // rest of chunk_count are for the chunks writers are filling, one each.
    std::uint32_t circular_keep;
    // Recording (with circular): the buffer is transit to tpagent's recording files, so a
    // sealed chunk is reused only once tpagent has recorded it (recorded_count); a writer that
    // finds none is dropped and counted (dropped_frames), the disk not keeping up.
    std::uint32_t recording;
    // Bytes of chunks from kChunksOffset that tpagent had the program map at tstart: a
    // collector need not map those itself.
    std::uint64_t mapped_chunk_bytes;

    // Stop (collectors: the first to set stop_reason from None wins).
    std::atomic<std::uint32_t> stop_reason;
    std::uint32_t stop_tracepoint; // tracepoint number
    std::uint64_t stop_status;     // Error: bytecode::EvalStatus
    std::uint64_t stop_address;    // Error: the fault address/register/variable

    // Linear buffer: record bytes writers may still use.
    std::atomic<std::int64_t> linear_budget;
    std::atomic<std::uint64_t> dropped_frames; // no chunk to write to, or a nested hit
    // Frames of chunks circular mode reused: created = these + those in chunks now.
    std::atomic<std::uint64_t> discarded_frames;
    std::atomic<std::uint32_t> slots_taken; // hit-counter rows handed to threads

    // Readable ranges, a seqlock: odd while tpagent rewrites them.
    std::atomic<std::uint64_t> ranges_sequence;
    std::uint32_t range_count;
    std::uint32_t ranges_reserved;

    // Chunk hand-out, each on its own cache line: taken once per chunk, not per hit.
    alignas(64) std::atomic<std::uint32_t> next_fresh;   // chunks never used this run: 0..
    std::atomic<std::uint64_t> take_count;               // chunks taken so far
    alignas(64) std::atomic<std::uint64_t> sealed_count; // seals so far (the ring's tail)
    alignas(64) std::atomic<std::uint64_t> reused_count; // reuses so far (the ring's head)
    // Recording: the seals tpagent has recorded, in seal order (release: after its last read
    // of the chunk); the ring's head may not pass it.
    alignas(64) std::atomic<std::uint64_t> recorded_count;
    // The last seal a writer waited for in vain (frame_chunks.hpp); ~0: none.
    std::atomic<std::uint64_t> stalled_seal;
    // Chunks a followed child's threads held when it ended, with room left, that tpagent put
    // in the resumable slots (kResumableOffset) for the next writer to go on filling: a server
    // forking a child per request would otherwise spend a chunk per child. How many are there
    // (an upper bound: a writer reads the slots only when it is not 0).
    alignas(64) std::atomic<std::uint32_t> resumable_count;
};
static_assert(sizeof(Header) <= kHeaderBytes);
static_assert(kSealedOffset + kMaxChunks * 8 <= kThreadSlotsOffset);
// The resumable slots, after the sealed ring: a chunk's index + 1, or 0.
inline constexpr std::size_t kResumableOffset = kSealedOffset + kMaxChunks * 8;
inline constexpr std::size_t kMaxResumable = 64;
static_assert(kResumableOffset + kMaxResumable * 4 <= kThreadSlotsOffset);
// Part of the layout: a helper more or less is a new kVersion.
static_assert(sizeof(bytecode::HelperAddresses) == 8 * sizeof(std::uint64_t));

enum class ChunkState : std::uint32_t {
    Free = 0,
    Owned = 1,  // a writer appends records
    Sealed = 2, // full, or its writer moved on or ended: in the sealed ring
};

struct ChunkHeader {
    std::atomic<std::uint32_t> state;
    std::atomic<std::uint32_t> committed; // bytes of complete records after this header
    // Bumped each time the chunk is taken: a reader that saw the same epoch before and after
    // copying a frame knows the frame was not overwritten meanwhile.
    std::atomic<std::uint32_t> epoch;
    std::atomic<std::uint32_t> frames; // complete records
    std::uint64_t generation;          // Header::generation when taken
    std::uint64_t taken;               // Header::take_count when taken: the order of takes
    // The process of the writer that took it (0: tpagent): tpagent hands on or seals the
    // chunks of a followed process that left the trace (SharedBuffer::release_chunks_of).
    std::uint32_t owner;
};
inline constexpr std::size_t kChunkHeaderBytes = 64; // own cache line
static_assert(sizeof(ChunkHeader) <= kChunkHeaderBytes);

// The record index of a frame tpagent itself wrote (a trap tracepoint's): its R block is full.
inline constexpr std::uint32_t kTrapRecord = 0xffffffff;
// Set in a fast record's index when its R block goes on with the saved FP/vector state.
inline constexpr std::uint32_t kRecordHoldsState = 1u << 30;

struct RecordHeader {
    std::uint32_t size;  // whole record, header included, multiple of 8
    std::uint32_t index; // TracepointRecord index, or kTrapRecord
    std::uint64_t pc;
    std::uint64_t stamp; // arch::frame_clock() at the hit: frames of all threads in order
};
// Where a record's frame blocks start: after the record header and the frame header.
inline constexpr std::size_t kRecordBlocksOffset = sizeof(RecordHeader) + trace::kFrameHeaderSize;

// A collecting thread's slot, its own cache line.
struct alignas(64) ThreadSlot {
    // From the collector's entry to its return (else 0): the stack pointer the pad called it
    // with, the address of the return address (in the pad) plus 8. A stopped thread whose stack
    // pointer lies just below it is this thread, inside the call (threads' stacks are apart):
    // tpagent runs it to that return address with one breakpoint, not thousands of steps.
    std::atomic<std::uint64_t> frame;
    // The thread's process (ProcessMark::pid): a forked child's threads have the same stacks
    // as its parent's.
    std::atomic<std::uint32_t> pid;
};
// How far below the collector's frame its callees' frames may reach.
inline constexpr std::uint64_t kCollectorStackReach = 64u << 10;

// A thread's hits and frame bytes for one tracepoint record (written by that thread only).
struct HitCounter {
    std::atomic<std::uint64_t> hits;
    std::atomic<std::uint64_t> bytes;
};

// One action of a fast tracepoint.
enum class ActionKind : std::uint32_t {
    Registers = 1,  // R: the core registers
    Memory = 2,     // M: length bytes at (base_register or 0) + offset
    Expression = 3, // X: run code/insns (collects through trace opcodes)
    // S: a static tracepoint's `collect $_sdata`, the SDT marker's insn_count arguments
    // (arch::SdtArgument at insns_offset) as text of at most `length` bytes.
    StaticData = 4,
};
static_assert(sizeof(arch::SdtArgument) == 24); // as tpagent writes them

struct ActionRecord {
    ActionKind kind;
    std::int32_t base_register; // Memory: gdb regnum, -1 = absolute
    std::uint64_t offset;
    std::uint32_t length;
    std::uint32_t insn_count;   // Expression: bytecode::Insn array at insns_offset
    std::uint64_t insns_offset; // from the shared buffer start
    std::uint64_t compiled;     // native code address in the program, 0 = interpret
    std::uint32_t backward_jump_budget;
    std::uint32_t reserved;
};

struct TracepointRecord {
    std::uint32_t number;
    std::uint32_t enabled;
    std::uint64_t address;
    std::uint64_t pass_count; // 0 = never
    std::atomic<std::uint64_t> pass_hits;
    // Hits of threads without a counter row of their own (more than kMaxThreadSlots threads,
    // or records beyond kMaxCountedRecords).
    HitCounter shared_hits;
    std::uint64_t frame_bound; // most bytes one staged record of this tracepoint may take
    std::uint64_t next;        // shared buffer offset of the next record at the same address, or 0
    std::uint64_t actions_offset;
    std::uint32_t action_count;
    std::uint8_t has_condition;
    // 1: its R block holds the FP/vector state the pad saved (Header::saved_state_bytes).
    std::uint8_t collects_state;
    // 1: a hit reads registers the pads leave to the collector (Header::completion): `$regs`,
    // an expression that reads one, or a range based on one.
    std::uint16_t complete_block;
    ActionRecord condition; // kind Expression when has_condition
};
static_assert(sizeof(TracepointRecord) == 128); // a power of two: an index is a shift

// A gdb breakpoint whose conditions and commands run in the program (Z0 with `;X` and
// `;cmds:`): written by tpagent into pad memory next to its pad, not into the shared buffer,
// whose configuration each trace run rewrites. The pad passes its address to
// tpagent_inproc_break, which runs the compiled conditions: none, any one true, or one that
// fails, and either the commands run (agent-style dprintf: their lines go to the PrintRing,
// and gdb never sees the hit, as with tpagent's own evaluation) or, with no commands, the
// thread stops at tpagent_breakpoint_trap.
inline constexpr std::uint64_t kBreakpointMagic = 0x3270626e69707474; // "ttpinbp2"
inline constexpr std::size_t kMaxBreakpointConditions = 8;
inline constexpr std::size_t kMaxBreakpointCommands = 4;
struct BreakpointRecord {
    std::uint64_t magic;
    std::uint64_t address;         // the breakpoint's
    std::uint32_t condition_count; // compiled (bytecode::CompiledFn) at `conditions`
    std::uint32_t complete_block;  // 1: a condition or command reads registers the pad leaves out
    std::uint64_t conditions[kMaxBreakpointConditions];
    std::uint32_t command_count; // compiled at `commands`, their printf formats placed for them
    std::uint32_t reserved;
    std::uint64_t commands[kMaxBreakpointCommands];
};

// The lines of agent-style dprintfs run in the program (BreakpointRecord::commands), for
// tpagent to print where it prints the dprintfs it runs itself. Program threads write, tpagent
// reads, in the order of their sequence numbers: a writer takes number `taken` while fewer
// than kPrintSlots lines are unread (taken - read), writes slot (number % kPrintSlots), then
// stores number + 1 in its `published` (release); tpagent reads slots up to the first not yet
// published and then advances `read`. A writer that finds the ring full stops at
// tpagent_breakpoint_trap with no record, and tpagent empties the ring before it goes on
// (again while other threads fill it); a line with no tracer to stop it (or a tpagent that
// reads nothing for thousands of its stops) is not written and is counted in `dropped`, which
// tpagent says. Survives
// trace runs: not configuration.
inline constexpr std::size_t kPrintSlots = 2048;
inline constexpr std::size_t kPrintSlotBytes = 2048;
struct PrintRing {
    alignas(64) std::atomic<std::uint64_t> taken;
    alignas(64) std::atomic<std::uint64_t> read;
    std::atomic<std::uint64_t> dropped;
    std::atomic<std::uint64_t> waits; // writers that found it full and stopped for tpagent
};
struct PrintSlot {
    std::atomic<std::uint64_t> published; // the line's sequence number + 1, once whole
    std::uint64_t breakpoint;             // the dprintf's address
    // 0: `text` holds `length` bytes; else the command failed (a bytecode::EvalStatus), at
    // fault_offset, on fault_address, and printed nothing.
    std::uint32_t status;
    std::uint32_t length;
    std::uint32_t fault_offset;
    std::uint32_t reserved;
    std::uint64_t fault_address;
    char text[kPrintSlotBytes - 40];
};
static_assert(sizeof(PrintSlot) == kPrintSlotBytes);
inline constexpr std::size_t kPrintSlotsOffset = kPrintRingOffset + 4096;
static_assert(sizeof(PrintRing) <= 4096);
static_assert(kPrintSlotsOffset + kPrintSlots * kPrintSlotBytes <=
              kPrintRingOffset + kPrintRingBytes);
static_assert(kPrintRingOffset + kPrintRingBytes <= kChunksOffset);
static_assert(kCountersOffset + kMaxThreadSlots * kMaxCountedRecords * 16 <= kPrintRingOffset);
static_assert(sizeof(PrintSlot::text) >= bytecode::kMaxPrintfOutput);

// Offsets -> pointers in whichever process maps the shared buffer.
template <class T> T* at(void* shared, std::uint64_t offset) {
    return reinterpret_cast<T*>(static_cast<std::uint8_t*>(shared) + offset);
}
inline Header* header_of(void* shared) {
    return static_cast<Header*>(shared);
}
inline ChunkHeader* chunk_at(void* shared, std::size_t i) {
    return at<ChunkHeader>(shared, kChunksOffset + i * header_of(shared)->chunk_bytes);
}
// Bytes of a frame's R block: the staged core, then the tail.
inline std::uint32_t frame_register_bytes(const Header& h) {
    return h.core_register_bytes + h.tail_register_bytes;
}
inline std::size_t chunk_payload(const Header& h) {
    return h.chunk_bytes - kChunkHeaderBytes;
}
inline PrintRing* print_ring(void* shared) {
    return at<PrintRing>(shared, kPrintRingOffset);
}
inline PrintSlot* print_slot(void* shared, std::uint64_t number) {
    return at<PrintSlot>(shared, kPrintSlotsOffset) + number % kPrintSlots;
}
inline std::atomic<std::uint64_t>* sealed_ring(void* shared) {
    return at<std::atomic<std::uint64_t>>(shared, kSealedOffset);
}
inline std::atomic<std::uint32_t>* resumable_slots(void* shared) {
    return at<std::atomic<std::uint32_t>>(shared, kResumableOffset);
}
inline ThreadSlot* thread_slot(void* shared, std::size_t slot) {
    return at<ThreadSlot>(shared, kThreadSlotsOffset) + slot;
}
inline HitCounter* counter_row(void* shared, std::size_t slot) {
    return at<HitCounter>(shared, kCountersOffset) + slot * kMaxCountedRecords;
}
// Tracepoint record `index` lies at kConfigOffset + index * sizeof(TracepointRecord): tpagent
// takes records at such offsets only, also after a run's others (added during the run).
inline TracepointRecord* tracepoint_record(void* shared, std::uint32_t index) {
    return at<TracepointRecord>(shared, kConfigOffset) + index;
}
inline std::uint32_t record_index(void* shared, const TracepointRecord* rec) {
    return static_cast<std::uint32_t>(rec - tracepoint_record(shared, 0));
}
// Whether the collector, not the pad, stages gdb register `regnum`.
inline bool completed_by_collector(const Header& h, unsigned regnum) {
    if (regnum >= kMaxCoreRegisters || h.register_size[regnum] == 0) return false;
    const BlockCompletion& c = h.completion;
    const std::uint32_t at = h.register_offset[regnum];
    const auto in = [at](std::uint32_t offset, std::uint32_t size) {
        return size != 0 && at >= offset && at < offset + size;
    };
    return in(c.pc_offset, c.pc_size) || in(c.sp_offset, c.sp_size) ||
           in(c.flags_offset, c.flags_size) || in(c.constants_offset, c.constants_size);
}

} // namespace tpagent::inproc
