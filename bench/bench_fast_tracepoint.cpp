// Fast tracepoint hit cost without gdb: a small function in this process is patched with a real
// jump pad (arch emit_jump_pad) that calls the real in-process agent (libtpagent-inproc.so,
// dlopen'ed), configured through the shared buffer as tpagent configures it: a 16 MiB circular
// buffer the threads write their frames into (tpagent reads them in place only when asked, so
// nothing else runs). Each benchmark calls the function in a loop; the difference to
// "untraced" is the cost of a hit. Threads(2), Threads(4): throughput with several threads
// hitting the same tracepoint. BM_floor_stamped_record: the same pad calling a collector that
// does no bookkeeping at all, what the machine alone makes a hit cost.
//
// TPAGENT_BENCH_AGENT=FILE benchmarks that agent file instead (see setup()).
//
// With TPAGENT_BENCH_ITERATIONS=N, each single-thread benchmark is also registered as
// "count/NAME", run for exactly N calls: bench/hit_instructions.py counts a hit's instructions
// under callgrind from two such runs.
#include "inproc/shared_buffer.hpp"
#include "arch/compiler_backend.hpp"
#include "experiment/shared_buffer_reader.hpp"
#include "experiment/shared_buffer.hpp"
#include "experiment/inline_collection.hpp"
#include "arch/arch.hpp"
#include "arch/frame_clock.hpp"
#include "bytecode/compiler.hpp"
#include "bytecode/program.hpp"
#include <atomic>
#include <benchmark/benchmark.h>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

namespace {

using namespace tpagent;
using namespace tpagent::inproc;

// fn(n): push rbp; mov rbp,rsp; mov rax,[rip+d]; add rax,rdi; pop rbp; ret (the tracepoint
// is its first instruction; the jump covers push+mov+mov).
struct Target {
    std::uint8_t* base = nullptr;
    std::uint64_t (*fn)(std::uint64_t) = nullptr;
    std::vector<std::uint8_t> original;
    arch::EmittedJumpPad pad;
};

struct Setup {
    std::shared_ptr<experiment::SharedBuffer> shared;
    Target target;
    alignas(64) std::uint8_t buf[64] = {};
};

constexpr std::size_t kBufferBytes = 16u << 20;

Setup* g = nullptr;

Setup& setup() {
    if (g) return *g;
    g = new Setup;
    // TPAGENT_BENCH_AGENT: another agent file, e.g. the self-mapped image
    // (libtpagent-inproc-image.so, which this process's loader can map too) or an older build
    // of the library, to compare.
    const char* agent = std::getenv("TPAGENT_BENCH_AGENT");
    void* lib = dlopen(agent && *agent ? agent : TPAGENT_INPROC_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!lib) throw std::runtime_error(dlerror());
    // The image has no constructor: its start makes the shared buffer, told how to read the
    // thread pointer as tpagent tells it (this process's TCB points to itself: the load).
    if (auto* start = reinterpret_cast<long (*)(long)>(dlsym(lib, "tpagent_inproc_image_start"))) {
        long source = arch::host_architecture().fast_block_tail().by_instruction ? 1 : 0;
#if defined(__x86_64__)
        source = 2;
#endif
        if (start(source) != 0) throw std::runtime_error("the agent image did not start");
    }
    auto shared = experiment::SharedBuffer::open(getpid());
    if (!shared) throw std::runtime_error(shared.error().text);
    g->shared = std::move(*shared);
    const auto& arch = arch::host_architecture();
    g->shared->begin_configuration(true, 0);
    if (auto c = g->shared->configure_chunks(kBufferBytes, 4096); !c)
        throw std::runtime_error(c.error().text);
    if (auto core = g->shared->describe_registers(arch); !core)
        throw std::runtime_error(core.error().text);
    const auto ranges = experiment::SharedBuffer::readable_ranges_of(getpid());
    g->shared->set_readable_ranges(ranges);

    constexpr std::size_t kSize = 0x3000; // the untraced copy at 0x1800 reads at 0x2000
    void* mem = mmap(nullptr, kSize, PROT_READ | PROT_WRITE | PROT_EXEC,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    Target& t = g->target;
    t.base = static_cast<std::uint8_t*>(mem);
    const auto disp = static_cast<std::uint32_t>(0x800 - 11);
    t.original = {0x55, 0x48, 0x89, 0xe5, 0x48, 0x8b, 0x05};
    for (int i = 0; i < 4; ++i)
        t.original.push_back(static_cast<std::uint8_t>(disp >> (8 * i)));
    for (std::uint8_t b : {0x48, 0x01, 0xf8, 0x5d, 0xc3})
        t.original.push_back(b);
    std::memcpy(t.base, t.original.data(), t.original.size());
    const std::uint64_t constant = 1;
    std::memcpy(t.base + 0x800, &constant, 8);
    t.fn = reinterpret_cast<std::uint64_t (*)(std::uint64_t)>(t.base);

    return *g;
}

// The pad, as tpagent builds it for the tracepoint's actions: one that collects `$regs`
// stages the whole core, else the collector fills in what a hit reads. `collector`: another
// function to call instead of the agent's.
void install_pad(bool stage_full_core, bool stage_vector_state, std::uint64_t collector = 0,
                 std::optional<arch::InlineCollection> in_line = std::nullopt) {
    Setup& s = setup();
    Target& t = s.target;
    const auto addr = reinterpret_cast<std::uint64_t>(t.base);
    arch::JumpPadRequest request;
    request.pad_address = addr + 0x1000;
    request.tracepoint_address = addr;
    request.collector = collector ? collector : s.shared->header().collector;
    request.argument = s.shared->remote(kConfigOffset);
    request.original_code = t.original;
    request.options.save_vector_state = false;
    request.options.stage_full_core = stage_full_core;
    request.options.stage_vector_state = stage_vector_state;
    if (!collector) request.options.gate = s.shared->remote(offsetof(Header, tracing));
    request.options.inline_collection = std::move(in_line);
    auto pad = arch::host_architecture().emit_jump_pad(request);
    if (!pad) throw std::runtime_error(pad.error().text);
    t.pad = std::move(*pad);
    std::memcpy(t.base + 0x1000, t.pad.code.data(), t.pad.code.size());
    std::memcpy(t.base, t.pad.patch.data(), t.pad.patch.size());
}

// One tracepoint record at kConfigOffset with the given actions (and condition).
void configure(std::vector<ActionRecord> actions, const ActionRecord* condition = nullptr,
               bool vector_state = false) {
    Setup& s = setup();
    Header& h = s.shared->header();
    // A new run, as tpagent's tstart: counters and thread slots afresh (else the slots of the
    // benchmarks' threads run out after 256 joins, and hits go the shared counters' slow way).
    s.shared->begin_configuration(true, 0);
    void* shared = s.shared->local();
    auto* rec = at<TracepointRecord>(shared, kConfigOffset);
    std::memset(static_cast<void*>(rec), 0, sizeof *rec);
    rec->number = 1;
    rec->enabled = 1;
    rec->address = reinterpret_cast<std::uint64_t>(s.target.base);
    rec->actions_offset = kConfigOffset + 4096;
    rec->action_count = static_cast<std::uint32_t>(actions.size());
    std::memcpy(at<ActionRecord>(shared, rec->actions_offset), actions.data(),
                actions.size() * sizeof(ActionRecord));
    rec->frame_bound = 4096;
    if (auto c = s.shared->configure_chunks(kBufferBytes, rec->frame_bound); !c)
        throw std::runtime_error(c.error().text);
    if (condition) {
        rec->condition = *condition;
        rec->has_condition = 1;
    }
    // The condition below reads rdi only, which the pad stages.
    const bool full = experiment::collects_registers(actions);
    rec->complete_block = !full && experiment::reads_completed_register(h, std::span(actions));
    rec->collects_state = vector_state ? 1 : 0;
    // As tpagent makes it: the pad writes the frame itself where it can.
    auto in_line =
        experiment::inline_collection_for(*s.shared, *rec, arch::host_architecture().pc_regnum());
    if (!in_line && !vector_state)
        std::fprintf(stderr, "collected by the agent's collector: %s\n",
                     in_line.error().text.c_str());
    install_pad(full, vector_state, 0,
                in_line && !std::getenv("TPAGENT_BENCH_GENERIC") ? std::optional(*in_line)
                                                                 : std::nullopt);
}

void run(benchmark::State& state, bool tracing) {
    Setup& s = setup();
    if (state.thread_index() == 0) s.shared->header().tracing.store(tracing ? 1 : 0);
    std::uint64_t n = 0;
    for (auto _ : state)
        benchmark::DoNotOptimize(s.target.fn(n++));
    state.SetItemsProcessed(state.iterations());
    if (state.thread_index() == 0) s.shared->header().tracing.store(0);
}

void BM_untraced(benchmark::State& state) {
    Setup& s = setup();
    std::vector<std::uint8_t> code(s.target.original);
    auto* f = reinterpret_cast<std::uint64_t (*)(std::uint64_t)>(s.target.base + 0x1800);
    if (state.thread_index() == 0) std::memcpy(s.target.base + 0x1800, code.data(), code.size());
    // The copy's rip-relative load reads 0x800 further on, which is zero: same cost.
    std::uint64_t n = 0;
    for (auto _ : state)
        benchmark::DoNotOptimize(f(n++));
    state.SetItemsProcessed(state.iterations());
}

void BM_pad_not_tracing(benchmark::State& state) {
    if (state.thread_index() == 0) configure({});
    run(state, false);
}

void BM_no_collection(benchmark::State& state) {
    if (state.thread_index() == 0) configure({});
    run(state, true);
}

// A collector reduced to what no design can leave out of a time-ordered frame: the frame clock
// and a record (size, tracepoint, stamp) written into a per-thread ring. No tracing flag, no
// counts, no chunks: the figure is the pad's, the call's and the clock's.
constexpr unsigned kFloorRingWords = 3 * 256; // 256 records of 3 words
thread_local std::uint64_t t_floor_ring[kFloorRingWords];
thread_local unsigned t_floor_at = 0;
extern "C" void floor_collector(std::uint64_t record, std::uint8_t*, std::uint64_t,
                                const std::uint8_t*) {
    std::uint64_t* r = t_floor_ring + t_floor_at;
    r[0] = 24;
    r[1] = record;
    r[2] = tpagent::arch::frame_clock();
    t_floor_at = (t_floor_at + 3) % kFloorRingWords;
}

void BM_floor_stamped_record(benchmark::State& state) {
    if (state.thread_index() == 0) {
        configure({});
        install_pad(false, false, reinterpret_cast<std::uint64_t>(&floor_collector));
    }
    run(state, true);
}

ActionRecord registers() {
    ActionRecord a{};
    a.kind = ActionKind::Registers;
    return a;
}

ActionRecord memory64() {
    ActionRecord a{};
    a.kind = ActionKind::Memory;
    a.base_register = -1;
    a.offset = reinterpret_cast<std::uint64_t>(setup().buf);
    a.length = 64;
    return a;
}

void BM_regs(benchmark::State& state) {
    if (state.thread_index() == 0) configure({registers()});
    run(state, true);
}

void BM_regs_mem64(benchmark::State& state) {
    if (state.thread_index() == 0) configure({registers(), memory64()});
    run(state, true);
}

// `collect $xmm0` (any FP/vector register but not all, as gdb's $regs): the registers and the
// XSAVE state the pad saves for it.
void BM_vector_state(benchmark::State& state) {
    if (state.thread_index() == 0) configure({registers()}, nullptr, true);
    run(state, true);
}

// `if n >= 0` as gdb compiles it (rdi is gdb register 5), compiled into native code.
void BM_condition_compiled(benchmark::State& state) {
    static std::uint64_t code = 0;
    if (state.thread_index() == 0) {
        if (!code) {
            const std::uint8_t bytes[] = {0x26, 0x00, 0x05, 0x22, 0x00, 0x14, 0x0e, 0x27};
            auto program = bytecode::validate(bytes, 64);
            // As tpagent compiles it: `reg` loads from the block the pad staged.
            auto native = tpagent::arch::host_compiler_backend().translate(
                *program, setup().shared->helpers(),
                experiment::staged_register_layout(setup().shared->header()));
            void* mem =
                mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            std::memcpy(mem, native->data(), native->size());
            mprotect(mem, 4096, PROT_READ | PROT_EXEC);
            code = reinterpret_cast<std::uint64_t>(mem);
        }
        ActionRecord cond{};
        cond.kind = ActionKind::Expression;
        cond.compiled = code;
        // Its instructions where tpagent puts them, for the pad to see what it reads.
        const std::uint8_t bytes[] = {0x26, 0x00, 0x05, 0x22, 0x00, 0x14, 0x0e, 0x27};
        auto program = bytecode::validate(bytes, 64);
        const auto insns = program->insns();
        cond.insns_offset = kConfigOffset + 8192;
        cond.insn_count = static_cast<std::uint32_t>(insns.size());
        std::memcpy(at<bytecode::Insn>(setup().shared->local(), cond.insns_offset), insns.data(),
                    insns.size_bytes());
        configure({}, &cond);
    }
    run(state, true);
}

} // namespace

BENCHMARK(BM_untraced)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();
BENCHMARK(BM_pad_not_tracing)->Threads(1)->UseRealTime();
BENCHMARK(BM_floor_stamped_record)->Threads(1)->UseRealTime();
BENCHMARK(BM_no_collection)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();
BENCHMARK(BM_regs)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();
BENCHMARK(BM_regs_mem64)->Threads(1)->Threads(2)->Threads(4)->UseRealTime();
BENCHMARK(BM_condition_compiled)->Threads(1)->UseRealTime();
BENCHMARK(BM_vector_state)->Threads(1)->UseRealTime();

int main(int argc, char** argv) {
    if (const char* n = std::getenv("TPAGENT_BENCH_ITERATIONS")) {
        const auto iterations =
            static_cast<benchmark::IterationCount>(std::strtoull(n, nullptr, 10));
        for (auto [name, fn] : {std::pair{"BM_untraced", &BM_untraced},
                                {"BM_pad_not_tracing", &BM_pad_not_tracing},
                                {"BM_floor_stamped_record", &BM_floor_stamped_record},
                                {"BM_no_collection", &BM_no_collection},
                                {"BM_regs", &BM_regs},
                                {"BM_regs_mem64", &BM_regs_mem64},
                                {"BM_condition_compiled", &BM_condition_compiled},
                                {"BM_vector_state", &BM_vector_state}})
            benchmark::RegisterBenchmark((std::string("count/") + name).c_str(), fn)
                ->Iterations(iterations);
    }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    if (g) {
        const experiment::SharedBufferReader frames(g->shared);
        std::printf("frames created in the last benchmark: %llu (dropped: %llu)\n",
                    static_cast<unsigned long long>(frames.frames_created()),
                    static_cast<unsigned long long>(g->shared->header().dropped_frames.load()));
    }
    return 0;
}
