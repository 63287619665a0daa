#include "experiment/shared_buffer.hpp"
#include "inproc/frame_chunks.hpp"
#include "process/linux/code_guard.hpp"
#include "base/proc_maps.hpp"
#include "base/proc_files.hpp"
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tpagent::experiment {

namespace {

using namespace inproc;

constexpr std::string_view kMemfdLink = "/memfd:tpagent-inproc";

// The shared buffer as a file of ours: through the program's open fd, else (the program closed it)
// through its mapping.
int open_shared_buffer_file(pid_t pid) {
    return open_process_file(
        pid, [](const std::string& entry) { return read_link(entry).starts_with(kMemfdLink); });
}

} // namespace

Result<std::unique_ptr<SharedBuffer>> SharedBuffer::open(pid_t pid) {
    const int fd = open_shared_buffer_file(pid);
    if (fd < 0)
        return make_error(ErrorCode::NotFound,
                          "the in-process agent (libtpagent-inproc.so) is not loaded in the "
                          "program: start it with tpagent --inproc, or LD_PRELOAD the library");
    void* local = mmap(nullptr, kSharedBufferBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (local == MAP_FAILED) {
        ::close(fd);
        return make_error(
            ErrorCode::SystemError,
            fmt::format("cannot map the in-process agent's memory: {}", std::strerror(errno)));
    }
    struct stat file {};
    const bool known = fstat(fd, &file) == 0;
    ::close(fd);
    const Header& h = *header_of(local);
    if (__atomic_load_n(&h.magic, __ATOMIC_ACQUIRE) != kMagic || h.version != kVersion ||
        h.shared_buffer_bytes != kSharedBufferBytes) {
        munmap(local, kSharedBufferBytes); // (not ours to change)
        return make_error(ErrorCode::Unsupported,
                          "the in-process agent loaded in the program is another version than "
                          "this tpagent's");
    }
    std::unique_ptr<SharedBuffer> shared(new SharedBuffer(pid, local));
    // Should tpagent die, its watchdog gives the buffer's pages back in the program.
    if (known)
        process::code_guard::publish_shared_pages(pid, {file.st_dev, file.st_ino, kConfigOffset,
                                                        kSharedBufferBytes - kConfigOffset,
                                                        offsetof(Header, tracing)});
    return shared;
}

SharedBuffer::~SharedBuffer() {
    // Nothing reads this shared buffer's frames any more: its pages go back to the program's
    // system.
    release_buffer();
    process::code_guard::forget_shared_pages(pid_);
    munmap(local_, kSharedBufferBytes);
}

void SharedBuffer::give_back(std::uint64_t from) {
    // Punching the pages out of the memfd frees them in every process that maps it: the
    // program's RssShmem drops with tpagent's. The mapping stays, and a page written again
    // (a collector still inside a hit) is a new zero page, never a fault.
    // Not the dprintf lines' ring: its lines are not the trace's.
    const auto punch = [this](std::uint64_t begin, std::uint64_t end) {
        if (begin < end &&
            madvise(static_cast<std::uint8_t*>(local_) + begin, end - begin, MADV_REMOVE) != 0)
            spdlog::warn("the trace buffer's pages in process {} cannot be given back: {}", pid_,
                         std::strerror(errno));
    };
    const std::uint64_t ring_end = kPrintRingOffset + kPrintRingBytes;
    if (from < kPrintRingOffset) punch(from, kPrintRingOffset);
    punch(std::max<std::uint64_t>(from, ring_end), kSharedBufferBytes);
}

void SharedBuffer::release_buffer() {
    Header& h = header();
    h.tracing.store(0, std::memory_order_release);
    // Threads drop the chunks they held (their exit no longer seals one): what they would
    // write next is a new run's.
    h.generation.fetch_add(1, std::memory_order_release);
    // (chunk_count stays: a thread still inside a hit divides by it.)
    h.mapped_chunk_bytes = 0;
    h.slots_taken.store(0, std::memory_order_relaxed);
    h.range_count = 0;
    populated_bytes_ = 0;
    give_back(kConfigOffset);
}

void SharedBuffer::begin_configuration(bool circular, std::int64_t linear_budget) {
    Header& h = header();
    h.tracing.store(0, std::memory_order_release);
    h.stop_reason.store(static_cast<std::uint32_t>(StopReason::None), std::memory_order_relaxed);
    h.stop_tracepoint = 0;
    h.stop_status = 0;
    h.stop_address = 0;
    h.dropped_frames.store(0, std::memory_order_relaxed);
    h.discarded_frames.store(0, std::memory_order_relaxed);
    // Only the rows threads took are dirty.
    const std::size_t rows = std::min<std::size_t>(h.slots_taken.load(), kMaxThreadSlots);
    if (rows)
        std::memset(static_cast<void*>(counter_row(local_, 0)), 0,
                    rows * kMaxCountedRecords * sizeof(HitCounter));
    h.slots_taken.store(0, std::memory_order_relaxed);
    h.circular = circular ? 1 : 0;
    h.recording = 0;
    h.linear_budget.store(linear_budget, std::memory_order_relaxed);
}

Status SharedBuffer::configure_chunks(std::size_t buffer_bytes, std::uint64_t largest_record) {
    Header& h = header();
    // About 16 chunks per buffer, so circular mode discards a sixteenth at a time, within
    // 64 KiB .. 1 MiB; larger when one record needs it.
    std::size_t bytes = kMinChunkBytes;
    while (bytes < kMaxChunkBytes && bytes * 32 <= buffer_bytes)
        bytes *= 2;
    while (bytes < kMaxChunkBytes && bytes - kChunkHeaderBytes < largest_record)
        bytes *= 2;
    if (bytes - kChunkHeaderBytes < largest_record)
        return make_error(ErrorCode::TooLarge,
                          fmt::format("a fast tracepoint collects up to {} bytes per hit; the "
                                      "in-process agent takes at most {}",
                                      largest_record, kMaxChunkBytes - kChunkHeaderBytes));
    const std::size_t payload = bytes - kChunkHeaderBytes;
    const std::size_t filled = (buffer_bytes + payload - 1) / payload;
    // The chunks threads are filling come on top of those the size asks for: in linear mode
    // the budget is the limit; in circular mode the ring keeps `filled` sealed chunks, and
    // each writer (up to kWriterChunks at once) has a chunk of its own besides.
    constexpr std::size_t kWriterChunks = 64;
    const std::size_t count = std::min(filled + kWriterChunks, kChunkAreaBytes / bytes);
    h.chunk_bytes = static_cast<std::uint32_t>(bytes);
    h.chunk_count = static_cast<std::uint32_t>(count);
    h.circular_keep = static_cast<std::uint32_t>(std::min(filled, count - 1));
    // The buffer's pages are allocated now rather than at the program's first writes, each of
    // which would be a fault of some microseconds in a collecting thread (the in-process agent
    // maps them in one call per chunk). Linear mode's spare chunks are left to fault in. An
    // earlier, larger run's pages past those are given back first (before the chunk headers
    // below are written).
    populated_bytes_ = std::min(count, filled) * bytes;
    give_back(kChunksOffset + populated_bytes_);
    for (std::size_t i = 0; i < count; ++i) {
        ChunkHeader* c = chunk_at(local_, i);
        c->state.store(static_cast<std::uint32_t>(ChunkState::Free), std::memory_order_relaxed);
        c->committed.store(0, std::memory_order_relaxed);
        c->frames.store(0, std::memory_order_relaxed);
        c->epoch.fetch_add(1, std::memory_order_relaxed);
    }
    madvise(chunk_at(local_, 0), populated_bytes_, MADV_POPULATE_WRITE);
    h.mapped_chunk_bytes = 0; // until the program maps them too (set_mapped_in_program)
    h.next_fresh.store(0, std::memory_order_relaxed);
    h.take_count.store(0, std::memory_order_relaxed);
    h.sealed_count.store(0, std::memory_order_relaxed);
    h.reused_count.store(0, std::memory_order_relaxed);
    h.recorded_count.store(0, std::memory_order_relaxed);
    h.stalled_seal.store(~std::uint64_t{0}, std::memory_order_relaxed);
    // No entry may pass for a seal of this run before its sealer writes it (a zero is seal 0 of
    // chunk 0; an old run's entries have this run's seal numbers): all ones is seal 2^48 - 1.
    for (std::size_t i = 0; i < count; ++i)
        sealed_ring(local_)[i].store(~std::uint64_t{0}, std::memory_order_relaxed);
    for (std::size_t i = 0; i < kMaxResumable; ++i)
        resumable_slots(local_)[i].store(0, std::memory_order_relaxed);
    h.resumable_count.store(0, std::memory_order_relaxed);
    h.generation.fetch_add(1, std::memory_order_release);
    return ok_status();
}

trace::ShortRegisterBlock SharedBuffer::short_register_block(std::uint32_t bytes) const {
    trace::ShortRegisterBlock layout = short_block_;
    if (saved_state_ && saved_state_->bytes() && bytes == layout.size() + saved_state_->bytes()) {
        layout.state = saved_state_->bytes();
        layout.saved = saved_state_.get();
    }
    return layout;
}

std::optional<std::uint64_t> SharedBuffer::collector_frame(std::uint64_t sp) const {
    const std::size_t rows = std::min<std::size_t>(
        header().slots_taken.load(std::memory_order_acquire), kMaxThreadSlots);
    for (std::size_t r = 0; r < rows; ++r) {
        const ThreadSlot& slot = *thread_slot(local_, r);
        // (A followed child's threads have the same stacks as the parent's.)
        const auto owner = static_cast<pid_t>(slot.pid.load(std::memory_order_relaxed));
        if (owner != 0 && owner != pid_) continue;
        const std::uint64_t frame = slot.frame.load(std::memory_order_acquire);
        if (frame != 0 && sp < frame && frame - sp < kCollectorStackReach) return frame;
    }
    return std::nullopt;
}

bool SharedBuffer::collecting_in(pid_t pid) const {
    const std::size_t rows = std::min<std::size_t>(
        header().slots_taken.load(std::memory_order_acquire), kMaxThreadSlots);
    for (std::size_t r = 0; r < rows; ++r) {
        const ThreadSlot& slot = *thread_slot(local_, r);
        if (static_cast<pid_t>(slot.pid.load(std::memory_order_relaxed)) == pid &&
            slot.frame.load(std::memory_order_acquire) != 0)
            return true;
    }
    return false;
}

void SharedBuffer::release_chunks_of(pid_t pid) {
    Header& h = header();
    const std::uint64_t generation = h.generation.load(std::memory_order_acquire);
    const std::uint32_t taken =
        std::min(h.next_fresh.load(std::memory_order_acquire), h.chunk_count);
    const std::size_t payload = chunk_payload(h);
    std::atomic<std::uint32_t>* slots = resumable_slots(local_);
    for (std::uint32_t i = 0; i < taken; ++i) {
        ChunkHeader* c = chunk_at(local_, i);
        if (c->state.load(std::memory_order_acquire) !=
                static_cast<std::uint32_t>(ChunkState::Owned) ||
            c->generation != generation || static_cast<pid_t>(c->owner) != pid)
            continue;
        // With an eighth or more of it free, the next writer goes on filling it.
        bool resumable = false;
        if (payload - c->committed.load(std::memory_order_acquire) >= payload / 8)
            for (std::size_t s = 0; s < kMaxResumable && !resumable; ++s) {
                std::uint32_t empty = 0;
                resumable =
                    slots[s].compare_exchange_strong(empty, i + 1, std::memory_order_acq_rel);
            }
        spdlog::debug("process {} left the trace: its chunk {} ({} bytes) {}", pid, i,
                      c->committed.load(std::memory_order_relaxed),
                      resumable ? "resumable" : "sealed");
        if (resumable)
            h.resumable_count.fetch_add(1, std::memory_order_release);
        else
            seal_chunk(local_, c);
    }
}

SharedBuffer::HitTotals SharedBuffer::hit_totals(std::uint32_t index) const {
    const Header& h = header();
    HitTotals t;
    if (index < kMaxCountedRecords) {
        const std::size_t rows = std::min<std::size_t>(h.slots_taken.load(), kMaxThreadSlots);
        for (std::size_t r = 0; r < rows; ++r) {
            const HitCounter& c = counter_row(local_, r)[index];
            t.hits += c.hits.load(std::memory_order_relaxed);
            t.bytes += c.bytes.load(std::memory_order_relaxed);
        }
    }
    const TracepointRecord& rec = *tracepoint_record(local_, index);
    t.hits += rec.shared_hits.hits.load(std::memory_order_relaxed);
    t.bytes += rec.shared_hits.bytes.load(std::memory_order_relaxed);
    return t;
}

Result<std::uint32_t>
SharedBuffer::describe_registers(const arch::Architecture& arch,
                                 std::span<const std::uint8_t> process_registers,
                                 bool thread_pointer_borrowed) {
    Header& h = header();
    const std::size_t core = h.general_registers_only ? arch.fast_block_bytes() : arch.g_size();
    if (core == 0 || core > arch.g_size())
        return make_error(ErrorCode::Unsupported, "fast tracepoints: no register block layout");
    h.g_size = static_cast<std::uint32_t>(arch.g_size());
    h.core_register_bytes = static_cast<std::uint32_t>(core);
    const auto regs = arch.registers();
    for (std::size_t r = 0; r < kMaxCoreRegisters; ++r) {
        const bool in_core =
            r < regs.size() && regs[r].size <= 8 && regs[r].g_offset + regs[r].size <= core;
        h.register_offset[r] = in_core ? static_cast<std::uint16_t>(regs[r].g_offset) : 0;
        h.register_size[r] = in_core ? static_cast<std::uint8_t>(regs[r].size) : 0;
    }
    // What the pads leave for the collector to fill in: inside the core, in sizes it copies.
    const auto c = arch.fast_block_completion();
    const auto fits = [core](std::uint32_t offset, std::uint32_t size, std::uint32_t max) {
        return size == 0 || (size <= max && offset + size <= core);
    };
    if (!fits(c.pc_offset, c.pc_size, 8) || (c.pc_size != 0 && c.pc_size != 8) ||
        !fits(c.sp_offset, c.sp_size, 8) || (c.sp_size != 0 && c.sp_size != 8) ||
        !fits(c.flags_offset, c.flags_size, 8) || c.flags_size % 4 != 0 ||
        !fits(c.constants_offset, c.constants_size, kMaxThreadConstants) ||
        c.constants_size % 4 != 0)
        return make_error(ErrorCode::Unsupported, "fast tracepoints: bad block completion");
    h.completion = {static_cast<std::uint16_t>(c.pc_offset),
                    static_cast<std::uint16_t>(c.sp_offset),
                    static_cast<std::uint16_t>(c.flags_offset),
                    static_cast<std::uint16_t>(c.constants_offset),
                    static_cast<std::uint8_t>(c.pc_size),
                    static_cast<std::uint8_t>(c.sp_size),
                    static_cast<std::uint8_t>(c.flags_size),
                    static_cast<std::uint8_t>(c.constants_size),
                    c.sp_bias};
    // The tail the collector appends: registers adjacent in g, beyond the core; the process's
    // constant ones first (their values from process_registers, a g block of one of its
    // threads, where those are available), 16 bytes at most of each (the collector's room).
    // Expressions cannot read them: the pad does not stage them.
    short_block_ = {h.core_register_bytes, 0, 0};
    h.tail_register_bytes = 0;
    h.tail_by_instruction = 0;
    h.tail_constant_bytes = 0;
    h.tail_constants[0] = h.tail_constants[1] = 0;
    h.saved_state_bytes = 0;
    h.saved_state_frame_offset = 0;
    saved_state_.reset();
    if (h.general_registers_only) {
        const auto tail = arch.fast_block_tail();
        // Registers that follow one another in g, after the core: their first offset and bytes.
        auto adjacent = [&](const std::vector<int>& regnums)
            -> std::optional<std::pair<std::uint32_t, std::uint32_t>> {
            std::uint32_t bytes = 0, first = 0;
            for (int r : regnums) {
                if (r < 0 || static_cast<std::size_t>(r) >= regs.size()) return std::nullopt;
                const auto& d = regs[static_cast<std::size_t>(r)];
                if (bytes == 0) first = d.g_offset;
                if (d.g_offset != first + bytes || d.g_offset < core || d.size % 8 != 0)
                    return std::nullopt;
                bytes += d.size;
            }
            if (regnums.empty() || first + bytes > arch.g_size()) return std::nullopt;
            return std::pair{first, bytes};
        };
        const auto own = adjacent(tail.regnums);
        std::vector<int> with_constants = tail.constant_regnums;
        with_constants.insert(with_constants.end(), tail.regnums.begin(), tail.regnums.end());
        const bool read = process_registers.size() >= arch.g_size();
        const auto all =
            read && !tail.constant_regnums.empty() ? adjacent(with_constants) : std::nullopt;
        std::uint32_t first = own ? own->first : 0, constant_bytes = 0;
        std::uint32_t thread_bytes = own ? own->second : 0; // read by each thread
        if (all && all->second - thread_bytes <= sizeof h.tail_constants) {
            first = all->first;
            constant_bytes = all->second - thread_bytes;
        }
        if (thread_pointer_borrowed) constant_bytes += thread_bytes, thread_bytes = 0;
        const bool known =
            constant_bytes == 0 || (read && constant_bytes <= sizeof h.tail_constants);
        if (own && own->second <= 16 && known) {
            if (constant_bytes)
                std::memcpy(h.tail_constants, process_registers.data() + first, constant_bytes);
            h.tail_register_bytes = constant_bytes + thread_bytes;
            h.tail_constant_bytes = constant_bytes;
            h.tail_by_instruction = tail.by_instruction ? 1 : 0;
            short_block_ = {h.core_register_bytes, first, h.tail_register_bytes};
        }
        saved_state_ = std::make_unique<FastSavedState>(arch);
        h.saved_state_bytes = saved_state_->bytes();
        h.saved_state_frame_offset = saved_state_->frame_offset();
    }
    return frame_register_bytes(h);
}

void SharedBuffer::clear_variables() {
    auto* vars = at<Variable>(local_, kVariablesOffset);
    for (std::size_t i = 0; i < kMaxVariables; ++i) {
        vars[i].defined = 0;
        vars[i].reading = 0;
        vars[i].value.store(0, std::memory_order_relaxed);
    }
}

bool SharedBuffer::define_variable(std::uint32_t number, std::int64_t value,
                                   std::uint32_t reading) {
    if (number >= kMaxVariables) return false;
    Variable& v = at<Variable>(local_, kVariablesOffset)[number];
    v.defined = 1;
    v.reading = reading;
    v.value.store(value, std::memory_order_relaxed);
    return true;
}

const Variable* SharedBuffer::variable(std::uint32_t number) const {
    if (number >= kMaxVariables) return nullptr;
    const Variable& v = at<const Variable>(local_, kVariablesOffset)[number];
    return v.defined ? &v : nullptr;
}

void SharedBuffer::set_readable_ranges(std::span<const ReadableRange> ranges) {
    Header& h = header();
    const std::size_t n = std::min(ranges.size(), kMaxRanges);
    h.ranges_sequence.fetch_add(1, std::memory_order_acq_rel); // odd: being rewritten
    std::atomic_thread_fence(std::memory_order_release);
    if (n)
        std::memcpy(at<ReadableRange>(local_, kRangesOffset), ranges.data(), n * sizeof ranges[0]);
    h.range_count = static_cast<std::uint32_t>(n);
    h.ranges_sequence.fetch_add(1, std::memory_order_release);
}

std::vector<ReadableRange> SharedBuffer::readable_ranges_of(pid_t pid) {
    std::vector<ReadableRange> out;
    for (const MappedRange& m : read_maps(pid)) {
        if (!m.readable || m.name == "[vvar]") continue;
        if (!out.empty() && out.back().end == m.start)
            out.back().end = m.end;
        else
            out.push_back({m.start, m.end});
    }
    return out;
}

Result<std::uint64_t> SharedBufferConfig::take_bytes(std::size_t bytes, std::size_t align) {
    const std::uint64_t at = (used_ + align - 1) / align * align;
    if (at + bytes > kConfigBytes)
        return make_error(ErrorCode::TooLarge,
                          "fast tracepoints: too many actions for the in-process agent");
    used_ = at + bytes;
    return kConfigOffset + at;
}

Result<ActionRecord> SharedBufferConfig::expression(const bytecode::Program& program) {
    const auto insns = program.insns();
    auto code = take<bytecode::Insn>(insns.size());
    if (!code) return code.error();
    std::copy(insns.begin(), insns.end(), code->begin());
    ActionRecord a{};
    a.kind = ActionKind::Expression;
    a.insns_offset = shared_.offset_of(code->data());
    a.insn_count = static_cast<std::uint32_t>(insns.size());
    a.backward_jump_budget = program.backward_jump_budget();
    a.compiled = 0;
    return a;
}

bool reads_completed_register(const Header& h, const bytecode::Program& expression) {
    return std::ranges::any_of(expression.insns(), [&](const bytecode::Insn& i) {
        return i.reachable && i.op == bytecode::Op::Reg &&
               completed_by_collector(h, static_cast<unsigned>(i.imm));
    });
}

bytecode::StagedRegisterLayout staged_register_layout(const Header& h) {
    bytecode::StagedRegisterLayout layout(inproc::kMaxCoreRegisters);
    for (std::size_t n = 0; n < layout.size(); ++n)
        layout[n] = {h.register_offset[n], h.register_size[n]};
    return layout;
}

bool collects_registers(std::span<const ActionRecord> actions) {
    return std::ranges::any_of(
        actions, [](const ActionRecord& a) { return a.kind == ActionKind::Registers; });
}

bool reads_completed_register(const Header& h, std::span<const ActionRecord> actions) {
    // A marker's arguments may be anywhere, the stack pointer included.
    return collects_registers(actions) || std::ranges::any_of(actions, [&](const ActionRecord& a) {
               return (a.kind == ActionKind::Memory && a.base_register >= 0 &&
                       completed_by_collector(h, static_cast<unsigned>(a.base_register))) ||
                      a.kind == ActionKind::StaticData;
           });
}

std::uint64_t staged_frame_bound(std::span<const ActionRecord> actions,
                                 std::uint32_t register_bytes) {
    std::uint64_t bound = kRecordBlocksOffset + 7;
    for (const ActionRecord& a : actions) {
        if (a.kind == ActionKind::Registers)
            bound += trace::registers_block_size(register_bytes);
        else if (a.kind == ActionKind::Memory)
            bound += trace::memory_blocks_bound(a.length);
        else if (a.kind == ActionKind::Expression)
            bound += kExpressionAllowance;
        else if (a.kind == ActionKind::StaticData)
            bound += trace::kStaticDataBlockHeaderSize + a.length;
    }
    return bound & ~std::uint64_t{7};
}

} // namespace tpagent::experiment
