// The in-process agent (libtpagent-inproc.so) loaded into this test process with dlopen: the
// collector is called directly with fake register blocks, as a jump pad would call it, while
// tpagent's side (SharedBuffer) maps the same shared buffer a second time, configures it
// (tracepoint records written by tpagent's RecordWriter) and finds the frames the collector wrote
// into the chunks (SharedBufferReader). Shared by the inproc_collector_*_tests.cpp files: inline,
// so the library is loaded and the reader kept once for the whole test program.
#pragma once
#include "inproc/frame_chunks.hpp"
#include "inproc/shared_buffer.hpp"
#include "experiment/shared_buffer_reader.hpp"
#include "experiment/shared_buffer.hpp"
#include "experiment/record_writer.hpp"
#include "trace/tracepoint.hpp"
#include "trace/trace_frame.hpp"
#include "arch/arch.hpp"
#include "bytecode/compiler.hpp"
#include "bytecode/program.hpp"
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

#ifndef TPAGENT_INPROC_LIBRARY
#error "TPAGENT_INPROC_LIBRARY must name libtpagent-inproc.so (tests/CMakeLists.txt)"
#endif

namespace tpagent::inproc_collector_fixture {

using namespace tpagent;
using namespace tpagent::inproc;
using experiment::SharedBuffer;

using CollectFn = void (*)(std::uint64_t record, std::uint8_t* block, std::uint64_t frame,
                           const std::uint8_t* anchor);

// The library, loaded once (its constructor creates the memfd shared buffer), and tpagent's
// mapping.
struct Agent {
    CollectFn collect = nullptr;
    std::unique_ptr<SharedBuffer> shared;
};

inline Agent load_agent() {
    Agent a;
    void* lib = dlopen(TPAGENT_INPROC_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    INFO(TPAGENT_INPROC_LIBRARY << ": " << (lib ? "" : dlerror()));
    REQUIRE(lib != nullptr);
    a.collect = reinterpret_cast<CollectFn>(dlsym(lib, "tpagent_inproc_collect"));
    REQUIRE(a.collect != nullptr);
    auto shared = SharedBuffer::open(getpid());
    INFO((shared ? std::string() : shared.error().text));
    REQUIRE(shared);
    a.shared = std::move(*shared);
    // The header the library wrote describes this very library.
    REQUIRE(a.shared->header().collector == reinterpret_cast<std::uint64_t>(a.collect));
    REQUIRE(a.shared->header().general_registers_only == 1);
    REQUIRE(a.shared->remote(0) != reinterpret_cast<std::uint64_t>(a.shared->local()));
    return a;
}

inline Agent& agent() {
    static Agent a = load_agent();
    return a;
}
inline SharedBuffer& shared() {
    return *agent().shared;
}
inline Header& header() {
    return shared().header();
}

inline const arch::Architecture& host() {
    return arch::host_architecture();
}
inline std::size_t core_bytes() {
    return host().fast_block_bytes();
}
// A frame's R block: the core, then the thread-pointer registers the collector appends.
inline std::size_t frame_block_bytes() {
    return frame_register_bytes(shared().header());
}
inline const arch::RegisterDesc& reg(std::string_view name) {
    for (const auto& r : host().registers())
        if (name == r.name) return r;
    FAIL("no register " << name);
    throw; // unreachable
}
inline unsigned regnum(std::string_view name) {
    return static_cast<unsigned>(&reg(name) - host().registers().data());
}

// The registers the pads leave to the collector as the same at every hit of a thread, read
// here as the library reads them (tpagent_thread_constants).
inline std::vector<std::uint8_t> thread_constants() {
    std::vector<std::uint8_t> out;
#if defined(__x86_64__)
    std::uint16_t sel[6];
    asm("mov %%cs, %0" : "=r"(sel[0]));
    asm("mov %%ss, %0" : "=r"(sel[1]));
    asm("mov %%ds, %0" : "=r"(sel[2]));
    asm("mov %%es, %0" : "=r"(sel[3]));
    asm("mov %%fs, %0" : "=r"(sel[4]));
    asm("mov %%gs, %0" : "=r"(sel[5]));
    for (std::uint32_t v : sel)
        for (int i = 0; i < 4; ++i)
            out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
#endif
    return out;
}

// A fake register block as a pad saves it: the first core_bytes() of the `g` block, and the
// anchor the pad passes along (the saved flags).
struct Block {
    std::vector<std::uint8_t> bytes;
    alignas(8) std::uint8_t anchor[8] = {0x46, 0x02, 0, 0, 0, 0, 0, 0};
    Block() : bytes(core_bytes()) {
        for (std::size_t i = 0; i < bytes.size(); ++i)
            bytes[i] = static_cast<std::uint8_t>(i * 7 + 1);
    }
    // The block as a hit at `pc` that reads registers sees it: what the pad left out filled
    // in (arch::FastBlockCompletion).
    std::vector<std::uint8_t> completed(std::uint64_t pc) const {
        std::vector<std::uint8_t> out = bytes;
        const auto c = host().fast_block_completion();
        const std::uint64_t sp = reinterpret_cast<std::uint64_t>(anchor) + c.sp_bias;
        std::memcpy(out.data() + c.pc_offset, &pc, c.pc_size);
        std::memcpy(out.data() + c.sp_offset, &sp, c.sp_size);
        std::memcpy(out.data() + c.flags_offset, anchor, c.flags_size);
        const auto constants = thread_constants();
        if (c.constants_size == constants.size())
            std::memcpy(out.data() + c.constants_offset, constants.data(), constants.size());
        return out;
    }
    void set(std::string_view name, std::uint64_t v) {
        const auto& r = reg(name);
        // Worker threads set registers too: no Catch assertion here (not thread-safe).
        if (r.g_offset + r.size > bytes.size()) {
            std::fprintf(stderr, "register %s is not in the core block\n", r.name);
            std::abort();
        }
        std::memcpy(bytes.data() + r.g_offset, &v, std::min<std::size_t>(r.size, 8));
    }
};

inline std::uint64_t register_in(const std::vector<std::uint8_t>& block, std::string_view name) {
    const auto& r = reg(name);
    std::uint64_t v = 0;
    std::memcpy(&v, block.data() + r.g_offset, std::min<std::size_t>(r.size, 8));
    return v;
}

// `R`: the collector collects the whole block for any mask; this one wants no FP/vector state.
inline trace::Action registers_action() {
    return trace::RegisterMask{{0x01}};
}
inline trace::Action memory_action(std::uint64_t offset, std::uint32_t length,
                                   int base_register = -1) {
    return trace::MemoryRange{base_register, offset, length};
}
template <class T> std::uint64_t address_of(const T* p) {
    return reinterpret_cast<std::uint64_t>(p);
}

inline bytecode::Program program(std::vector<std::uint8_t> bytes) {
    auto p = bytecode::validate(bytes, static_cast<unsigned>(host().registers().size()));
    INFO((p ? std::string() : p.error().text));
    REQUIRE(p);
    return std::move(*p);
}
inline void put_be(std::vector<std::uint8_t>& out, std::uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i)
        out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

inline constexpr std::size_t kRecordSlots = 16;
inline constexpr std::size_t kTestBuffer = 64u << 20;
inline constexpr std::uint64_t kLargestRecord = 256u << 10;

// tpagent's reader of the run's frames; a new one per run, as tpagent makes.
inline std::unique_ptr<experiment::SharedBufferReader>& frames_reader() {
    static std::unique_ptr<experiment::SharedBufferReader> reader;
    return reader;
}

// The run's chunks (a new generation) and a reader for them.
inline void configure_chunks(std::size_t buffer_bytes) {
    REQUIRE(shared().configure_chunks(buffer_bytes, kLargestRecord));
    // Not owned: the shared buffer lives as long as the test process.
    frames_reader() = std::make_unique<experiment::SharedBufferReader>(
        std::shared_ptr<SharedBuffer>(std::shared_ptr<void>{}, &shared()));
}

// One run's configuration, written through SharedBuffer as tpagent's FastTracepoints::prepare
// writes it (tracing off, chunks reset, registers described, variables and readable ranges
// cleared), then tracepoint records by tpagent's RecordWriter, taken first, and their actions
// and expression code after them. Expressions are interpreted (no code is placed). start()
// sets tracing.
class Config {
  public:
    explicit Config(bool circular = true, std::int64_t budget = std::int64_t{1} << 40,
                    std::size_t buffer_bytes = kTestBuffer) {
        shared().begin_configuration(circular, budget);
        auto core = shared().describe_registers(host());
        REQUIRE(core);
        REQUIRE(*core == frame_block_bytes());
        configure_chunks(buffer_bytes); // after the registers, as tpagent: its reader reads them
        shared().clear_variables();
        // No ranges: an empty span with a non-null data() (set_readable_ranges memcpy()s
        // from it even when it is empty, which UBSan reports for null).
        static const ReadableRange kNone[1] = {};
        shared().set_readable_ranges(std::span(kNone, 0));
        writer_.emplace(shared(), [](std::uint64_t, std::span<const std::uint8_t>) {
            return Result<std::uint64_t>(make_error(ErrorCode::Unsupported, "no code placed"));
        });
        auto records = writer_->records(kRecordSlots);
        REQUIRE(records);
        records_ = *records;
    }

    // The next record (index = position), written as tpagent writes a fast tracepoint's.
    TracepointRecord& add(std::uint32_t number, std::uint64_t address,
                          std::vector<trace::Action> actions) {
        REQUIRE(count_ < kRecordSlots);
        TracepointRecord& rec = records_[count_++];
        trace::TracepointDefinition def;
        def.key = {number, address};
        def.kind = trace::TracepointKind::Fast;
        def.actions.push_back({std::move(actions)});
        auto written = writer_->write(rec, def);
        INFO((written ? std::string() : written.error().text));
        REQUIRE(written);
        REQUIRE(rec.frame_bound <= chunk_payload(header()));
        return rec;
    }

    // An X action (or condition) running p's instructions.
    static trace::Expression expression(bytecode::Program p) {
        return trace::Expression{{}, std::move(p)};
    }
    void condition(TracepointRecord& rec, const trace::Expression& e) {
        auto a = writer_->expression(e, rec.address);
        REQUIRE(a);
        condition(rec, *a);
    }
    void condition(TracepointRecord& rec, const ActionRecord& a) {
        rec.condition = a;
        rec.has_condition = 1;
        rec.complete_block = 1;
    }
    // Records at the same address share a pad: rec's hits run `then` after it.
    void chain(TracepointRecord& rec, const TracepointRecord& then) {
        rec.next = shared().offset_of(&then);
    }

    void define_variable(unsigned num, std::int64_t value, std::uint32_t clock = 0) {
        REQUIRE(shared().define_variable(num, value, clock));
    }
    static std::int64_t variable(unsigned num) { return shared().variable(num)->value.load(); }

    void start() { header().tracing.store(1, std::memory_order_release); }

    // What a pad passes: the record's address in the program (the library's mapping).
    static std::uint64_t remote(const TracepointRecord& rec) {
        return shared().remote(shared().offset_of(&rec));
    }

  private:
    std::optional<experiment::RecordWriter> writer_;
    std::span<TracepointRecord> records_;
    std::size_t count_ = 0;
};

// A hit of rec's pad on the calling thread.
inline void hit(const TracepointRecord& rec, Block& block) {
    agent().collect(Config::remote(rec), block.bytes.data(), 0, block.anchor);
}

// `count` hits of rec's pad on the calling thread, with register `name` = 0, 1, 2, ...
inline void hit_numbered(const TracepointRecord& rec, Block& block, std::string_view name,
                         std::uint64_t count) {
    for (std::uint64_t i = 0; i < count; ++i) {
        block.set(name, i);
        hit(rec, block);
    }
}

// Runs body(t) for t = 0 .. count-1, each on its own thread, all released together once they
// exist; `meanwhile`, if given, runs on this thread again and again until they have returned.
inline void on_threads(int count, const std::function<void(int)>& body,
                       const std::function<void()>& meanwhile = {}) {
    std::atomic<int> running{count};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(count));
    for (int t = 0; t < count; ++t)
        threads.emplace_back([&, t] {
            while (!go.load())
                ;
            body(t);
            running.fetch_sub(1);
        });
    go = true;
    if (meanwhile)
        while (running.load() > 0)
            meanwhile();
    for (auto& t : threads)
        t.join();
}

// A drained record, its blocks parsed.
struct Frame {
    RecordHeader header{};
    std::uint16_t number = 0;
    bool has_registers = false;
    std::vector<std::uint8_t> registers; // the core, as the pad staged it
    std::vector<std::uint8_t> tail;      // the thread-pointer registers after it
    std::vector<std::uint8_t> state;     // the saved FP/vector state after that, if collected
    struct Memory {
        std::uint64_t address;
        std::vector<std::uint8_t> bytes;
    };
    std::vector<Memory> memory;
    std::vector<std::pair<std::uint32_t, std::int64_t>> variables;
};

template <class T> T load(const std::uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Parses one staged record; "" or what is wrong with it.
inline std::string parse(const RecordHeader& rh, std::span<const std::uint8_t> staged, Frame& f) {
    f.header = rh;
    if (rh.size % 8 != 0) return "record size not a multiple of 8";
    if (staged.size() != rh.size - sizeof(RecordHeader)) return "span size != record size";
    if (staged.size() < trace::kFrameHeaderSize) return "no frame header";
    const std::size_t end = trace::kFrameHeaderSize + trace::frame_length(staged.data());
    if (end > staged.size()) return "frame length beyond the record";
    if (staged.size() - end >= 8) return "more than 7 bytes of padding";
    const bool state = (rh.index & kRecordHoldsState) != 0;
    const trace::FrameView view(staged.first(end),
                                frame_block_bytes() + (state ? header().saved_state_bytes : 0));
    f.number = view.tracepoint();
    std::size_t pos = trace::kFrameHeaderSize;
    while (auto b = view.block_at(pos)) {
        if (b->type == trace::kRegistersBlock) {
            if (f.has_registers) return "two R blocks";
            f.has_registers = true;
            const auto core = static_cast<std::ptrdiff_t>(core_bytes());
            const auto tail = static_cast<std::ptrdiff_t>(frame_block_bytes() - core_bytes());
            f.registers.assign(b->data.begin(), b->data.begin() + core);
            f.tail.assign(b->data.begin() + core, b->data.begin() + core + tail);
            f.state.assign(b->data.begin() + core + tail, b->data.end());
        } else if (b->type == trace::kMemoryBlock) {
            f.memory.push_back({b->address, {b->data.begin(), b->data.end()}});
        } else if (b->type == trace::kVariableBlock) {
            f.variables.emplace_back(b->variable, b->value);
        }
    }
    if (pos != end) return "short or unknown block at " + std::to_string(pos);
    return "";
}

// Hands every frame written since the last call to take, with its record header and the
// record's bytes after that header.
inline void
take_frames(const std::function<void(const RecordHeader&, std::span<const std::uint8_t>)>& take) {
    std::vector<trace::SharedFrame> found;
    frames_reader()->take_new(found);
    for (const auto& f : found) {
        RecordHeader rh;
        std::memcpy(&rh, f.bytes - sizeof rh, sizeof rh);
        take(rh, std::span(f.bytes, rh.size - sizeof rh));
    }
}

inline std::vector<Frame> drain() {
    std::vector<Frame> frames;
    take_frames([&](const RecordHeader& rh, std::span<const std::uint8_t> staged) {
        Frame f;
        const std::string problem = parse(rh, staged, f);
        INFO("record " << frames.size() << ": " << problem);
        REQUIRE(problem.empty());
        frames.push_back(std::move(f));
    });
    return frames;
}

// Starts the run, hits rec once, and returns the one record that hit staged.
inline Frame hit_once(Config& config, const TracepointRecord& rec, Block* with = nullptr) {
    config.start();
    Block own;
    hit(rec, with ? *with : own);
    auto frames = drain();
    REQUIRE(frames.size() == 1);
    return frames[0];
}

inline StopReason stop_reason() {
    return static_cast<StopReason>(header().stop_reason.load());
}

// Pages for memory tests: `readable` read-write pages, then one PROT_NONE page.
struct Pages {
    std::uint8_t* base = nullptr;
    std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    std::size_t readable;
    explicit Pages(std::size_t readable_pages) : readable(readable_pages) {
        void* p = mmap(nullptr, (readable + 1) * page, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        REQUIRE(p != MAP_FAILED);
        base = static_cast<std::uint8_t*>(p);
        for (std::size_t i = 0; i < readable * page; ++i)
            base[i] = static_cast<std::uint8_t>(i * 13 + 5);
        REQUIRE(mprotect(base + readable * page, page, PROT_NONE) == 0);
    }
    ~Pages() { munmap(base, (readable + 1) * page); }
    std::uint8_t* guard() const { return base + readable * page; }
    std::uint64_t address(std::size_t offset) const { return address_of(base + offset); }
};

} // namespace tpagent::inproc_collector_fixture
