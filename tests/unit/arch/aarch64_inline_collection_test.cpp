// The arm64 pad's front (arch/aarch64/inline_collection.hpp), run in Unicorn: an agent laid out
// by the test (a header, a tracepoint record, a thread's state at tpidr_el0 + offset, its chunk
// and counter row), a traced function patched with the pad's B. A hit the front covers writes
// the record the frame format asks for, publishes it and counts it, without calling the
// collector; each case it does not cover reaches the collector with nothing written; the program
// ends as it does untraced either way, and the front's own state (busy) is left clear.
#include "arch/aarch64/jump_pad.hpp"
#include "unicorn_aarch64.hpp"

#include <catch2/catch.hpp>
#include <unicorn/unicorn.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

namespace a64 = tpagent::arch::aarch64;
using tpagent::arch::InlineCollection;

namespace {

using namespace tpagent::test::unicorn_a64;

constexpr std::uint64_t kCode = 0x10000000;
constexpr std::uint64_t kPad = 0x17f00000;
constexpr std::uint64_t kCollector = 0x7f00000000;
constexpr std::uint64_t kStack = 0x30000000;
constexpr std::uint64_t kAgent = 0x40000000;  // header, record, flags, counters, chunk
constexpr std::uint64_t kThread = 0x48000000; // tpidr_el0
constexpr std::uint64_t kData = 0x50000000;   // the range collected
constexpr std::uint64_t kRegion = 0x10000;

// The agent's layout, as the test lays it out.
constexpr std::uint64_t kHeader = kAgent, kRecord = kAgent + 0x1000, kForked = kAgent + 0x2000,
                        kGate = kAgent + 0x2008, kCounters = kAgent + 0x3000,
                        kChunk = kAgent + 0x4000, kCondition = kAgent + 0x8000;
constexpr std::int32_t kStateOffset = 0x40; // from tpidr_el0
constexpr std::uint64_t kState = kThread + kStateOffset;
constexpr std::uint32_t kChunkBytes = 0x1000, kChunkHeader = 64;
constexpr std::uint64_t kGeneration = 7;

tpagent::arch::InlineAgentLayout layout() {
    tpagent::arch::InlineAgentLayout l;
    l.header = kHeader;
    l.forked_flag = kForked;
    l.thread_state = kStateOffset;
    l.generation = 0, l.chunk_bytes = 8, l.circular = 12, l.ranges_sequence = 16,
    l.dropped_frames = 24;
    l.record_enabled = 0, l.record_next = 8;
    l.busy = 0, l.slot_generation = 8, l.counters = 16, l.chunk = 24, l.linear_credit = 32,
    l.tail_bytes = 40, l.tail_registers = 48, l.thread_constants = 80, l.last_range_sequence = 88,
    l.last_range_start = 96, l.last_range_end = 104;
    l.chunk_committed = 0, l.chunk_frames = 4, l.chunk_header_bytes = kChunkHeader;
    l.context_bytes = 64, l.context_registers = 16, l.out_bytes = 16, l.out_value = 8;
    return l;
}

// $regs (core + an 8-byte tail) and 20 bytes at kData + 4, as experiment/ lays out a record:
// [size | index << 32][pc][stamp][frame header: 6] R [core 268][tail 8] M [addr][len][bytes].
constexpr std::uint32_t kRegistersAt = 30, kRangeAt = kRegistersAt + 1 + 268 + 8, kRangeLength = 20,
                        kEnd = kRangeAt + 11 + kRangeLength, kSize = (kEnd + 7) / 8 * 8, kIndex = 3,
                        kNumber = 2;

InlineCollection collection(bool condition) {
    InlineCollection c;
    c.agent = layout();
    c.record = kRecord;
    c.size = kSize;
    c.first_word = kSize | std::uint64_t{kIndex} << 32;
    c.frame_header = kNumber | std::uint64_t{kEnd - 30} << 16;
    c.counter = kIndex * 16;
    c.registers_at = kRegistersAt;
    c.core_bytes = a64::kCoreBlockBytes;
    c.tail_bytes = 8;
    c.ranges = {{-1, kData + 4, kRangeLength, kRangeAt}};
    if (condition) {
        c.condition = kCondition;
        c.condition_registers = {0};
    }
    return c;
}

constexpr std::uint64_t kCodeEnd = kCode + 4 * kTraced.size();
constexpr std::size_t kTracepoint = 12; // add x3, x3, #1 (b.eq skips it when x0 + x1 == 0)

// The condition: x0 of the block is odd. ldr x2, [x0, #16]; ldr x3, [x2]; and x3, x3, #1;
// str x3, [x1, #8]; mov w0, #0; ret.
constexpr std::array<std::uint32_t, 6> kOddX0 = {0xf9400802, 0xf9400043, 0x92400063,
                                                 0xf9000423, 0x52800000, kRet};

// The agent's state before a hit, as a case sets it.
struct Agent {
    std::uint32_t enabled = 1;
    std::uint64_t next = 0;
    std::uint8_t forked = 0;
    std::uint32_t tracing = 1;
    std::uint32_t circular = 1;
    std::uint64_t slot_generation = kGeneration;
    std::uint64_t chunk = kChunk;
    std::uint32_t committed = 0;
    std::int64_t linear_credit = 0;
    std::uint64_t range_start = kData, range_end = kData + kRegion;
    std::uint64_t last_range_sequence = 5;
    std::uint8_t busy = 0;
    bool data_mapped = true;
};

struct Run {
    Machine at_tracepoint, end;
    int collector_calls = 0, condition_calls = 0;
    std::vector<std::uint8_t> chunk, state, counters;
    std::uint64_t dropped = 0;
    std::vector<std::uint8_t> stack;
};

void tracepoint_hook(uc_engine* uc, std::uint64_t, std::uint32_t, void* user) {
    static_cast<Run*>(user)->at_tracepoint = read_machine(uc);
}
void collector_hook(uc_engine*, std::uint64_t, std::uint32_t, void* user) {
    ++static_cast<Run*>(user)->collector_calls;
}
// The condition may change every register the C convention lets it: x8..x18 here.
void condition_hook(uc_engine* uc, std::uint64_t, std::uint32_t, void* user) {
    ++static_cast<Run*>(user)->condition_calls;
    for (int r = 8; r <= 18; ++r) {
        const std::uint64_t junk = 0xbad0000000000000 | static_cast<std::uint64_t>(r);
        uc_reg_write(uc, xreg(r), &junk);
    }
    const std::uint64_t nzcv = 0xf0000000;
    uc_reg_write(uc, UC_ARM64_REG_NZCV, &nzcv);
}

template <typename T> void put(uc_engine* uc, std::uint64_t at, T v) {
    uc_mem_write(uc, at, &v, sizeof v);
}

Run run(std::uint64_t x0, std::uint64_t nzcv, const tpagent::arch::EmittedJumpPad* pad,
        const Agent& agent = {}) {
    uc_engine* uc = nullptr;
    REQUIRE(uc_open(UC_ARCH_ARM64, UC_MODE_ARM, &uc) == UC_ERR_OK);
    for (std::uint64_t base : {kCode, kPad & ~(kRegion - 1), kCollector, kStack, kThread})
        REQUIRE(uc_mem_map(uc, base, kRegion, UC_PROT_ALL) == UC_ERR_OK);
    REQUIRE(uc_mem_map(uc, kAgent, 0x10000, UC_PROT_ALL) == UC_ERR_OK);
    if (agent.data_mapped) REQUIRE(uc_mem_map(uc, kData, kRegion, UC_PROT_READ) == UC_ERR_OK);
    std::vector<std::uint8_t> pattern(kRegion);
    for (std::size_t i = 0; i < pattern.size(); ++i)
        pattern[i] = static_cast<std::uint8_t>(i * 7 + 3);
    uc_mem_write(uc, kStack, pattern.data(), pattern.size());
    if (agent.data_mapped) uc_mem_write(uc, kData, pattern.data(), pattern.size());
    std::vector<std::uint8_t> code(4 * kTraced.size());
    std::memcpy(code.data(), kTraced.data(), code.size());
    uc_mem_write(uc, kCode, code.data(), code.size());
    put<std::uint64_t>(uc, kCode + 0x800, 0x1122334455667788);
    put(uc, kCollector, kRet);
    uc_mem_write(uc, kCondition, kOddX0.data(), 4 * kOddX0.size());

    // The agent.
    const auto l = layout();
    put<std::uint64_t>(uc, kHeader + l.generation, kGeneration);
    put<std::uint32_t>(uc, kHeader + l.chunk_bytes, kChunkBytes);
    put<std::uint32_t>(uc, kHeader + l.circular, agent.circular);
    put<std::uint64_t>(uc, kHeader + l.ranges_sequence, 5);
    put<std::uint32_t>(uc, kRecord + l.record_enabled, agent.enabled);
    put<std::uint64_t>(uc, kRecord + l.record_next, agent.next);
    put<std::uint8_t>(uc, kForked, agent.forked);
    put<std::uint32_t>(uc, kGate, agent.tracing);
    put<std::uint8_t>(uc, kState + l.busy, agent.busy);
    put<std::uint64_t>(uc, kState + l.slot_generation, agent.slot_generation);
    put<std::uint64_t>(uc, kState + l.counters, kCounters);
    put<std::uint64_t>(uc, kState + l.chunk, agent.chunk);
    put<std::int64_t>(uc, kState + l.linear_credit, agent.linear_credit);
    put<std::uint32_t>(uc, kState + l.tail_bytes, 8);
    put<std::uint64_t>(uc, kState + l.tail_registers, kThread);
    put<std::uint64_t>(uc, kState + l.last_range_sequence, agent.last_range_sequence);
    put<std::uint64_t>(uc, kState + l.last_range_start, agent.range_start);
    put<std::uint64_t>(uc, kState + l.last_range_end, agent.range_end);
    put<std::uint32_t>(uc, kChunk + l.chunk_committed, agent.committed);
    put<std::uint64_t>(uc, kCounters + kIndex * 16, 40);
    put<std::uint64_t>(uc, kCounters + kIndex * 16 + 8, 1000);
    put<std::uint64_t>(uc, kThread, 0); // tpidr_el0's word
    uc_reg_write(uc, UC_ARM64_REG_TPIDR_EL0, &kThread);

    Run out;
    uc_hook h1{}, h2{}, h3{};
    if (pad) {
        uc_mem_write(uc, kPad, pad->code.data(), pad->code.size());
        uc_mem_write(uc, kCode + kTracepoint, pad->patch.data(), pad->patch.size());
        uc_hook_add(uc, &h1, UC_HOOK_CODE, reinterpret_cast<void*>(tracepoint_hook), &out,
                    kCode + kTracepoint, kCode + kTracepoint);
        uc_hook_add(uc, &h2, UC_HOOK_CODE, reinterpret_cast<void*>(collector_hook), &out,
                    kCollector, kCollector);
        uc_hook_add(uc, &h3, UC_HOOK_CODE, reinterpret_cast<void*>(condition_hook), &out,
                    kCondition, kCondition);
    }
    for (int r = 0; r <= 30; ++r) {
        const std::uint64_t v = 0x1000 * static_cast<std::uint64_t>(r) + 7;
        uc_reg_write(uc, xreg(r), &v);
    }
    uc_reg_write(uc, UC_ARM64_REG_X0, &x0);
    const std::uint64_t sp = kStack + kRegion / 2;
    uc_reg_write(uc, UC_ARM64_REG_SP, &sp);
    uc_reg_write(uc, UC_ARM64_REG_NZCV, &nzcv);
    std::uint64_t from = kCode;
    for (int faults = 0;; ++faults) {
        const uc_err err = uc_emu_start(uc, from, kCodeEnd, 0, 10000);
        if (err == UC_ERR_OK) break;
        // A read of the unmapped range: tpagent's recovery, the pc on at the copy's fault.
        std::uint64_t pc = 0;
        uc_reg_read(uc, UC_ARM64_REG_PC, &pc);
        INFO("emulation stopped: " << uc_strerror(err) << " at pc 0x" << std::hex << pc);
        REQUIRE(faults == 0);
        REQUIRE(pad);
        REQUIRE(pad->copy);
        REQUIRE(pc >= kPad + pad->copy->begin);
        REQUIRE(pc < kPad + pad->copy->end);
        from = kPad + pad->copy->fault;
    }
    out.end = read_machine(uc);
    out.chunk.resize(kChunkBytes);
    uc_mem_read(uc, kChunk, out.chunk.data(), out.chunk.size());
    out.state.resize(128);
    uc_mem_read(uc, kState, out.state.data(), out.state.size());
    out.counters.resize(16);
    uc_mem_read(uc, kCounters + kIndex * 16, out.counters.data(), out.counters.size());
    uc_mem_read(uc, kHeader + l.dropped_frames, &out.dropped, 8);
    out.stack.resize(80);
    uc_mem_read(uc, sp - 16, out.stack.data(), out.stack.size());
    uc_close(uc);
    return out;
}

void check_ends_as_without(const Run& got, const Run& want) {
    check_same_machine(got.end, want.end);
    CHECK(got.stack == want.stack);
    CHECK(got.state[0] == 0); // not busy
}

tpagent::arch::EmittedJumpPad make_pad(const InlineCollection& c) {
    std::uint8_t original[4];
    std::memcpy(original, &kTraced[kTracepoint / 4], 4);
    a64::JumpPadSpec spec;
    spec.pad_address = kPad;
    spec.tracepoint_address = kCode + kTracepoint;
    spec.collector = kCollector;
    spec.argument = kRecord;
    spec.original_code = original;
    spec.gate = kGate;
    spec.inline_collection = &c;
    auto pad = a64::emit_jump_pad(spec);
    INFO((pad ? std::string() : pad.error().text));
    REQUIRE(pad);
    return std::move(*pad);
}

// The record the front wrote at the chunk's start, against the thread at the tracepoint.
void check_record(const Run& got) {
    const std::vector<std::uint8_t>& c = got.chunk;
    const auto l = layout();
    CHECK(load<std::uint32_t>(c, l.chunk_committed) == kSize);
    CHECK(load<std::uint32_t>(c, l.chunk_frames) == 1);
    const std::size_t r = kChunkHeader;
    CHECK(load<std::uint64_t>(c, r) == (kSize | std::uint64_t{kIndex} << 32));
    CHECK(load<std::uint64_t>(c, r + 8) == kCode + kTracepoint);
    CHECK(load<std::uint16_t>(c, r + 24) == kNumber);
    CHECK(load<std::uint32_t>(c, r + 26) == kEnd - 30);
    CHECK(c[r + kRegistersAt] == 'R');
    const std::size_t core = r + kRegistersAt + 1;
    const Machine& t = got.at_tracepoint;
    for (std::size_t i = 0; i <= 30; ++i) {
        INFO("x" << i);
        CHECK(load<std::uint64_t>(c, core + 8 * i) == t.x[i]);
    }
    CHECK(load<std::uint64_t>(c, core + 248) == t.sp);
    CHECK(load<std::uint64_t>(c, core + 256) == kCode + kTracepoint);
    CHECK(load<std::uint32_t>(c, core + 264) == (t.nzcv & 0xf0000000));
    CHECK(load<std::uint64_t>(c, core + 268) == kThread); // the tail
    const std::size_t m = r + kRangeAt;
    CHECK(c[m] == 'M');
    CHECK(load<std::uint64_t>(c, m + 1) == kData + 4);
    CHECK(load<std::uint16_t>(c, m + 9) == kRangeLength);
    for (std::uint32_t k = 0; k < kRangeLength; ++k)
        CHECK(c[m + 11 + k] == static_cast<std::uint8_t>((4 + k) * 7 + 3));
    CHECK(load<std::uint64_t>(got.counters, 0) == 41);
    CHECK(load<std::uint64_t>(got.counters, 8) == 1000 + kSize - 24);
}

void check_nothing_written(const Run& got, const Agent& before = {}) {
    CHECK(load<std::uint32_t>(got.chunk, 0) == before.committed);
    CHECK(load<std::uint32_t>(got.chunk, 4) == 0);
    CHECK(load<std::uint64_t>(got.counters, 0) == 40);
}

} // namespace

TEST_CASE("aarch64 pad front: a covered hit writes its record, the collector not called",
          "[arch][aarch64][inline]") {
    const InlineCollection c = collection(false);
    const auto pad = make_pad(c);
    REQUIRE(pad.copy);
    for (std::uint64_t nzcv : {0x0ull, 0x60000000ull, 0xf0000000ull}) {
        INFO("nzcv " << std::hex << nzcv);
        const Run want = run(5, nzcv, nullptr);
        const Run got = run(5, nzcv, &pad);
        CHECK(got.collector_calls == 0);
        check_record(got);
        check_ends_as_without(got, want);
    }
    // Linear, with credit for the record: taken from it.
    Agent linear;
    linear.circular = 0;
    linear.linear_credit = kSize + 8;
    const Run got = run(5, 0, &pad, linear);
    CHECK(got.collector_calls == 0);
    check_record(got);
    CHECK(load<std::int64_t>(got.state, layout().linear_credit) == 8);
}

TEST_CASE("aarch64 pad front: what it does not cover goes to the collector, nothing written",
          "[arch][aarch64][inline]") {
    const InlineCollection c = collection(false);
    const auto pad = make_pad(c);
    const Run want = run(5, 0x20000000, nullptr);
    struct Case {
        const char* what;
        Agent agent;
        int collector_calls;
    };
    std::vector<Case> cases;
    const auto with = [&](const char* what, int calls, auto change) {
        Agent a;
        change(a);
        cases.push_back({what, a, calls});
    };
    with("tracing off", 0, [](Agent& a) { a.tracing = 0; });
    with("a forked child", 1, [](Agent& a) { a.forked = 1; });
    with("the record disabled", 0, [](Agent& a) { a.enabled = 0; });
    with("another record at the address", 1, [](Agent& a) { a.next = 0x100; });
    with("a hit inside a hit", 1, [](Agent& a) { a.busy = 1; });
    with("not joined this run", 1, [](Agent& a) { a.slot_generation = kGeneration - 1; });
    with("no chunk", 1, [](Agent& a) { a.chunk = 0; });
    with("the chunk full", 1,
         [](Agent& a) { a.committed = kChunkBytes - kChunkHeader - kSize + 8; });
    with("linear, short of credit", 1, [](Agent& a) {
        a.circular = 0;
        a.linear_credit = kSize - 8;
    });
    with("the range before the last readable one", 1, [](Agent& a) { a.range_start = kData + 8; });
    with("the range beyond the last readable one", 1,
         [](Agent& a) { a.range_end = kData + 4 + kRangeLength - 1; });
    with("the readable ranges listed again", 1, [](Agent& a) { a.last_range_sequence = 4; });
    for (const Case& k : cases) {
        INFO(k.what);
        const Run got = run(5, 0x20000000, &pad, k.agent);
        CHECK(got.collector_calls == k.collector_calls);
        if (k.agent.busy == 0) check_ends_as_without(got, want);
        check_nothing_written(got, k.agent);
    }
    // The room check: exactly enough room is enough.
    Agent full;
    full.committed = kChunkBytes - kChunkHeader - kSize;
    const Run got = run(5, 0x20000000, &pad, full);
    CHECK(got.collector_calls == 0);
    CHECK(load<std::uint32_t>(got.chunk, 0) == kChunkBytes - kChunkHeader);
}

TEST_CASE("aarch64 pad front: a range that faults is dropped and counted",
          "[arch][aarch64][inline]") {
    const InlineCollection c = collection(false);
    const auto pad = make_pad(c);
    const Run want = run(5, 0x40000000, nullptr);
    Agent gone;
    gone.data_mapped = false; // unmapped since tpagent listed it
    const Run got = run(5, 0x40000000, &pad, gone);
    CHECK(got.collector_calls == 0);
    CHECK(got.dropped == 1);
    check_nothing_written(got, gone);
    check_ends_as_without(got, want);
}

TEST_CASE("aarch64 pad front: a condition on x0, called from the front",
          "[arch][aarch64][inline]") {
    const InlineCollection c = collection(true);
    const auto pad = make_pad(c);
    for (std::uint64_t x0 : {5u, 6u}) { // x0 at the tracepoint: x0 + 0x1007
        INFO("x0 " << x0);
        const Run want = run(x0, 0x80000000, nullptr);
        const Run got = run(x0, 0x80000000, &pad);
        CHECK(got.condition_calls == 1);
        CHECK(got.collector_calls == 0);
        if (got.at_tracepoint.x[0] % 2)
            check_record(got);
        else
            check_nothing_written(got); // rejected: not counted either
        check_ends_as_without(got, want);
    }
}
