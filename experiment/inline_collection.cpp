#include "experiment/inline_collection.hpp"
#include "inproc/thread_state.hpp"
#include "trace/frame_format.hpp"
#include "bytecode/context.hpp"
#include "bytecode/program.hpp"
#include <algorithm>
#include <cstddef>
#include <fmt/format.h>

namespace tpagent::experiment {
namespace {

using namespace inproc;

// The largest range a pad copies in line (unrolled), and how many.
constexpr std::uint32_t kMaxInlineRange = 4096;
constexpr std::size_t kMaxInlineRanges = 16;

arch::InlineAgentLayout agent_layout(const SharedBuffer& shared) {
    const Header& h = shared.header();
    arch::InlineAgentLayout l;
    l.header = h.shared_buffer_address;
    l.forked_flag = h.forked_flag;
    l.thread_state = static_cast<std::int32_t>(h.thread_state_offset);
    if (h.thread_state_offset == 0) {
        l.thread_table = h.thread_table;
        l.thread_table_bits = h.thread_table_bits;
        l.thread_entry_bytes = h.thread_entry_bytes;
        l.thread_entry_state = h.thread_entry_state;
    }
    l.generation = offsetof(Header, generation);
    l.chunk_bytes = offsetof(Header, chunk_bytes);
    l.circular = offsetof(Header, circular);
    l.ranges_sequence = offsetof(Header, ranges_sequence);
    l.dropped_frames = offsetof(Header, dropped_frames);
    l.record_enabled = offsetof(TracepointRecord, enabled);
    l.record_next = offsetof(TracepointRecord, next);
    l.busy = offsetof(ThreadState, busy);
    l.slot_generation = offsetof(ThreadState, slot_generation);
    l.counters = offsetof(ThreadState, counters);
    l.chunk = offsetof(ThreadState, writer) + offsetof(ChunkWriter, chunk);
    l.linear_credit = offsetof(ThreadState, writer) + offsetof(ChunkWriter, linear_credit);
    l.tail_bytes = offsetof(ThreadState, tail_bytes);
    l.tail_registers = offsetof(ThreadState, tail_registers);
    l.thread_constants = offsetof(ThreadState, thread_constants);
    l.last_range_sequence = offsetof(ThreadState, last_range) + offsetof(LastRange, sequence);
    l.last_range_start = offsetof(ThreadState, last_range) + offsetof(LastRange, start);
    l.last_range_end = offsetof(ThreadState, last_range) + offsetof(LastRange, end);
    l.chunk_committed = offsetof(ChunkHeader, committed);
    l.chunk_frames = offsetof(ChunkHeader, frames);
    l.chunk_header_bytes = kChunkHeaderBytes;
    l.context_bytes = sizeof(bytecode::Context);
    l.context_registers = offsetof(bytecode::Context, registers);
    l.out_bytes = sizeof(bytecode::EvalOut);
    l.out_value = offsetof(bytecode::EvalOut, value);
    return l;
}

auto refused(std::string why) {
    return make_error(ErrorCode::Unsupported, std::move(why));
}

// The registers a condition reads, if it reads nothing else (no memory, no variable: its
// compiled code then touches only the context's register block).
Result<std::vector<int>> condition_registers(const SharedBuffer& shared, const ActionRecord& a,
                                             int pc_regnum) {
    using bytecode::Op;
    const auto* insns = at<const bytecode::Insn>(shared.local(), a.insns_offset);
    std::vector<int> regs;
    for (std::uint32_t i = 0; i < a.insn_count; ++i) {
        const bytecode::Insn& insn = insns[i];
        switch (insn.op) {
        case Op::Reg:
            if (insn.imm > static_cast<std::uint64_t>(pc_regnum))
                return refused("its condition reads a register the pad does not save");
            if (std::find(regs.begin(), regs.end(), static_cast<int>(insn.imm)) == regs.end())
                regs.push_back(static_cast<int>(insn.imm));
            break;
        case Op::Add:
        case Op::Sub:
        case Op::Mul:
        case Op::DivSigned:
        case Op::DivUnsigned:
        case Op::RemSigned:
        case Op::RemUnsigned:
        case Op::Lsh:
        case Op::RshSigned:
        case Op::RshUnsigned:
        case Op::LogNot:
        case Op::BitAnd:
        case Op::BitOr:
        case Op::BitXor:
        case Op::BitNot:
        case Op::Equal:
        case Op::LessSigned:
        case Op::LessUnsigned:
        case Op::Ext:
        case Op::ZeroExt:
        case Op::IfGoto:
        case Op::Goto:
        case Op::Const8:
        case Op::Const16:
        case Op::Const32:
        case Op::Const64:
        case Op::End:
        case Op::Dup:
        case Op::Pop:
        case Op::Swap:
        case Op::Pick:
        case Op::Rot:
            break;
        default:
            return refused("its condition reads memory or variables");
        }
    }
    return regs;
}

} // namespace

Result<arch::InlineCollection> inline_collection_for(const SharedBuffer& shared,
                                                     const TracepointRecord& rec, int pc_regnum) {
    const Header& h = shared.header();
    if ((h.thread_state_offset == 0 && h.thread_table == 0) || h.forked_flag == 0 ||
        h.thread_state_offset < INT32_MIN / 2 || h.thread_state_offset > INT32_MAX / 2)
        return refused("the agent's threads keep their state where a pad cannot reach it");
    if (rec.pass_count) return refused("it has a pass count");
    if (rec.collects_state) return refused("it collects FP/vector registers");
    if (rec.next) return refused("another tracepoint is at its address");
    const std::uint32_t index = record_index(shared.local(), &rec);
    if (index >= kMaxCountedRecords) return refused("its hits have no counter of their own");

    arch::InlineCollection c;
    c.agent = agent_layout(shared);
    if (rec.has_condition) {
        if (!rec.condition.compiled) return refused("its condition is interpreted");
        if (rec.condition.insn_count == 0) return refused("its condition's code is not known");
        auto regs = condition_registers(shared, rec.condition, pc_regnum);
        if (!regs) return regs.error();
        c.condition = rec.condition.compiled;
        c.condition_registers = std::move(*regs);
    }
    c.record = shared.remote(shared.offset_of(&rec));
    c.counter = static_cast<std::uint32_t>(index * sizeof(HitCounter));
    c.registers_tag = static_cast<std::uint8_t>(trace::kRegistersBlock);
    c.memory_tag = static_cast<std::uint8_t>(trace::kMemoryBlock);
    std::uint64_t end = kRecordBlocksOffset; // where the next block goes
    const auto* actions = at<const ActionRecord>(shared.local(), rec.actions_offset);
    for (std::uint32_t i = 0; i < rec.action_count; ++i) {
        const ActionRecord& a = actions[i];
        if (a.kind == ActionKind{}) continue; // nothing to collect
        if (a.kind == ActionKind::Registers) {
            if (c.registers_at) continue; // one R block, as the agent's collector writes
            if (h.tail_register_bytes % 8 || h.tail_register_bytes > 32)
                return refused("its thread registers are not whole words");
            c.registers_at = static_cast<std::uint32_t>(end);
            c.core_bytes = h.core_register_bytes;
            c.tail_bytes = h.tail_register_bytes;
            end += trace::registers_block_size(c.core_bytes + c.tail_bytes);
        } else if (a.kind == ActionKind::Memory) {
            if (a.base_register >= pc_regnum || a.base_register < -1)
                return refused("a range is based on a register the pad does not read");
            if (a.length == 0 || a.length > kMaxInlineRange)
                return refused(fmt::format("a range of {} bytes", a.length));
            if (c.ranges.size() == kMaxInlineRanges) return refused("too many ranges");
            c.ranges.push_back(
                {a.base_register, a.offset, a.length, static_cast<std::uint32_t>(end)});
            end += trace::kMemoryBlockHeaderSize + a.length;
        } else {
            return refused("it evaluates an expression");
        }
    }
    const std::uint64_t size = (end + 7) & ~std::uint64_t{7};
    if (size > rec.frame_bound) return refused("its frame is larger than its bound");
    c.size = static_cast<std::uint32_t>(size);
    c.first_word = size | std::uint64_t{index} << 32;
    c.frame_header = rec.number | (end - kRecordBlocksOffset) << 16;
    if (rec.number > 0xffff) return refused("its number does not fit a frame");
    return c;
}

} // namespace tpagent::experiment
