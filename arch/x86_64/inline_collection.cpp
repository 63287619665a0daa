#include "arch/x86_64/inline_collection.hpp"
#include <algorithm>
#include <fmt/format.h>
#include <initializer_list>

namespace tpagent::arch::x86_64 {
// A namespace of its own: unity builds put this file together with jump_pad.cpp, whose
// file-local names (kRedZone, of another type) would clash with these.
namespace pad_front {
namespace {

using x86_writer::Mem;
using x86_writer::Reg;
using x86_writer::X86Writer;
using enum x86_writer::Reg;

constexpr std::int32_t kRedZone = 128;
constexpr auto kBelow = x86_writer::Cond::B;
constexpr auto kAbove = x86_writer::Cond::A;
constexpr auto kEqual = x86_writer::Cond::E;
constexpr auto kNotEqual = x86_writer::Cond::NE;
constexpr auto kLess = x86_writer::Cond::L;

// gdb's order of the general registers (regnums 0..15) as the hardware numbers them.
constexpr Reg kGdbOrder[16] = {RAX, RBX, RCX, RDX, RSI, RDI, RBP, RSP,
                               R8,  R9,  R10, R11, R12, R13, R14, R15};

void store16_imm(X86Writer& a, Mem m, std::uint16_t v) {
    a.byte(0x66);
    a.op_mem_imm(false, 0xc7, 0, m, v, 2);
}

// The front's state: the registers it saved and where, the labels' patch lists.
class Front {
  public:
    Front(X86Writer& a, const InlineCollection& c, std::uint64_t address, const InlineCore& core)
        : a_(a), c_(c), address_(address), core_(core), t_(c.agent.thread_state),
          in_table_(c.agent.thread_table != 0) {}

    Result<PadFront> emit(PadFront front);

  private:
    // The stack slot of a register the front saved; -1 for one it left alone.
    std::int32_t slot_of(Reg r) const {
        for (std::size_t i = 0; i < pushed_.size(); ++i)
            if (pushed_[i] == r) return static_cast<std::int32_t>(8 * (pushed_.size() - 1 - i));
        return -1;
    }
    // Where the saved registers are: rsp, or rbx while the condition has the stack.
    Reg base_ = RSP;
    std::int32_t thread_rsp() const {
        return static_cast<std::int32_t>(8 * pushed_.size()) + kRedZone;
    }
    void push(Reg r) {
        a_.push(r);
        pushed_.push_back(r);
    }
    // dst = the program's value of gdb register `regnum` (0..15).
    void value_of(Reg dst, int regnum) {
        const Reg r = kGdbOrder[regnum];
        if (r == RSP)
            a_.lea(dst, Mem{base_, thread_rsp()});
        else if (const std::int32_t slot = slot_of(r); slot >= 0)
            a_.load(dst, Mem{base_, slot});
        else
            a_.mov(dst, r);
    }
    // rsi = the address of range `r`.
    void range_address(const InlineCollection::Range& r) {
        if (r.base_regnum < 0) {
            a_.mov_imm(RSI, r.offset);
            return;
        }
        value_of(RSI, r.base_regnum);
        if (X86Writer::fits_i32(r.offset)) {
            if (r.offset) a_.lea(RSI, Mem{RSI, static_cast<std::int32_t>(r.offset)});
        } else {
            a_.mov_imm(RAX, r.offset);
            a_.alu(x86_writer::ADD, RSI, RAX);
        }
    }
    // op with the thread's state's `field` as operand: fs-relative (the library's TLS), or from
    // r8, where the image's thread table lookup left the state's address.
    void ts_op(bool w, std::initializer_list<std::uint8_t> op, unsigned reg, std::uint32_t field) {
        const auto at = static_cast<std::int32_t>(field);
        if (!in_table_) {
            a_.fs_op(w, op, reg, t_ + at);
            return;
        }
        a_.rex(w, reg, R8);
        for (std::uint8_t b : op)
            a_.byte(b);
        a_.modrm_mem(reg, Mem{R8, at});
    }
    void find_thread_state();
    void jcc_to(x86_writer::Cond c, std::vector<std::size_t>& label) { label.push_back(a_.jcc(c)); }
    void bind(std::vector<std::size_t>& label) {
        for (std::size_t at : label)
            a_.patch(at, a_.pos());
        label.clear();
    }
    void restore();
    void record_checks();
    void condition();
    void checks();
    void write_record();
    void write_registers(std::int32_t at);
    void copy_range(const InlineCollection::Range& r);

    X86Writer& a_;
    const InlineCollection& c_;
    std::uint64_t address_;
    InlineCore core_;
    std::int32_t t_;
    bool in_table_ = false; // the image's threads: their state found in its table, into r8
    std::vector<Reg> pushed_;
    std::optional<PadCopyRange> copy_;
    std::vector<std::size_t> to_return_, to_unbusy_generic_, to_generic_;
};

void Front::restore() {
    for (auto r = pushed_.rbegin(); r != pushed_.rend(); ++r) {
        if (*r == RCX) break; // the gate's, popped below
        if (*r == RAX && r + 1 != pushed_.rend() && *(r + 1) == RAX) {
            // The flags, as lahf/seto kept them in ax: OF from al (0x7f + 1 overflows), the
            // rest by sahf. Nothing after this changes a flag: pops and lea only.
            a_.pop(RAX);
            a_.flags_from_ax();
            continue;
        }
        if (*r == RSP) { // the pushfq slot
            a_.lea(RSP, Mem{RSP, 8});
            continue;
        }
        a_.pop(*r);
    }
    a_.pop(RCX);
    a_.lea(RSP, Mem{RSP, kRedZone});
}

// Whether this hit is the tracepoint's at all, the record enabled and alone at its address; a
// forked child's goes to the collector, which knows whether the trace follows the child.
void Front::record_checks() {
    const InlineAgentLayout& l = c_.agent;
    a_.mov_imm(RAX, l.forked_flag);
    a_.op_mem_imm(false, 0x80, 7, Mem{RAX, 0}, 0, 1); // cmp byte [rax], 0
    jcc_to(kNotEqual, to_generic_);
    a_.mov_imm(RDI, c_.record);
    a_.op_mem_imm(false, 0x83, 7, Mem{RDI, static_cast<std::int32_t>(l.record_enabled)}, 0, 1);
    jcc_to(kEqual, to_return_);
    // Another record at the address: the agent's collector runs the chain.
    a_.op_mem_imm(true, 0x83, 7, Mem{RDI, static_cast<std::int32_t>(l.record_next)}, 0, 1);
    jcc_to(kNotEqual, to_generic_);
}

// The compiled condition, called as the agent's collector calls it, on an aligned stack below
// the saved registers (rbx keeps where they are: the call preserves it). Its block holds only
// the registers it reads; its context only that block (it reads nothing else).
void Front::condition() {
    const InlineAgentLayout& l = c_.agent;
    constexpr std::int32_t kBlock = 136; // rax..r15 and rip, gdb's offsets
    const auto context = kBlock;
    const auto out = context + static_cast<std::int32_t>((l.context_bytes + 7) / 8 * 8);
    const auto area = (out + static_cast<std::int32_t>(l.out_bytes) + 15) / 16 * 16;
    a_.mov(RBX, RSP);
    base_ = RBX;
    a_.lea(RSP, Mem{RSP, -area});
    a_.alu_imm(x86_writer::AND, RSP, -16);
    for (int regnum : c_.condition_registers) {
        if (regnum == 16) {
            a_.mov_imm(RAX, address_);
            a_.store(Mem{RSP, static_cast<std::int32_t>(core_.pc_offset)}, RAX);
            continue;
        }
        value_of(RAX, regnum);
        a_.store(Mem{RSP, 8 * regnum}, RAX);
    }
    a_.store(Mem{RSP, context + static_cast<std::int32_t>(l.context_registers)}, RSP);
    a_.lea(RDI, Mem{RSP, context});
    a_.lea(RSI, Mem{RSP, out});
    a_.mov_imm(RAX, c_.condition);
    a_.call(RAX);
    a_.load(RCX, Mem{RSP, out + static_cast<std::int32_t>(l.out_value)}); // before rsp leaves it
    a_.mov(RSP, RBX);
    base_ = RSP;
    a_.rr(0x85, RAX, RAX, false);   // test eax, eax: EvalStatus::Ok is 0
    jcc_to(kNotEqual, to_generic_); // the agent's collector evaluates it again and says why
    a_.test(RCX, RCX);
    jcc_to(kEqual, to_return_); // rejected: no frame, no hit counted
}

// The image's thread_home() and this_thread(), with the thread pointer at fs:0 (the TCB's
// pointer to itself): r8 = the entry's state; a thread with none yet is the agent's collector's.
void Front::find_thread_state() {
    const InlineAgentLayout& l = c_.agent;
    a_.fs_op(true, {0x8b}, RAX, 0); // mov rax, fs:0
    a_.mov(R8, RAX);
    a_.mov_imm(RDX, 0x9e3779b97f4a7c15ull);
    a_.imul(RAX, RDX);
    a_.shift_imm(x86_writer::SHR, RAX, static_cast<std::uint8_t>(64 - l.thread_table_bits));
    a_.imul_imm(RAX, static_cast<std::int32_t>(l.thread_entry_bytes));
    a_.mov_imm(RDX, l.thread_table);
    a_.alu(x86_writer::ADD, RAX, RDX);
    a_.test(R8, R8);
    jcc_to(kEqual, to_generic_);
    a_.load(RDX, Mem{RAX, 0}); // the entry's key (relaxed)
    a_.alu(x86_writer::CMP, RDX, R8);
    jcc_to(kNotEqual, to_generic_);
    a_.lea(R8, Mem{RAX, static_cast<std::int32_t>(l.thread_entry_state)});
}

void Front::checks() {
    const InlineAgentLayout& l = c_.agent;
    if (in_table_) find_thread_state();
    a_.mov_imm(R11, l.header);
    // A hit inside a hit (a signal handler's): the agent's collector counts it as dropped.
    // Busy from here on, before the chunk is read: a nested hit before this line is done
    // before this one reads where its record goes.
    ts_op(false, {0x80}, 7, l.busy), a_.byte(0);
    jcc_to(kNotEqual, to_generic_);
    ts_op(false, {0xc6}, 0, l.busy), a_.byte(1);
    // Joined this run, has a counter row and a chunk: else the agent's collector sets it up.
    a_.load(RAX, Mem{R11, static_cast<std::int32_t>(l.generation)});
    ts_op(true, {0x39}, RAX, l.slot_generation); // cmp fs:[slot_generation], rax
    jcc_to(kNotEqual, to_unbusy_generic_);
    ts_op(true, {0x8b}, R9, l.counters);
    a_.test(R9, R9);
    jcc_to(kEqual, to_unbusy_generic_);
    ts_op(true, {0x8b}, R10, l.chunk);
    a_.test(R10, R10);
    jcc_to(kEqual, to_unbusy_generic_);
    if (c_.registers_at) { // the thread's tail as the run's header describes it
        ts_op(false, {0x81}, 7, l.tail_bytes), a_.u32(c_.tail_bytes);
        jcc_to(kNotEqual, to_unbusy_generic_);
    }
    // Each range inside the readable range the thread's last read found, under the current
    // listing: one range check; anything else is the agent's collector's search.
    if (!c_.ranges.empty()) {
        a_.load(RAX, Mem{R11, static_cast<std::int32_t>(l.ranges_sequence)});
        ts_op(true, {0x39}, RAX, l.last_range_sequence);
        jcc_to(kNotEqual, to_unbusy_generic_);
    }
    for (const auto& r : c_.ranges) {
        range_address(r);
        ts_op(true, {0x3b}, RSI, l.last_range_start); // cmp rsi, fs:[start]
        jcc_to(kBelow, to_unbusy_generic_);
        a_.alu_imm(x86_writer::ADD, RSI, static_cast<std::int32_t>(r.length));
        jcc_to(kBelow, to_unbusy_generic_); // carry: the range wraps
        ts_op(true, {0x3b}, RSI, l.last_range_end);
        jcc_to(kAbove, to_unbusy_generic_);
    }
    // Room for the record in the chunk: committed + size <= chunk_bytes - header.
    a_.load_sized(RAX, Mem{R10, static_cast<std::int32_t>(l.chunk_committed)}, 4);
    a_.load_sized(RDX, Mem{R11, static_cast<std::int32_t>(l.chunk_bytes)}, 4);
    a_.alu_imm(x86_writer::SUB, RDX, static_cast<std::int32_t>(l.chunk_header_bytes + c_.size),
               false);
    jcc_to(kBelow, to_unbusy_generic_);
    a_.rr(0x39, RAX, RDX, false); // cmp eax, edx
    jcc_to(kAbove, to_unbusy_generic_);
    // Linear: the record's bytes from the credit the thread claimed; the agent's collector
    // claims more.
    a_.op_mem_imm(false, 0x83, 7, Mem{R11, static_cast<std::int32_t>(l.circular)}, 0, 1);
    a_.byte(0x75); // jne: circular
    const std::size_t to_circular = a_.pos();
    a_.byte(0);
    ts_op(true, {0x8b}, RDX, l.linear_credit);
    a_.alu_imm(x86_writer::SUB, RDX, static_cast<std::int32_t>(c_.size));
    jcc_to(kLess, to_unbusy_generic_);
    ts_op(true, {0x89}, RDX, l.linear_credit);
    a_.code()[to_circular] = static_cast<std::uint8_t>(a_.pos() - (to_circular + 1));
}

// The R block at `at`: rax holds the tracepoint's address (write_record).
void Front::write_registers(std::int32_t at) {
    const InlineAgentLayout& l = c_.agent;
    a_.op_mem_imm(false, 0xc6, 0, Mem{RDI, at}, c_.registers_tag, 1);
    const std::int32_t b = at + 1;
    a_.store(Mem{RDI, b + static_cast<std::int32_t>(core_.pc_offset)}, RAX);
    for (int i = 0; i < 16; ++i) {
        const Reg r = kGdbOrder[i];
        const Mem to{RDI, b + 8 * i};
        if (r == RSP || slot_of(r) >= 0) {
            value_of(RAX, i);
            a_.store(to, RAX);
        } else {
            a_.store(to, r);
        }
    }
    // eflags from the pushfq slot (marked as rsp among the saved).
    a_.load_sized(RAX, Mem{RSP, slot_of(RSP)}, 4);
    a_.store32(Mem{RDI, b + static_cast<std::int32_t>(core_.flags_offset)}, RAX);
    // The segment selectors, as the thread read them when it joined the run.
    const auto constants = static_cast<std::int32_t>(core_.constants_size);
    const auto to_constants = b + static_cast<std::int32_t>(core_.constants_offset);
    std::int32_t k = 0;
    for (; k + 8 <= constants; k += 8) {
        ts_op(true, {0x8b}, RAX, l.thread_constants + k);
        a_.store(Mem{RDI, to_constants + k}, RAX);
    }
    if (k + 4 <= constants) {
        ts_op(false, {0x8b}, RAX, l.thread_constants + k);
        a_.store32(Mem{RDI, to_constants + k}, RAX);
    }
    // The tail: the thread-pointer registers it read when it joined.
    const auto tail_at = b + static_cast<std::int32_t>(core_.bytes);
    for (std::int32_t t = 0; t + 8 <= static_cast<std::int32_t>(c_.tail_bytes); t += 8) {
        ts_op(true, {0x8b}, RAX, l.tail_registers + t);
        a_.store(Mem{RDI, tail_at + t}, RAX);
    }
}

void Front::write_record() {
    const InlineAgentLayout& l = c_.agent;
    // lea rdi, [r10 + rax + header]: the record, at the chunk's committed bytes (eax).
    a_.byte(0x49), a_.byte(0x8d), a_.byte(0xbc), a_.byte(0x02);
    a_.u32(l.chunk_header_bytes);
    a_.byte(0x0f), a_.byte(0x31); // rdtsc: the frame clock (arch/frame_clock.hpp)
    a_.shift_imm(x86_writer::SHL, RDX, 32);
    a_.alu(x86_writer::OR, RAX, RDX);
    a_.store(Mem{RDI, 16}, RAX);
    a_.mov_imm(RAX, c_.first_word);
    a_.store(Mem{RDI, 0}, RAX);
    a_.mov_imm(RAX, address_);
    a_.store(Mem{RDI, 8}, RAX);
    a_.store_imm32(Mem{RDI, 24}, static_cast<std::uint32_t>(c_.frame_header), false);
    store16_imm(a_, Mem{RDI, 28}, static_cast<std::uint16_t>(c_.frame_header >> 32));
    if (c_.registers_at) write_registers(static_cast<std::int32_t>(c_.registers_at));
    if (!c_.ranges.empty()) {
        copy_ = PadCopyRange{a_.pos(), 0, 0};
        for (const auto& r : c_.ranges)
            copy_range(r);
        copy_->end = a_.pos();
    }
    // Published: the record's bytes, then the chunk's count and committed bytes (x86-64 keeps
    // stores in order: a reader that sees `committed` sees the record).
    a_.op_mem_imm(false, 0xff, 0, Mem{R10, static_cast<std::int32_t>(l.chunk_frames)}, 0, 0);
    a_.op_mem_imm(false, 0x81, 0, Mem{R10, static_cast<std::int32_t>(l.chunk_committed)}, c_.size,
                  4);
    // The thread's own counter row: plain adds.
    const auto counter = static_cast<std::int32_t>(c_.counter);
    a_.op_mem_imm(true, 0xff, 0, Mem{R9, counter}, 0, 0);
    a_.op_mem_imm(true, 0x81, 0, Mem{R9, counter + 8}, c_.size - 24, 4);
}

void Front::copy_range(const InlineCollection::Range& r) {
    const auto at = static_cast<std::int32_t>(r.at);
    a_.op_mem_imm(false, 0xc6, 0, Mem{RDI, at}, c_.memory_tag, 1);
    range_address(r);
    a_.store(Mem{RDI, at + 1}, RSI);
    store16_imm(a_, Mem{RDI, at + 9}, static_cast<std::uint16_t>(r.length));
    std::int32_t k = 0;
    const auto n = static_cast<std::int32_t>(r.length);
    for (; k + 8 <= n; k += 8) {
        a_.load(RAX, Mem{RSI, k});
        a_.store(Mem{RDI, at + 11 + k}, RAX);
    }
    if (k + 4 <= n) {
        a_.load_sized(RAX, Mem{RSI, k}, 4);
        a_.store32(Mem{RDI, at + 11 + k}, RAX);
        k += 4;
    }
    for (; k < n; ++k) {
        a_.rex(false, RAX, RSI), a_.byte(0x8a), a_.modrm_mem(RAX, Mem{RSI, k}); // mov al, [rsi+k]
        a_.rex(false, RAX, RDI), a_.byte(0x88), a_.modrm_mem(RAX, Mem{RDI, at + 11 + k});
    }
}

Result<PadFront> Front::emit(PadFront front) {
    pushed_.push_back(RCX); // the gate's
    if (c_.registers_at) {
        a_.byte(0x9c); // pushfq: the frame's eflags, before any flag changes
        pushed_.push_back(RSP);
    }
    push(RAX);
    a_.flags_to_ax();
    push(RAX); // the flags, for sahf
    for (Reg r : {RDX, RSI, RDI, R9, R10, R11})
        push(r);
    // r8: the call's to change, or the image's thread state; rbx keeps the saved registers
    // across the condition's call.
    if (c_.condition || in_table_) push(R8);
    if (c_.condition) push(RBX);
    record_checks();
    if (c_.condition) condition();
    checks();
    write_record();
    const std::size_t done = a_.pos();
    ts_op(false, {0xc6}, 0, c_.agent.busy), a_.byte(0);
    bind(to_return_);
    restore();
    front.to_relocated.push_back(a_.jmp());
    if (copy_) { // a range read faulted: the record stays unwritten, counted as dropped
        copy_->fault = a_.pos();
        a_.byte(0xf0);
        a_.op_mem_imm(true, 0xff, 0, Mem{R11, static_cast<std::int32_t>(c_.agent.dropped_frames)},
                      0, 0);
        a_.patch(a_.jmp(), done);
        front.copy = copy_;
    }
    bind(to_unbusy_generic_);
    ts_op(false, {0xc6}, 0, c_.agent.busy), a_.byte(0);
    bind(to_generic_);
    restore(); // on into the pad that calls the agent's collector
    return front;
}

} // namespace
} // namespace pad_front

Result<PadFront> emit_pad_front(x86_writer::X86Writer& a, std::uint64_t gate,
                                const InlineCollection* collection,
                                std::uint64_t tracepoint_address, const InlineCore& core) {
    using namespace pad_front;
    using enum x86_writer::Reg;
    if (collection) {
        const InlineCollection& c = *collection;
        if (c.registers_at && (c.core_bytes != core.bytes || c.tail_bytes % 8 || c.tail_bytes > 32))
            return make_error(ErrorCode::Unsupported,
                              "inline collection: the register block is not the pad's");
        const bool table = c.agent.thread_table != 0 && c.agent.thread_table_bits > 0 &&
                           c.agent.thread_table_bits < 32 && c.agent.thread_entry_bytes > 0;
        if (c.size % 8 || c.size < 32 || c.agent.header == 0 || c.agent.forked_flag == 0 ||
            (c.agent.thread_state == 0 && !table))
            return make_error(ErrorCode::Unsupported, "inline collection: no agent layout");
        for (int r : c.condition_registers)
            if (r < 0 || r > 16)
                return make_error(ErrorCode::Unsupported,
                                  "inline collection: the condition reads a register the pad "
                                  "does not save");
        if (c.condition && (c.agent.context_bytes == 0 || c.agent.out_bytes == 0))
            return make_error(ErrorCode::Unsupported, "inline collection: no condition layout");
        for (const auto& r : c.ranges)
            if (r.base_regnum >= 16 || r.length == 0 || r.length > 4096 ||
                r.at + 11 + r.length > c.size)
                return make_error(ErrorCode::Unsupported,
                                  fmt::format("inline collection: range of {} bytes at {:#x}",
                                              r.length, r.offset));
    }
    PadFront front;
    a.lea(RSP, Mem{RSP, -kRedZone}); // first: leaf code keeps live data below rsp
    a.push(RCX);
    a.mov_imm(RCX, gate);
    a.byte(0x8b), a.modrm_mem(RCX, Mem{RCX, 0});  // mov ecx, [rcx]
    a.byte(0x8d), a.modrm_mem(RCX, Mem{RCX, -1}); // lea ecx, [rcx - 1]: 0 when tracing
    a.byte(0xe3); // jrcxz on: no flag changes, nothing saved but rcx
    const std::size_t to_on = a.pos();
    a.byte(0);
    a.pop(RCX);
    a.lea(RSP, Mem{RSP, kRedZone});
    front.to_relocated.push_back(a.jmp());
    a.code()[to_on] = static_cast<std::uint8_t>(a.pos() - (to_on + 1));
    if (!collection) {
        a.pop(RCX);
        a.lea(RSP, Mem{RSP, kRedZone});
        return front;
    }
    return Front(a, *collection, tracepoint_address, core).emit(std::move(front));
}

} // namespace tpagent::arch::x86_64
