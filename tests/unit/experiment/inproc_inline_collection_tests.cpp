// Pads that collect in line (arch::InlineCollection, arch/x86_64/inline_collection.hpp), run for
// real in this process: a small function patched with a jump to a pad built as tpagent builds
// it, called from a trampoline that sets every general register and the flags to known values
// and saves what the call leaves. The frames the pad's own code writes must be the agent
// collector's, byte for byte (the agent's collector still takes a thread's first hit of a run:
// the pad falls back to it, counted here through a wrapper); the program must see the same
// registers and flags as without a tracepoint.
#include "tests/unit/experiment/inproc_collector_fixture.hpp"
#include "tests/unit/skip.hpp"
#if defined(__x86_64__)
#include "arch/x86_64/x86_writer.hpp"
#include "experiment/inline_collection.hpp"
#include "experiment/fast_saved_state.hpp"
#include "experiment/record_writer.hpp"
#include "arch/compiler_backend.hpp"
#include <csignal>
#include <ucontext.h>

using namespace tpagent::inproc_collector_fixture;
using namespace tpagent::arch::x86_64::x86_writer;
using enum tpagent::arch::x86_64::x86_writer::Reg;

namespace {

// What the trampoline loads, calls and saves.
struct Call {
    std::uint64_t in[16];   // rax..r15 in gdb's order (rsp's slot unused)
    std::uint64_t flags_in; // rflags at the call
    std::uint64_t fn;
    std::uint64_t out[16];
    std::uint64_t flags_out;
};
constexpr Reg kOrder[16] = {RAX, RBX, RCX, RDX, RSI, RDI, RBP, RSP,
                            R8,  R9,  R10, R11, R12, R13, R14, R15};
// CF PF AF ZF SF OF set, IF and bit 1 as always.
constexpr std::uint64_t kFlagsIn = 0x202 | 0x1 | 0x4 | 0x10 | 0x40 | 0x80 | 0x800;

std::atomic<int> g_generic_calls{0};
void counting_collector(std::uint64_t record, std::uint8_t* block, std::uint64_t frame,
                        const std::uint8_t* anchor) {
    g_generic_calls.fetch_add(1);
    agent().collect(record, block, frame, anchor);
}

// Code in one mapping: the traced function, its data, the pad, the trampoline.
//   fn: push rbp; mov rbp, rsp; mov rax, [rip + data]; lea rax, [rax + rdi]; pop rbp; ret
// (no flag changes: the flags the caller set are the ones at the tracepoint and after).
struct Code {
    std::uint8_t* base = nullptr;
    static constexpr std::size_t kSize = 0x4000, kPad = 0x1000, kTrampoline = 0x3000, kData = 0x800;
    std::vector<std::uint8_t> original;
    Code() {
        void* m = mmap(nullptr, kSize, PROT_READ | PROT_WRITE | PROT_EXEC,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(m != MAP_FAILED);
        base = static_cast<std::uint8_t*>(m);
        const auto d = static_cast<std::uint32_t>(kData - 11);
        original = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x8b, 0x05};
        for (int i = 0; i < 4; ++i)
            original.push_back(static_cast<std::uint8_t>(d >> (8 * i)));
        for (std::uint8_t b : {0x48, 0x8d, 0x04, 0x38, 0x5d, 0xc3})
            original.push_back(b);
        original.resize(32, 0xcc);
        std::memcpy(base, original.data(), original.size());
        const std::uint64_t constant = 0x1000;
        std::memcpy(base + kData, &constant, 8);
        write_trampoline();
    }
    ~Code() { munmap(base, kSize); }
    std::uint64_t fn() const { return address_of(base); }

    // tramp(Call* c): loads c->in and c->flags_in, calls c->fn, stores what it left in c->out
    // and c->flags_out; callee-saved registers kept.
    void write_trampoline() {
        X86Writer a;
        for (Reg r : {RBX, RBP, R12, R13, R14, R15})
            a.push(r);
        a.push(RDI);
        a.byte(0xff), a.modrm_mem(6, Mem{RDI, static_cast<std::int32_t>(offsetof(Call, fn))});
        a.byte(0xff), a.modrm_mem(6, Mem{RDI, static_cast<std::int32_t>(offsetof(Call, flags_in))});
        a.byte(0x9d); // popfq
        for (int i = 0; i < 16; ++i)
            if (kOrder[i] != RSP && kOrder[i] != RDI) a.load(kOrder[i], Mem{RDI, 8 * i});
        a.load(RDI, Mem{RDI, 8 * 5});
        a.byte(0xff), a.byte(0x14), a.byte(0x24); // call [rsp]
        a.byte(0x9c);                             // pushfq
        a.push(RDI);
        a.load(RDI, Mem{RSP, 24});
        for (int i = 0; i < 16; ++i)
            if (kOrder[i] != RSP && kOrder[i] != RDI)
                a.store(Mem{RDI, static_cast<std::int32_t>(offsetof(Call, out) + 8 * i)},
                        kOrder[i]);
        a.pop(RAX);
        a.store(Mem{RDI, static_cast<std::int32_t>(offsetof(Call, out) + 8 * 5)}, RAX);
        a.pop(RAX);
        a.store(Mem{RDI, static_cast<std::int32_t>(offsetof(Call, flags_out))}, RAX);
        a.pop(RAX); // fn
        a.pop(RDI);
        for (Reg r : {R15, R14, R13, R12, RBP, RBX})
            a.pop(r);
        a.ret();
        std::memcpy(base + kTrampoline, a.code().data(), a.code().size());
    }
    void call(Call& c) const {
        c.fn = fn();
        reinterpret_cast<void (*)(Call*)>(base + kTrampoline)(&c);
    }

    // The pad for rec, as tpagent makes it: `in_line` or the agent's collector alone.
    void install(const TracepointRecord& rec, bool in_line, bool full_core) {
        arch::JumpPadRequest request;
        request.pad_address = address_of(base + kPad);
        request.tracepoint_address = fn();
        request.collector = reinterpret_cast<std::uint64_t>(&counting_collector);
        request.argument = Config::remote(rec);
        request.original_code = original;
        request.options.save_vector_state = false;
        request.options.stage_full_core = full_core;
        request.options.gate = shared().remote(offsetof(Header, tracing));
        if (in_line) {
            auto c = experiment::inline_collection_for(shared(), rec, host().pc_regnum());
            INFO((c ? std::string() : c.error().text));
            REQUIRE(c);
            request.options.inline_collection = *c;
        }
        auto pad = host().emit_jump_pad(request);
        INFO((pad ? std::string() : pad.error().text));
        REQUIRE(pad);
        std::memcpy(base + kPad, pad->code.data(), pad->code.size());
        std::memcpy(base, pad->patch.data(), pad->patch.size());
        copy = pad->copy;
    }
    std::optional<arch::PadCopyRange> copy; // the installed pad's in-line copy
    void uninstall() { std::memcpy(base, original.data(), original.size()); }
};

Call known_call(std::uint64_t seed) {
    Call c{};
    for (int i = 0; i < 16; ++i)
        c.in[i] = 0x1111111111111111ull * static_cast<std::uint64_t>(i + 1) + seed;
    c.flags_in = kFlagsIn;
    return c;
}

// What the program sees after a call: the same with and without a pad.
void require_same_outcome(const Call& traced, const Call& untraced) {
    for (int i = 0; i < 16; ++i) {
        INFO("register " << i);
        if (i != 7) REQUIRE(traced.out[i] == untraced.out[i]);
    }
    REQUIRE(traced.flags_out == untraced.flags_out);
}

// Readable ranges as tpagent lists them, so that the agent's reads go in line too.
void list_readable_ranges() {
    const auto ranges = SharedBuffer::readable_ranges_of(getpid());
    shared().set_readable_ranges(ranges);
}

void require_same_frame(const Frame& a, const Frame& b) {
    REQUIRE(a.number == b.number);
    REQUIRE(a.header.size == b.header.size);
    REQUIRE(a.header.index == b.header.index);
    REQUIRE(a.header.pc == b.header.pc);
    REQUIRE(a.has_registers == b.has_registers);
    REQUIRE(a.registers == b.registers);
    REQUIRE(a.tail == b.tail);
    REQUIRE(a.memory.size() == b.memory.size());
    for (std::size_t i = 0; i < a.memory.size(); ++i) {
        REQUIRE(a.memory[i].address == b.memory[i].address);
        REQUIRE(a.memory[i].bytes == b.memory[i].bytes);
    }
}

// rec's condition `bytes`, compiled as tpagent compiles it (registers from the pad's block)
// into executable memory of its own; the instructions where tpagent writes them.
struct CompiledCondition {
    void* code = nullptr;
    CompiledCondition(Config& config, TracepointRecord& rec, std::vector<std::uint8_t> bytes) {
        const auto p = program(std::move(bytes));
        config.condition(rec, Config::expression(p));
        auto native = arch::host_compiler_backend().translate(
            p, shared().helpers(), experiment::staged_register_layout(header()));
        INFO((native ? std::string() : native.error().text));
        REQUIRE(native);
        code = mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
                    -1, 0);
        REQUIRE(code != MAP_FAILED);
        std::memcpy(code, native->data(), native->size());
        rec.condition.compiled = address_of(static_cast<std::uint8_t*>(code));
    }
    ~CompiledCondition() { munmap(code, 4096); }
};

// Pads collect in line where the CPU has lahf/sahf in 64-bit mode (their flags' way back);
// elsewhere the test is skipped, saying so.
bool collects_in_line_here() {
    if (host().collects_in_line()) return true;
    tpagent::test::skip("no lahf/sahf in 64-bit mode: pads call the agent's collector");
    return false;
}

// tpagent's part when a pad's copy faults (LinuxFastSites::recover_collector_fault), played by
// a SIGSEGV handler: the pc in the copy goes on at the copy's fault label.
struct FaultRecovery {
    static inline std::uint64_t begin = 0, end = 0, resume = 0;
    static inline std::atomic<int> recovered{0};
    struct sigaction old {};
    FaultRecovery(const Code& code) {
        REQUIRE(code.copy);
        const auto pad = address_of(code.base + Code::kPad);
        begin = pad + code.copy->begin;
        end = pad + code.copy->end;
        resume = pad + code.copy->fault;
        struct sigaction sa {};
        sa.sa_sigaction = [](int, siginfo_t*, void* context) {
            auto* uc = static_cast<ucontext_t*>(context);
            auto& rip = uc->uc_mcontext.gregs[REG_RIP];
            const auto pc = static_cast<std::uint64_t>(rip);
            if (pc < begin || pc >= end) std::abort(); // not the pad's copy: a real crash
            rip = static_cast<greg_t>(resume);
            recovered.fetch_add(1);
        };
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        REQUIRE(sigaction(SIGSEGV, &sa, &old) == 0);
    }
    ~FaultRecovery() { sigaction(SIGSEGV, &old, nullptr); }
};

} // namespace

TEST_CASE("a pad whose in-line copy faults drops the frame, counted, and the program goes on",
          "[inline]") {
    if (!collects_in_line_here()) return;
    Code code;
    Call untraced = known_call(5);
    code.call(untraced);
    Config config;
    Pages pages(1);
    list_readable_ranges();
    TracepointRecord& rec =
        config.add(7, code.fn(), {registers_action(), memory_action(pages.address(0), 32)});
    rec.complete_block = 0;
    code.install(rec, true, true);
    config.start();
    auto hit_once_more = [&] {
        Call traced = known_call(5);
        code.call(traced);
        require_same_outcome(traced, untraced);
    };
    hit_once_more(); // joined; its last readable range is the page's
    hit_once_more();
    REQUIRE(drain().size() == 2);
    // The page goes away after tpagent listed it: the pad's range check still passes.
    const std::uint64_t dropped = header().dropped_frames.load();
    g_generic_calls = 0;
    {
        FaultRecovery recovery(code);
        REQUIRE(mprotect(pages.base, pages.page, PROT_NONE) == 0);
        hit_once_more();
        REQUIRE(FaultRecovery::recovered == 1);
    }
    REQUIRE(mprotect(pages.base, pages.page, PROT_READ | PROT_WRITE) == 0);
    REQUIRE(header().dropped_frames.load() == dropped + 1);
    REQUIRE(g_generic_calls == 0);
    REQUIRE(drain().empty());
    // The thread is no longer busy: its next hit is collected, in line.
    hit_once_more();
    const auto frames = drain();
    REQUIRE(frames.size() == 1);
    REQUIRE(frames[0].memory.at(0).bytes == std::vector<std::uint8_t>(pages.base, pages.base + 32));
    REQUIRE(g_generic_calls == 0);
    header().tracing.store(0);
    code.uninstall();
}

TEST_CASE("a pad collecting in line writes the agent collector's frames", "[inline]") {
    if (!collects_in_line_here()) return;
    Code code;
    Call untraced = known_call(0);
    code.call(untraced);

    Config config;
    list_readable_ranges();
    // $regs, the 16 bytes above the return address (rsp-based) and 64 bytes of this stack.
    alignas(8) std::uint8_t local[64];
    for (std::size_t i = 0; i < sizeof local; ++i)
        local[i] = static_cast<std::uint8_t>(i * 3 + 1);
    TracepointRecord& rec =
        config.add(1, code.fn(),
                   {registers_action(), memory_action(8, 16, static_cast<int>(regnum("rsp"))),
                    memory_action(address_of(local), sizeof local)});
    rec.complete_block = 0; // the pad stages the whole core for $regs (FastTracepoints)
    code.install(rec, true, true);
    g_generic_calls = 0;
    config.start();
    // Enough hits to fill several chunks: each new chunk is the agent collector's to take.
    constexpr int kHits = 3000;
    for (int n = 0; n < kHits; ++n) {
        Call traced = known_call(0);
        code.call(traced);
        if (n == 0 || n == kHits - 1) require_same_outcome(traced, untraced);
    }
    const auto frames = drain();
    REQUIRE(frames.size() == kHits);
    const int generic = g_generic_calls.load();
    INFO("hits the agent's collector took: " << generic);
    REQUIRE(generic >= 1);         // the first: the thread joins the run
    REQUIRE(generic < kHits / 10); // the rest in line, but for new chunks
    for (const Frame& f : frames)
        require_same_frame(f, frames[0]);
    // And what the frame says is the thread's state at the tracepoint.
    const Frame& f = frames.back();
    REQUIRE(register_in(f.registers, "rip") == code.fn());
    REQUIRE(register_in(f.registers, "rdi") == untraced.in[5]);
    REQUIRE(register_in(f.registers, "rax") == untraced.in[0]);
    REQUIRE(register_in(f.registers, "r11") == untraced.in[11]);
    REQUIRE(register_in(f.registers, "r15") == untraced.in[15]);
    REQUIRE((register_in(f.registers, "eflags") & 0xffffffffu) == kFlagsIn);
    REQUIRE(f.memory.size() == 2);
    REQUIRE(f.memory[0].address == register_in(f.registers, "rsp") + 8);
    REQUIRE(f.memory[1].bytes == std::vector<std::uint8_t>(local, local + sizeof local));
    const auto totals = shared().hit_totals(record_index(shared().local(), &rec));
    REQUIRE(totals.hits == kHits);
    REQUIRE(totals.bytes == kHits * (frames[0].header.size - sizeof(RecordHeader)));
    header().tracing.store(0);
    code.uninstall();
}

TEST_CASE("a gated pad with tracing off runs only the program's instructions", "[inline]") {
    Code code;
    Call untraced = known_call(7);
    code.call(untraced);
    Config config;
    TracepointRecord& rec = config.add(2, code.fn(), {registers_action()});
    // Every CPU's pads take the gate; only those with lahf/sahf collect in line.
    const std::vector<bool> kinds =
        host().collects_in_line() ? std::vector<bool>{true, false} : std::vector<bool>{false};
    for (bool in_line : kinds) {
        code.install(rec, in_line, true);
        g_generic_calls = 0;
        Call traced = known_call(7);
        code.call(traced);
        require_same_outcome(traced, untraced);
        REQUIRE(g_generic_calls == 0);
        REQUIRE(drain().empty());
    }
    code.uninstall();
}

TEST_CASE("a pad collecting in line leaves to the agent's collector what it does not cover",
          "[inline]") {
    if (!collects_in_line_here()) return;
    Code code;
    Call untraced = known_call(3);
    code.call(untraced);
    Config config;
    Pages pages(1), other(1);
    list_readable_ranges(); // after the pages are mapped: the reads go in line
    TracepointRecord& rec =
        config.add(3, code.fn(), {registers_action(), memory_action(pages.address(0), 32)});
    rec.complete_block = 0;
    code.install(rec, true, true);
    config.start();
    // Not inlined: frames of different calls compare equal only if every hit comes from the
    // same stack depth (rsp is in the frame).
    auto hits = [&](int n) __attribute__((noinline)) {
        for (int i = 0; i < n; ++i) {
            Call traced = known_call(3);
            code.call(traced);
            require_same_outcome(traced, untraced);
        }
    };
    SECTION("a disabled tracepoint: nothing collected, the agent's collector not called") {
        hits(2); // joined
        drain();
        rec.enabled = 0;
        g_generic_calls = 0;
        hits(3);
        REQUIRE(g_generic_calls == 0);
        REQUIRE(drain().empty());
    }
    SECTION("a range outside the thread's last readable range: read by the agent's collector") {
        hits(2);
        drain();
        // A range the pad cannot check: the thread's last range changed by a read elsewhere.
        TracepointRecord& elsewhere =
            config.add(4, code.fn() + 1, {memory_action(other.address(0), 8)});
        Block block;
        hit(elsewhere, block);
        g_generic_calls = 0;
        hits(1);
        REQUIRE(g_generic_calls == 1);
        hits(1); // its last range is this one's again
        REQUIRE(g_generic_calls == 1);
        auto frames = drain();
        REQUIRE(frames.size() == 3);
        require_same_frame(frames[1], frames[2]);
        REQUIRE(frames[2].memory.at(0).bytes ==
                std::vector<std::uint8_t>(pages.base, pages.base + 32));
    }
    SECTION("another tracepoint joins the address: both collected by the agent's collector") {
        hits(1);
        drain();
        TracepointRecord& second = config.add(5, code.fn(), {registers_action()});
        second.complete_block = 0;
        config.chain(rec, second);
        g_generic_calls = 0;
        hits(2);
        REQUIRE(g_generic_calls == 2);
        auto frames = drain();
        REQUIRE(frames.size() == 4);
        REQUIRE(frames[0].number == 3);
        REQUIRE(frames[1].number == 5);
        rec.next = 0;
    }
    SECTION("linear: the thread's credit, then the agent's collector claims more") {
        Config linear(false, 1 << 20);
        list_readable_ranges();
        TracepointRecord& r =
            linear.add(6, code.fn(), {registers_action(), memory_action(pages.address(0), 32)});
        r.complete_block = 0;
        code.install(r, true, true);
        linear.start();
        g_generic_calls = 0;
        hits(5000); // more than 1 MiB of frames: the buffer fills, the trace stops
        const auto frames = drain();
        REQUIRE(stop_reason() == StopReason::BufferFull);
        REQUIRE(frames.size() * frames.at(0).header.size <= (1u << 20));
        REQUIRE(frames.size() * frames.at(0).header.size > (1u << 20) - (64u << 10));
        // Each claim of credit (a 64th of what is left) is the agent's collector's.
        REQUIRE(g_generic_calls < static_cast<int>(frames.size() / 10));
    }
    header().tracing.store(0);
    code.uninstall();
}
#endif

TEST_CASE("a pad evaluates a compiled condition on registers itself", "[inline]") {
    if (!collects_in_line_here()) return;
    Code code;
    Config config;
    TracepointRecord& rec = config.add(8, code.fn(), {registers_action()});
    rec.complete_block = 0;
    SECTION("rdi odd and rip the tracepoint's: only those hits are collected") {
        std::vector<std::uint8_t> cond = {0x26, 0x00, 0x05, 0x22, 0x01,
                                          0x0f, 0x26, 0x00, 0x10, 0x25};
        for (int i = 0; i < 8; ++i)
            cond.push_back(static_cast<std::uint8_t>(code.fn() >> (8 * (7 - i))));
        for (std::uint8_t b : {0x13, 0x0f, 0x27}) // equal; bit_and; end
            cond.push_back(b);
        CompiledCondition compiled(config, rec, cond);
        code.install(rec, true, true);
        g_generic_calls = 0;
        config.start();
        for (std::uint64_t seed = 0; seed < 10; ++seed) {
            Call untraced = known_call(seed), traced = known_call(seed);
            code.uninstall();
            code.call(untraced);
            code.install(rec, true, true);
            code.call(traced);
            require_same_outcome(traced, untraced);
        }
        const auto frames = drain();
        REQUIRE(frames.size() == 5);
        for (const Frame& f : frames)
            REQUIRE(register_in(f.registers, "rdi") % 2 == 1);
        REQUIRE(g_generic_calls == 1); // the first hit it lets through: the thread joins
        const auto totals = shared().hit_totals(record_index(shared().local(), &rec));
        REQUIRE(totals.hits == 5); // as the agent's collector: rejected hits are not counted
    }
    SECTION("a condition that fails: the agent's collector evaluates it and stops the trace") {
        CompiledCondition compiled(config, rec, {0x26, 0x00, 0x05, 0x22, 0x00, 0x05, 0x27});
        code.install(rec, true, true);
        g_generic_calls = 0;
        config.start();
        Call untraced = known_call(1), traced = known_call(1);
        code.uninstall();
        code.call(untraced);
        code.install(rec, true, true);
        code.call(traced);
        require_same_outcome(traced, untraced);
        REQUIRE(g_generic_calls == 1);
        REQUIRE(stop_reason() == StopReason::Error);
        REQUIRE(drain().empty());
    }
    header().tracing.store(0);
    code.uninstall();
}
