#include "arch/aarch64/inline_collection.hpp"
#include "arch/aarch64/encoding.hpp"
#include "arch/aarch64/jump_pad.hpp"
#include <algorithm>
#include <fmt/format.h>

namespace tpagent::arch::aarch64 {
// A namespace of its own: unity builds put this file together with jump_pad.cpp.
namespace pad_front {
namespace {

using namespace enc;

// Encodings only the front uses (64-bit forms unless named w).
constexpr std::uint32_t ldrb(unsigned t, unsigned n, std::uint32_t offset) {
    return 0x39400000 | offset << 10 | n << 5 | t;
}
constexpr std::uint32_t strb(unsigned t, unsigned n, std::uint32_t offset) {
    return 0x39000000 | offset << 10 | n << 5 | t;
}
constexpr std::uint32_t strh(unsigned t, unsigned n, std::uint32_t offset) {
    return 0x79000000 | (offset / 2) << 10 | n << 5 | t;
}
constexpr std::uint32_t stur_x(unsigned t, unsigned n, std::int32_t offset) {
    return 0xf8000000 | (static_cast<std::uint32_t>(offset) & 0x1ff) << 12 | n << 5 | t;
}
constexpr std::uint32_t sturh(unsigned t, unsigned n, std::int32_t offset) {
    return 0x78000000 | (static_cast<std::uint32_t>(offset) & 0x1ff) << 12 | n << 5 | t;
}
constexpr std::uint32_t cmp_x(unsigned n, unsigned m) { // subs xzr, xn, xm
    return 0xeb00001f | m << 16 | n << 5;
}
constexpr std::uint32_t cmp_w(unsigned n, unsigned m) {
    return 0x6b00001f | m << 16 | n << 5;
}
constexpr std::uint32_t cmp_w_imm(unsigned n, std::uint32_t imm12) {
    return 0x7100001f | imm12 << 10 | n << 5;
}
constexpr std::uint32_t subs_w(unsigned d, unsigned n, unsigned m) {
    return 0x6b000000 | m << 16 | n << 5 | d;
}
constexpr std::uint32_t subs_x(unsigned d, unsigned n, unsigned m) {
    return 0xeb000000 | m << 16 | n << 5 | d;
}
constexpr std::uint32_t adds_x(unsigned d, unsigned n, unsigned m) {
    return 0xab000000 | m << 16 | n << 5 | d;
}
constexpr std::uint32_t add_w(unsigned d, unsigned n, unsigned m) {
    return 0x0b000000 | m << 16 | n << 5 | d;
}
constexpr std::uint32_t add_w_imm(unsigned d, unsigned n, std::uint32_t imm12) {
    return 0x11000000 | imm12 << 10 | n << 5 | d;
}
constexpr std::uint32_t add_uxtw(unsigned d, unsigned n, unsigned m) { // xd = xn + wm
    return 0x8b204000 | m << 16 | n << 5 | d;
}
constexpr std::uint32_t mul_x(unsigned d, unsigned n, unsigned m) { // madd xd, xn, xm, xzr
    return 0x9b007c00 | m << 16 | n << 5 | d;
}
constexpr std::uint32_t stlr_w(unsigned t, unsigned n) {
    return 0x889ffc00 | n << 5 | t;
}
constexpr std::uint32_t cbz_x(unsigned t) {
    return 0xb4000000 | t;
}
constexpr std::uint32_t cbz_w(unsigned t) {
    return 0x34000000 | t;
}
constexpr std::uint32_t movz_w(unsigned d, std::uint32_t imm16) {
    return 0x52800000 | imm16 << 5 | d;
}
constexpr std::uint32_t mrs_nzcv(unsigned t) {
    return 0xd53b4200 | t;
}
constexpr std::uint32_t msr_nzcv(unsigned t) {
    return 0xd51b4200 | t;
}
constexpr std::uint32_t mrs_cntvct(unsigned t) { // the frame clock (arch/frame_clock.hpp)
    return 0xd53be040 | t;
}
enum Cond : std::uint32_t { kNe = 1, kHs = 2, kLo = 3, kHi = 8, kLt = 11 };
constexpr std::uint32_t b_cond(Cond c) {
    return 0x54000000 | c;
}

constexpr unsigned kX16 = 16, kX17 = 17;
constexpr std::uint32_t kPcRegnum = 32;
constexpr std::uint32_t kSpRegnum = 31;
constexpr std::uint32_t kPcOffset = 32 * 8, kCpsrOffset = 33 * 8; // in the R block's core
constexpr std::uint32_t kConditionBlock = 33 * 8;                 // x0..x30, sp, pc
constexpr std::uint32_t kPairReach = 504;                         // stp/ldp's largest offset

class Front {
  public:
    Front(Emitter& e, const InlineCollection& c, std::uint64_t address)
        : e_(e), c_(c), address_(address), in_table_(c.agent.thread_table != 0) {
        saved_ = {0, 1, 2, 3, 4, 5, 6, 7, kX16, kX17};
        if (c.condition)
            for (unsigned r : {8u, 9u, 10u, 11u, 12u, 13u, 14u, 15u, 18u, 30u})
                saved_.push_back(r);
        if (c.condition) {
            const std::uint32_t context = kConditionBlock;
            out_ = context + (c.agent.context_bytes + 7) / 8 * 8;
            area_ = (out_ + c.agent.out_bytes + 15) / 16 * 16;
        }
        nzcv_slot_ = area_ + 8 * static_cast<std::uint32_t>(saved_.size());
        frame_ = (nzcv_slot_ + 8 + 15) / 16 * 16;
    }

    PadFront emit();

  private:
    std::int64_t slot_of(unsigned r) const {
        const auto at = std::find(saved_.begin(), saved_.end(), r);
        if (at == saved_.end()) return -1;
        return area_ + 8 * static_cast<std::uint32_t>(at - saved_.begin());
    }
    // dst = the program's value of gdb register `regnum` (0..32).
    void value_of(unsigned dst, std::uint32_t regnum) {
        if (regnum == kPcRegnum) {
            e_.move_wide(dst, address_);
        } else if (regnum == kSpRegnum) {
            e_.put(add_imm(dst, kSp, frame_));
        } else if (const std::int64_t slot = slot_of(regnum); slot >= 0) {
            e_.put(ldr_x(dst, kSp, static_cast<std::uint32_t>(slot)));
        } else if (dst != regnum) {
            e_.put(mov_reg(dst, regnum));
        }
    }
    // xd = xn + value, with x6 as scratch where value is not an add's immediate.
    void add_value(unsigned d, unsigned n, std::uint64_t value) {
        if (value < 4096) {
            if (value || d != n) e_.put(add_imm(d, n, static_cast<std::uint32_t>(value)));
        } else if (value % 4096 == 0 && value < (1u << 24)) {
            e_.put(add_imm_lsl12(d, n, static_cast<std::uint32_t>(value >> 12)));
        } else {
            e_.move_wide(6, value);
            e_.put(add_reg(d, n, 6));
        }
    }
    // x1 = the address of range `r`.
    void range_address(const InlineCollection::Range& r) {
        if (r.base_regnum < 0) {
            e_.move_wide(1, r.offset);
            return;
        }
        value_of(1, static_cast<std::uint32_t>(r.base_regnum));
        add_value(1, 1, r.offset);
    }
    void branch_to(std::uint32_t insn, std::vector<std::size_t>& label) {
        label.push_back(e_.size());
        e_.put(insn);
    }
    void bind(std::vector<std::size_t>& label) {
        for (std::size_t at : label)
            e_.link(at, e_.size());
        label.clear();
    }
    void move_saved(std::uint32_t (*pair)(unsigned, unsigned, unsigned, std::uint32_t),
                    std::uint32_t (*single)(unsigned, unsigned, std::uint32_t));
    void save();
    void restore();
    void record_checks();
    void condition();
    void find_thread_state();
    void checks();
    void write_record();
    void write_registers(std::uint32_t at);
    void copy_range(const InlineCollection::Range& r);

    Emitter& e_;
    const InlineCollection& c_;
    std::uint64_t address_;
    bool in_table_;
    std::vector<unsigned> saved_;
    std::uint32_t out_ = 0, area_ = 0, nzcv_slot_ = 0, frame_ = 0;
    std::optional<PadCopyRange> copy_;
    std::vector<std::size_t> to_return_, to_unbusy_generic_, to_generic_;
};

// The saved registers to or from their slots: in pairs where the pair's offset reaches.
void Front::move_saved(std::uint32_t (*pair)(unsigned, unsigned, unsigned, std::uint32_t),
                       std::uint32_t (*single)(unsigned, unsigned, std::uint32_t)) {
    for (std::size_t i = 0; i < saved_.size(); i += 2) {
        const auto at = area_ + 8 * static_cast<std::uint32_t>(i);
        if (i + 1 < saved_.size() && at + 8 <= kPairReach) {
            e_.put(pair(saved_[i], saved_[i + 1], kSp, at));
            continue;
        }
        e_.put(single(saved_[i], kSp, at));
        if (i + 1 < saved_.size()) e_.put(single(saved_[i + 1], kSp, at + 8));
    }
}

void Front::save() {
    e_.put(sub_imm(kSp, kSp, frame_)); // first: below sp is anybody's (signal frames)
    move_saved(stp, str_x);
    e_.put(mrs_nzcv(0));
    e_.put(str_x(0, kSp, nzcv_slot_));
}

void Front::restore() {
    e_.put(ldr_x(0, kSp, nzcv_slot_));
    e_.put(msr_nzcv(0));
    move_saved(ldp, ldr_x);
    e_.put(add_imm(kSp, kSp, frame_));
}

// Whether this hit is the tracepoint's at all, the record enabled and alone at its address; a
// forked child's goes to the collector, which knows whether the trace follows the child.
void Front::record_checks() {
    const InlineAgentLayout& l = c_.agent;
    e_.move_wide(0, l.forked_flag);
    e_.put(ldrb(0, 0, 0));
    branch_to(cbnz_w(0), to_generic_);
    e_.move_wide(1, c_.record);
    e_.put(ldr_w(0, 1, l.record_enabled));
    branch_to(cbz_w(0), to_return_);
    // Another record at the address: the agent's collector runs the chain.
    e_.put(ldr_x(0, 1, l.record_next));
    branch_to(cbnz_x(0), to_generic_);
}

// The compiled condition, called as the agent's collector calls it, with a block holding only
// the registers it reads (at the bottom of the front's frame) and its context only that block.
void Front::condition() {
    const InlineAgentLayout& l = c_.agent;
    for (int regnum : c_.condition_registers) {
        value_of(0, static_cast<std::uint32_t>(regnum));
        e_.put(str_x(0, kSp, 8 * static_cast<std::uint32_t>(regnum)));
    }
    e_.put(add_imm(0, kSp, 0)); // mov x0, sp: the block
    e_.put(str_x(0, kSp, kConditionBlock + l.context_registers));
    e_.put(add_imm(0, kSp, kConditionBlock)); // the context
    e_.put(add_imm(1, kSp, out_));
    e_.move_wide(kX16, c_.condition);
    e_.put(kBlrX16);
    e_.put(ldr_x(1, kSp, out_ + l.out_value));
    branch_to(cbnz_w(0), to_generic_); // the agent's collector evaluates it again, says why
    branch_to(cbz_x(1), to_return_);   // rejected: no frame, no hit counted
}

// x17 = the thread's state: the library's TLS, or the image's table entry keyed by tpidr_el0
// (a thread with none yet is the agent's collector's).
void Front::find_thread_state() {
    const InlineAgentLayout& l = c_.agent;
    e_.put(mrs_tpidr_el0(kX17));
    if (!in_table_) {
        if (l.thread_state >= 0) {
            add_value(kX17, kX17, static_cast<std::uint64_t>(l.thread_state));
        } else {
            e_.move_wide(6, static_cast<std::uint64_t>(static_cast<std::int64_t>(l.thread_state)));
            e_.put(add_reg(kX17, kX17, 6));
        }
        return;
    }
    branch_to(cbz_x(kX17), to_generic_);
    e_.move_wide(kX16, 0x9e3779b97f4a7c15ull);
    e_.put(mul_x(0, kX17, kX16));
    e_.put(lsr_imm(0, 0, 64 - l.thread_table_bits));
    e_.move_wide(kX16, l.thread_entry_bytes);
    e_.put(mul_x(0, 0, kX16));
    e_.move_wide(kX16, l.thread_table);
    e_.put(add_reg(0, 0, kX16));
    e_.put(ldr_x(2, 0, 0)); // the entry's key (relaxed)
    e_.put(cmp_x(2, kX17));
    branch_to(b_cond(kNe), to_generic_);
    add_value(kX17, 0, l.thread_entry_state);
}

// x16 = the header, x17 the thread's state, x3 its counter row, x4 its chunk, w0 the chunk's
// committed bytes.
void Front::checks() {
    const InlineAgentLayout& l = c_.agent;
    find_thread_state();
    // A hit inside a hit (a signal handler's): the agent's collector counts it as dropped.
    e_.put(ldrb(0, kX17, l.busy));
    branch_to(cbnz_w(0), to_generic_);
    e_.put(movz_w(0, 1));
    e_.put(strb(0, kX17, l.busy));
    e_.move_wide(kX16, l.header);
    // Joined this run, has a counter row and a chunk: else the agent's collector sets it up.
    e_.put(ldr_x(0, kX16, l.generation));
    e_.put(ldr_x(2, kX17, l.slot_generation));
    e_.put(cmp_x(0, 2));
    branch_to(b_cond(kNe), to_unbusy_generic_);
    e_.put(ldr_x(3, kX17, l.counters));
    branch_to(cbz_x(3), to_unbusy_generic_);
    e_.put(ldr_x(4, kX17, l.chunk));
    branch_to(cbz_x(4), to_unbusy_generic_);
    if (c_.registers_at) { // the thread's tail as the run's header describes it
        e_.put(ldr_w(0, kX17, l.tail_bytes));
        e_.put(cmp_w_imm(0, c_.tail_bytes));
        branch_to(b_cond(kNe), to_unbusy_generic_);
    }
    // Each range inside the readable range the thread's last read found, under the current
    // listing: one range check; anything else is the agent's collector's search.
    if (!c_.ranges.empty()) {
        e_.put(ldr_x(0, kX16, l.ranges_sequence));
        e_.put(ldr_x(2, kX17, l.last_range_sequence));
        e_.put(cmp_x(0, 2));
        branch_to(b_cond(kNe), to_unbusy_generic_);
    }
    for (const auto& r : c_.ranges) {
        range_address(r);
        e_.put(ldr_x(2, kX17, l.last_range_start));
        e_.put(cmp_x(1, 2));
        branch_to(b_cond(kLo), to_unbusy_generic_);
        e_.move_wide(2, r.length);
        e_.put(adds_x(1, 1, 2));
        branch_to(b_cond(kHs), to_unbusy_generic_); // carry: the range wraps
        e_.put(ldr_x(2, kX17, l.last_range_end));
        e_.put(cmp_x(1, 2));
        branch_to(b_cond(kHi), to_unbusy_generic_);
    }
    // Room for the record in the chunk: committed + size <= chunk_bytes - header.
    e_.put(ldr_w(0, 4, l.chunk_committed));
    e_.put(ldr_w(2, kX16, l.chunk_bytes));
    e_.move_wide(6, l.chunk_header_bytes + c_.size);
    e_.put(subs_w(2, 2, 6));
    branch_to(b_cond(kLo), to_unbusy_generic_);
    e_.put(cmp_w(0, 2));
    branch_to(b_cond(kHi), to_unbusy_generic_);
    // Linear: the record's bytes from the credit the thread claimed; the agent's collector
    // claims more.
    e_.put(ldr_w(6, kX16, l.circular));
    const std::size_t to_circular = e_.size();
    e_.put(cbnz_w(6));
    e_.put(ldr_x(6, kX17, l.linear_credit));
    e_.move_wide(2, c_.size);
    e_.put(subs_x(6, 6, 2));
    branch_to(b_cond(kLt), to_unbusy_generic_);
    e_.put(str_x(6, kX17, l.linear_credit));
    e_.link(to_circular, e_.size());
}

// The R block at `at` of the record at x5: registers in pairs, stp to any alignment (normal
// memory); x0 and x1 (their values saved) carry the ones the front saved.
void Front::write_registers(std::uint32_t at) {
    const InlineAgentLayout& l = c_.agent;
    e_.put(movz_w(2, c_.registers_tag));
    e_.put(strb(2, 5, at));
    add_value(6, 5, at + 1); // the core, x6 its base
    const auto pair_of = [&](unsigned r, unsigned temp) {
        if (slot_of(r) < 0 && r < kSpRegnum) return r; // where it is
        value_of(temp, r);
        return temp;
    };
    for (unsigned r = 0; r < kSpRegnum; r += 2) { // x0..x30 and sp
        const std::int64_t a = slot_of(r), b = slot_of(r + 1);
        if (a >= 0 && b == a + 8 && b <= kPairReach) {
            e_.put(ldp(0, 1, kSp, static_cast<std::uint32_t>(a)));
            e_.put(stp(0, 1, 6, 8 * r));
            continue;
        }
        const unsigned first = pair_of(r, 0);
        const unsigned second = pair_of(r + 1, 1); // sp from value_of
        e_.put(stp(first, second, 6, 8 * r));
    }
    value_of(2, kPcRegnum);
    e_.put(str_x(2, 6, kPcOffset));
    e_.put(ldr_w(2, kSp, nzcv_slot_));
    e_.put(str_w(2, 6, kCpsrOffset));
    // The tail: the thread-pointer registers it read when it joined.
    add_value(7, 6, c_.core_bytes);
    for (std::uint32_t t = 0; t + 8 <= c_.tail_bytes; t += 8) {
        e_.put(ldr_x(2, kX17, l.tail_registers + t));
        e_.put(str_x(2, 7, t));
    }
}

void Front::copy_range(const InlineCollection::Range& r) {
    range_address(r);      // x1 (x6 its scratch)
    add_value(6, 5, r.at); // the block, x6
    e_.put(movz_w(2, c_.memory_tag));
    e_.put(strb(2, 6, 0));
    e_.put(stur_x(1, 6, 1));
    e_.put(movz_w(2, r.length));
    e_.put(sturh(2, 6, 9));
    e_.put(add_imm(7, 6, 11)); // the bytes, x7
    std::uint32_t k = 0;
    const std::uint32_t n = r.length;
    for (; k + 8 <= n; k += 8) {
        e_.put(ldr_x(2, 1, k));
        e_.put(str_x(2, 7, k));
    }
    if (k + 4 <= n) {
        e_.put(ldr_w(2, 1, k));
        e_.put(str_w(2, 7, k));
        k += 4;
    }
    for (; k < n; ++k) {
        e_.put(ldrb(2, 1, k));
        e_.put(strb(2, 7, k));
    }
}

// The record at x5, at the chunk's committed bytes (w0), then published.
void Front::write_record() {
    const InlineAgentLayout& l = c_.agent;
    e_.put(add_uxtw(5, 4, 0));
    add_value(5, 5, l.chunk_header_bytes);
    e_.put(mrs_cntvct(2));
    e_.put(str_x(2, 5, 16));
    e_.move_wide(2, c_.first_word);
    e_.put(str_x(2, 5, 0));
    e_.move_wide(2, address_);
    e_.put(str_x(2, 5, 8));
    e_.move_wide(2, c_.frame_header & 0xffffffffu);
    e_.put(str_w(2, 5, 24));
    e_.put(movz_w(2, static_cast<std::uint32_t>(c_.frame_header >> 32) & 0xffff));
    e_.put(strh(2, 5, 28));
    if (c_.registers_at) write_registers(c_.registers_at);
    if (!c_.ranges.empty()) {
        copy_ = PadCopyRange{e_.size(), 0, 0};
        for (const auto& r : c_.ranges)
            copy_range(r);
        copy_->end = e_.size();
    }
    // Published: the record's bytes and the chunk's count, then its committed bytes by a
    // store-release (a reader that sees `committed` sees the record).
    e_.put(ldr_w(2, 4, l.chunk_frames));
    e_.put(add_w_imm(2, 2, 1));
    e_.put(str_w(2, 4, l.chunk_frames));
    e_.put(ldr_w(2, 4, l.chunk_committed));
    e_.move_wide(6, c_.size);
    e_.put(add_w(2, 2, 6));
    add_value(7, 4, l.chunk_committed);
    e_.put(stlr_w(2, 7));
    // The thread's own counter row: plain adds.
    add_value(3, 3, c_.counter);
    e_.put(ldr_x(2, 3, 0));
    e_.put(add_imm(2, 2, 1));
    e_.put(str_x(2, 3, 0));
    e_.put(ldr_x(2, 3, 8));
    e_.move_wide(6, c_.size - 24);
    e_.put(add_reg(2, 2, 6));
    e_.put(str_x(2, 3, 8));
}

PadFront Front::emit() {
    PadFront front;
    save();
    record_checks();
    if (c_.condition) condition();
    checks();
    write_record();
    const std::size_t done = e_.size();
    e_.put(strb(kZr, kX17, c_.agent.busy));
    bind(to_return_);
    restore();
    front.to_relocated.push_back(e_.size());
    e_.put(b_unlinked());
    if (copy_) { // a range read faulted: the record stays unwritten, counted as dropped
        copy_->fault = e_.size();
        e_.move_wide(7, c_.agent.header + c_.agent.dropped_frames);
        const std::size_t retry = e_.size();
        e_.put(ldxr_x(2, 7));
        e_.put(add_imm(2, 2, 1));
        e_.put(stxr_x(6, 2, 7));
        e_.put(cbnz_w(6));
        e_.link(e_.size() - 4, retry);
        e_.put(b_unlinked());
        e_.link(e_.size() - 4, done);
        front.copy = copy_;
    }
    bind(to_unbusy_generic_);
    e_.put(strb(kZr, kX17, c_.agent.busy));
    bind(to_generic_);
    restore(); // on into the pad that calls the agent's collector
    return front;
}

// Offsets the front's scaled loads and stores take as they are.
bool aligned(std::uint32_t offset, std::uint32_t size) {
    return offset % size == 0 && offset / size < 4096;
}

Status check(const InlineCollection& c) {
    const InlineAgentLayout& l = c.agent;
    const auto unsupported = [](const char* why) {
        return make_error(ErrorCode::Unsupported, fmt::format("inline collection: {}", why));
    };
    if (c.registers_at &&
        (c.core_bytes != kCoreBlockBytes || c.tail_bytes % 8 || c.tail_bytes > 32))
        return unsupported("the register block is not the pad's");
    const bool table = l.thread_table != 0 && l.thread_table_bits > 0 && l.thread_table_bits < 32 &&
                       l.thread_entry_bytes > 0;
    if (c.size % 8 || c.size < 32 || l.header == 0 || l.forked_flag == 0 ||
        (l.thread_state == 0 && !table))
        return unsupported("no agent layout");
    const bool fields =
        aligned(l.record_enabled, 4) && aligned(l.record_next, 8) && aligned(l.generation, 8) &&
        aligned(l.chunk_bytes, 4) && aligned(l.circular, 4) && aligned(l.ranges_sequence, 8) &&
        aligned(l.busy, 1) && aligned(l.slot_generation, 8) && aligned(l.counters, 8) &&
        aligned(l.chunk, 8) && aligned(l.linear_credit, 8) && aligned(l.tail_bytes, 4) &&
        aligned(l.tail_registers, 8) && aligned(l.last_range_sequence, 8) &&
        aligned(l.last_range_start, 8) && aligned(l.last_range_end, 8) &&
        aligned(l.chunk_committed, 4) && aligned(l.chunk_frames, 4) &&
        aligned(l.context_registers, 8) && aligned(l.out_value, 8) && c.registers_at + 1 < 4096 &&
        c.tail_bytes < 4096;
    if (!fields) return unsupported("a field the front cannot address");
    for (int r : c.condition_registers)
        if (r < 0 || r > static_cast<int>(kPcRegnum))
            return unsupported("the condition reads a register the pad does not save");
    if (c.condition &&
        (l.context_bytes == 0 || l.out_bytes == 0 || l.context_bytes > 1024 || l.out_bytes > 1024))
        return unsupported("no condition layout");
    for (const auto& r : c.ranges)
        if (r.base_regnum > static_cast<int>(kSpRegnum) || r.length == 0 || r.length > 4095 ||
            r.at + 11 + r.length > c.size)
            return make_error(
                ErrorCode::Unsupported,
                fmt::format("inline collection: range of {} bytes at {:#x}", r.length, r.offset));
    return ok_status();
}

} // namespace
} // namespace pad_front

Result<PadFront> emit_pad_front(Emitter& e, const InlineCollection& c,
                                std::uint64_t tracepoint_address) {
    if (auto checked = pad_front::check(c); !checked) return checked.error();
    return pad_front::Front(e, c, tracepoint_address).emit();
}

} // namespace tpagent::arch::aarch64
