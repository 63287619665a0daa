// tpagent's side of the memory shared with the in-process agent (inproc/): finding it in a
// program, mapping it, configuring a run in it, and reading frames out of it without ptrace.
#pragma once
#include "inproc/shared_buffer.hpp"
#include "arch/arch.hpp"
#include "base/result.hpp"
#include "bytecode/compiler.hpp"
#include "bytecode/program.hpp"
#include "trace/shared_buffer_frames.hpp"
#include "experiment/fast_saved_state.hpp"
#include <cstdint>
#include <optional>
#include <cstring>
#include <memory>
#include <span>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace tpagent::experiment {

class SharedBuffer {
  public:
    // The shared buffer of the agent library loaded in process pid; NotFound if it is not loaded.
    static Result<std::unique_ptr<SharedBuffer>> open(pid_t pid);
    ~SharedBuffer();
    SharedBuffer(const SharedBuffer&) = delete;
    SharedBuffer& operator=(const SharedBuffer&) = delete;

    pid_t pid() const { return pid_; }
    inproc::Header& header() const { return *inproc::header_of(local_); }
    void* local() const { return local_; }
    // The program's address of a shared buffer offset.
    std::uint64_t remote(std::uint64_t offset) const {
        return header().shared_buffer_address + offset;
    }
    // The shared buffer offset of p, which points into our mapping.
    std::uint64_t offset_of(const void* p) const {
        return static_cast<std::uint64_t>(static_cast<const std::uint8_t*>(p) -
                                          static_cast<const std::uint8_t*>(local_));
    }
    // Where the library's rt:: helpers are in the program, for expressions compiled to run
    // there.
    const bytecode::HelperAddresses& helpers() const { return header().helpers; }

    // Configuring a run, while every thread of the program is stopped (the tracepoint records
    // go through SharedBufferConfig).
    //
    // First: tracing off, the stop fields, frame counts and hit counters cleared; the
    // buffer's kind, and the bytes a linear buffer has free.
    void begin_configuration(bool circular, std::int64_t linear_budget);
    // The staged R block: the registers the jump pads save (the architecture's fast block, or
    // the whole `g` block when the library does not keep to general registers) and where each
    // register lies in it, for the expressions; and the registers the collector appends to it
    // (Architecture::fast_block_tail), with the process's constant ones where
    // process_registers (a g block of one of its threads) has them. Returns the size of a
    // frame's R block. thread_pointer_borrowed: the pads set the thread pointer while they
    // run (inproc/shared_buffer.hpp), so its value from process_registers is a constant too
    // (left out without them).
    Result<std::uint32_t> describe_registers(const arch::Architecture& arch,
                                             std::span<const std::uint8_t> process_registers = {},
                                             bool thread_pointer_borrowed = false);
    // Where a frame's R block lies in the g block, as described.
    const trace::ShortRegisterBlock& short_register_block() const { return short_block_; }
    // The same for an R block of `bytes`: the described one, or that followed by the saved
    // FP/vector state (TracepointRecord::collects_state).
    trace::ShortRegisterBlock short_register_block(std::uint32_t bytes) const;
    // The FP/vector state pads save for tracepoints that collect it, as described.
    const FastSavedState* saved_state() const { return saved_state_.get(); }
    // Trace state variables: all undefined, then defined one by one (false: a number beyond
    // the shared buffer's table). A timestamp variable reads the clock.
    void clear_variables();
    // reading: trace::TraceStateVariables::Reading (0: a stored value).
    bool define_variable(std::uint32_t number, std::int64_t value, std::uint32_t reading);
    // A defined variable, or null.
    const inproc::Variable* variable(std::uint32_t number) const;

    // The run's chunks, every program thread stopped: their size from the buffer's (large
    // enough for `largest_record`), how many, all empty, and a new generation (threads drop
    // the chunks they held). TooLarge when a record cannot fit any chunk.
    Status configure_chunks(std::size_t buffer_bytes, std::uint64_t largest_record);
    // Hits and frame bytes of tracepoint record `index` so far, all threads together.
    struct HitTotals {
        std::uint64_t hits = 0;
        std::uint64_t bytes = 0;
    };
    HitTotals hit_totals(std::uint32_t index) const;
    // If the thread whose stack pointer is `sp` is inside a collector call now (it must be
    // stopped to be sure), the stack pointer the pad called with (ThreadSlot::frame).
    std::optional<std::uint64_t> collector_frame(std::uint64_t sp) const;
    // Whether a thread of process `pid` (a followed child) is inside a collector call now.
    bool collecting_in(pid_t pid) const;
    // A followed child ended or was let go: the chunks its threads held go to the next
    // writers to fill on (inproc::resume_chunk), or are sealed when nearly full (circular mode
    // reuses them); their frames are read as before. Only once no thread of it writes.
    void release_chunks_of(pid_t pid);
    // The chunks configure_chunks allocated (from chunks_address()), which the program should
    // map at tstart; set_mapped_in_program says it did.
    std::uint64_t chunks_address() const { return remote(inproc::kChunksOffset); }
    std::uint64_t populated_bytes() const { return populated_bytes_; }
    void set_mapped_in_program() { header().mapped_chunk_bytes = populated_bytes_; }
    // Gives back the pages of the buffer and of the run's configuration, in the program and
    // in tpagent alike, once nothing will read them (no frame is to be served, the trace is
    // not running): tracing off, threads drop their chunks. The header page stays, and the
    // mapping (address space only). Also done when the shared buffer is destroyed.
    void release_buffer();
    // Rewrites the readable ranges (sorted, disjoint) under the seqlock.
    void set_readable_ranges(std::span<const inproc::ReadableRange> ranges);
    // The readable mappings of process pid (from /proc/PID/maps), merged, for the above.
    static std::vector<inproc::ReadableRange> readable_ranges_of(pid_t pid);

  private:
    SharedBuffer(pid_t pid, void* local) : pid_(pid), local_(local) {}
    // Punches the shared buffer's pages from offset `from` to its end out of the memfd.
    void give_back(std::uint64_t from);
    pid_t pid_;
    void* local_;
    trace::ShortRegisterBlock short_block_;
    std::unique_ptr<FastSavedState> saved_state_;
    std::uint64_t populated_bytes_ = 0;
};

// A run's tracepoint records, actions and expression code, allocated one after the other in
// the shared buffer's configuration area from its start: take the records first, so that a record's
// index is its position.
class SharedBufferConfig {
  public:
    // `used`: bytes already taken (a record added during a run goes after the run's others).
    explicit SharedBufferConfig(SharedBuffer& shared, std::uint64_t used = 0)
        : shared_(shared), used_(used) {}
    std::uint64_t used() const { return used_; }

    // `count` zeroed objects, at a multiple of `align` bytes from the area's start; TooLarge
    // when the area is full.
    template <class T> Result<std::span<T>> take(std::size_t count, std::size_t align = 8) {
        auto offset = take_bytes(count * sizeof(T), align);
        if (!offset) return offset.error();
        auto* first = inproc::at<T>(shared_.local(), *offset);
        std::memset(static_cast<void*>(first), 0, count * sizeof(T));
        return std::span<T>(first, count);
    }
    // An Expression action (or condition) running `program`'s instructions, copied into the
    // area; interpreted until its `compiled` is set.
    Result<inproc::ActionRecord> expression(const bytecode::Program& program);

  private:
    Result<std::uint64_t> take_bytes(std::size_t bytes, std::size_t align);

    SharedBuffer& shared_;
    std::uint64_t used_ = 0;
};

// Room a collecting expression (trace opcodes) may fill in one frame.
inline constexpr std::uint64_t kExpressionAllowance = 8192;

// Whether these actions collect `$regs` (a pad for them stages the whole core).
bool collects_registers(std::span<const inproc::ActionRecord> actions);
// Whether a hit reads registers the pads leave to the collector (TracepointRecord::
// complete_block): an expression that reads one (`reg`); `$regs` or a range based on one.
bool reads_completed_register(const inproc::Header& h, const bytecode::Program& expression);
bool reads_completed_register(const inproc::Header& h,
                              std::span<const inproc::ActionRecord> actions);
// The registers the header describes (describe_registers) as code compiled for the agent
// reads them: `reg` a load from the staged block (Context::registers).
bytecode::StagedRegisterLayout staged_register_layout(const inproc::Header& h);
// TracepointRecord::frame_bound of a tracepoint with these actions: its record header, frame
// header and blocks (R blocks of register_bytes), rounded up to 8 bytes.
std::uint64_t staged_frame_bound(std::span<const inproc::ActionRecord> actions,
                                 std::uint32_t register_bytes);

} // namespace tpagent::experiment
