// The in-process agent (libtpagent-inproc.so) loaded into this test process with dlopen: the
// collector is called directly with fake register blocks, as a jump pad would call it, while
// tpagent's side (SharedBuffer) maps the same shared buffer a second time, configures it
// (tracepoint records written by tpagent's RecordWriter) and finds the frames the collector wrote
// into the chunks (SharedBufferReader).
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

namespace {

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

Agent load_agent() {
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

Agent& agent() {
    static Agent a = load_agent();
    return a;
}
SharedBuffer& shared() {
    return *agent().shared;
}
Header& header() {
    return shared().header();
}

const arch::Architecture& host() {
    return arch::host_architecture();
}
std::size_t core_bytes() {
    return host().fast_block_bytes();
}
// A frame's R block: the core, then the thread-pointer registers the collector appends.
std::size_t frame_block_bytes() {
    return frame_register_bytes(shared().header());
}
const arch::RegisterDesc& reg(std::string_view name) {
    for (const auto& r : host().registers())
        if (name == r.name) return r;
    FAIL("no register " << name);
    throw; // unreachable
}
unsigned regnum(std::string_view name) {
    return static_cast<unsigned>(&reg(name) - host().registers().data());
}

// The registers the pads leave to the collector as the same at every hit of a thread, read
// here as the library reads them (tpagent_thread_constants).
std::vector<std::uint8_t> thread_constants() {
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

std::uint64_t register_in(const std::vector<std::uint8_t>& block, std::string_view name) {
    const auto& r = reg(name);
    std::uint64_t v = 0;
    std::memcpy(&v, block.data() + r.g_offset, std::min<std::size_t>(r.size, 8));
    return v;
}

// `R`: the collector collects the whole block for any mask; this one wants no FP/vector state.
trace::Action registers_action() {
    return trace::RegisterMask{{0x01}};
}
trace::Action memory_action(std::uint64_t offset, std::uint32_t length, int base_register = -1) {
    return trace::MemoryRange{base_register, offset, length};
}
template <class T> std::uint64_t address_of(const T* p) {
    return reinterpret_cast<std::uint64_t>(p);
}

bytecode::Program program(std::vector<std::uint8_t> bytes) {
    auto p = bytecode::validate(bytes, static_cast<unsigned>(host().registers().size()));
    INFO((p ? std::string() : p.error().text));
    REQUIRE(p);
    return std::move(*p);
}
void put_be(std::vector<std::uint8_t>& out, std::uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i)
        out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

constexpr std::size_t kRecordSlots = 16;
constexpr std::size_t kTestBuffer = 64u << 20;
constexpr std::uint64_t kLargestRecord = 256u << 10;

// tpagent's reader of the run's frames; a new one per run, as tpagent makes.
std::unique_ptr<experiment::SharedBufferReader>& frames_reader() {
    static std::unique_ptr<experiment::SharedBufferReader> reader;
    return reader;
}

// The run's chunks (a new generation) and a reader for them.
void configure_chunks(std::size_t buffer_bytes) {
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
void hit(const TracepointRecord& rec, Block& block) {
    agent().collect(Config::remote(rec), block.bytes.data(), 0, block.anchor);
}

// `count` hits of rec's pad on the calling thread, with register `name` = 0, 1, 2, ...
void hit_numbered(const TracepointRecord& rec, Block& block, std::string_view name,
                  std::uint64_t count) {
    for (std::uint64_t i = 0; i < count; ++i) {
        block.set(name, i);
        hit(rec, block);
    }
}

// Runs body(t) for t = 0 .. count-1, each on its own thread, all released together once they
// exist; `meanwhile`, if given, runs on this thread again and again until they have returned.
void on_threads(int count, const std::function<void(int)>& body,
                const std::function<void()>& meanwhile = {}) {
    std::atomic<int> running{count};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
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
std::string parse(const RecordHeader& rh, std::span<const std::uint8_t> staged, Frame& f) {
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
void take_frames(
    const std::function<void(const RecordHeader&, std::span<const std::uint8_t>)>& take) {
    std::vector<trace::SharedFrame> found;
    frames_reader()->take_new(found);
    for (const auto& f : found) {
        RecordHeader rh;
        std::memcpy(&rh, f.bytes - sizeof rh, sizeof rh);
        take(rh, std::span(f.bytes, rh.size - sizeof rh));
    }
}

std::vector<Frame> drain() {
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
Frame hit_once(Config& config, const TracepointRecord& rec, Block* with = nullptr) {
    config.start();
    Block own;
    hit(rec, with ? *with : own);
    auto frames = drain();
    REQUIRE(frames.size() == 1);
    return frames[0];
}

StopReason stop_reason() {
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

} // namespace

TEST_CASE("inproc: R and M actions stage one record per hit", "[inproc]") {
    Config config;
    std::vector<std::uint8_t> memory(100);
    for (std::size_t i = 0; i < memory.size(); ++i)
        memory[i] = static_cast<std::uint8_t>(0xa0 + i);
    const std::uint64_t address = 0x401000;
    TracepointRecord& rec =
        config.add(7, address,
                   {registers_action(), memory_action(address_of(memory.data()), 100),
                    // rdi + 16, 32 bytes: a register-relative range
                    memory_action(16, 32, static_cast<int>(regnum("rdi")))});
    config.start();

    Block block;
    block.set("rdi", address_of(memory.data()));
    block.set("rip", address);
    hit(rec, block);

    const auto frames = drain();
    REQUIRE(frames.size() == 1);
    const Frame& f = frames[0];
    CHECK(f.header.pc == address);
    CHECK(f.header.index == 0);
    CHECK(f.number == 7);
    REQUIRE(f.has_registers);
    CHECK(f.registers == block.completed(address));
    REQUIRE(f.memory.size() == 2);
    CHECK(f.memory[0].address == address_of(memory.data()));
    CHECK(f.memory[0].bytes == memory);
    CHECK(f.memory[1].address == address_of(memory.data()) + 16);
    CHECK(f.memory[1].bytes == std::vector<std::uint8_t>(memory.begin() + 16, memory.begin() + 48));
    CHECK(f.variables.empty());
    CHECK(stop_reason() == StopReason::None);
    CHECK(header().tracing.load() == 1);
    CHECK(header().dropped_frames.load() == 0);

    // Drained once: a second drain finds nothing; three more hits give three more records.
    CHECK(drain().empty());
    for (int i = 0; i < 3; ++i)
        hit(rec, block);
    CHECK(drain().size() == 3);
}

TEST_CASE("inproc: records are indexed by position and chained records collect too", "[inproc]") {
    Config config;
    TracepointRecord& first = config.add(1, 0x1000, {registers_action()});
    TracepointRecord& second = config.add(2, 0x2000, {registers_action()});
    TracepointRecord& chained = config.add(3, 0x2000, {memory_action(0, 0)});
    config.chain(second, chained);
    config.start();
    Block block;
    hit(second, block);
    hit(first, block);
    auto frames = drain();
    REQUIRE(frames.size() == 3);
    CHECK(frames[0].header.index == 1);
    CHECK(frames[0].number == 2);
    CHECK(frames[0].header.pc == 0x2000);
    CHECK(frames[1].header.index == 2);
    CHECK(frames[1].number == 3);
    CHECK_FALSE(frames[1].has_registers);
    CHECK(frames[1].memory.empty());
    CHECK(frames[2].header.index == 0);
    CHECK(frames[2].number == 1);
}

// A record flagged collects_state ends its R block with the state the pad saved (found from
// the frame argument) and says so in its index; another record at the same time does not.
TEST_CASE("inproc: a record that collects the saved state ends its R block with it", "[inproc]") {
    Config config;
    const std::uint32_t bytes = header().saved_state_bytes;
    REQUIRE(bytes >= 512); // x86-64: the XSAVE (or FXSAVE) area
    TracepointRecord& with = config.add(1, 0x1000, {registers_action()});
    TracepointRecord& without = config.add(2, 0x2000, {registers_action()});
    with.collects_state = 1;
    with.frame_bound = experiment::staged_frame_bound(
        std::span(at<const ActionRecord>(shared().local(), with.actions_offset), 1),
        static_cast<std::uint32_t>(frame_block_bytes()) + bytes);
    config.start();
    // As a pad leaves them on the stack: the state, then (above it) the register block.
    std::vector<std::uint8_t> stack(bytes + core_bytes());
    for (std::size_t i = 0; i < bytes; ++i)
        stack[i] = static_cast<std::uint8_t>(i * 13 + 5);
    const std::vector<std::uint8_t> state(stack.begin(), stack.begin() + bytes);
    Block block;
    std::uint8_t* staged = stack.data() + bytes;
    const auto frame = address_of(stack.data()) - header().saved_state_frame_offset;
    const auto collect = [&](const TracepointRecord& rec, std::uint64_t at) {
        std::copy(block.bytes.begin(), block.bytes.end(), staged);
        ::agent().collect(Config::remote(rec), staged, at, block.anchor);
    };
    collect(with, frame);
    collect(without, frame);
    std::vector<trace::SharedFrame> found;
    frames_reader()->take_new(found);
    REQUIRE(found.size() == 2);
    CHECK(found[0].registers_valid == frame_block_bytes() + bytes);
    CHECK(found[1].registers_valid == frame_block_bytes());
    // Served: the state's place in g is filled by the architecture's decoding of it.
    CHECK(frames_reader()->short_block(found[0].registers_valid).state == bytes);
    CHECK(frames_reader()->short_block(found[1].registers_valid).state == 0);
    collect(with, frame);
    collect(without, frame);
    // A pad that saved no state (an older run's, say): nothing below the block to take.
    collect(with, frame + bytes);
    auto frames = drain();
    REQUIRE(frames.size() == 3);
    CHECK((frames[0].header.index & ~kRecordHoldsState) == 0);
    CHECK((frames[0].header.index & kRecordHoldsState) != 0);
    CHECK(frames[0].registers == block.completed(0x1000));
    CHECK(frames[0].state == state);
    CHECK(frames[1].header.index == 1);
    CHECK(frames[1].state.empty());
    CHECK(frames[2].header.index == 0);
    CHECK(frames[2].has_registers);
    CHECK(frames[2].state.empty());
}

TEST_CASE("inproc: a long M range is split into blocks of at most 0xffff bytes", "[inproc]") {
    Config config;
    std::vector<std::uint8_t> memory(70000);
    for (std::size_t i = 0; i < memory.size(); ++i)
        memory[i] = static_cast<std::uint8_t>(i * 31);
    TracepointRecord& rec =
        config.add(1, 0x1000, {memory_action(address_of(memory.data()), 70000)});
    const auto m = hit_once(config, rec).memory;
    REQUIRE(m.size() == 2);
    CHECK(m[0].address == address_of(memory.data()));
    CHECK(m[0].bytes.size() == 0xffff);
    CHECK(m[1].address == address_of(memory.data()) + 0xffff);
    std::vector<std::uint8_t> joined = m[0].bytes;
    joined.insert(joined.end(), m[1].bytes.begin(), m[1].bytes.end());
    CHECK(joined == memory);
}

TEST_CASE("inproc: unreadable memory is never read and the readable prefix is collected",
          "[inproc]") {
    const bool listed = GENERATE(false, true);
    INFO((listed ? "readable pages listed" : "no listed ranges: process_vm_readv"));
    Config config; // loads the library first: its mappings do not land in the hole below
    Pages pages(2);
    const std::size_t page = pages.page;
    // An address nothing is mapped at: a page mapped, then unmapped.
    void* gone = mmap(nullptr, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(gone != MAP_FAILED);
    REQUIRE(munmap(gone, page) == 0);
    if (listed) {
        // As tpagent lists them from /proc/PID/maps: the two read-write pages only.
        const ReadableRange ranges[] = {{pages.address(0), pages.address(2 * page)}};
        shared().set_readable_ranges(ranges);
    }
    TracepointRecord& rec =
        config.add(1, 0x1000,
                   {memory_action(pages.address(100), 200),           // inside: read whole
                    memory_action(address_of(pages.guard()), 64),     // PROT_NONE: nothing
                    memory_action(address_of(gone) + 8, 64),          // unmapped: nothing
                    memory_action(pages.address(2 * page - 40), 100), // runs into PROT_NONE: prefix
                    memory_action(pages.address(page - 16), 32),      // across the two pages: whole
                    memory_action(0xfffffffffffff000ull, 0x2000),     // wraps the address space
                    memory_action(0, 16)});                           // null page
    const auto m = hit_once(config, rec).memory;
    REQUIRE(m.size() == 3);
    CHECK(m[0].address == pages.address(100));
    CHECK(m[0].bytes == std::vector<std::uint8_t>(pages.base + 100, pages.base + 300));
    CHECK(m[1].address == pages.address(2 * page - 40));
    CHECK(m[1].bytes == std::vector<std::uint8_t>(pages.base + 2 * page - 40, pages.guard()));
    CHECK(m[2].address == pages.address(page - 16));
    CHECK(m[2].bytes == std::vector<std::uint8_t>(pages.base + page - 16, pages.base + page + 16));
    CHECK(stop_reason() == StopReason::None);
}

TEST_CASE("inproc: the range a thread last read from is forgotten when tpagent lists anew",
          "[inproc]") {
    Config config;
    Pages pages(2);
    const std::size_t page = pages.page;
    const ReadableRange both[] = {{pages.address(0), pages.address(2 * page)}};
    shared().set_readable_ranges(both);
    TracepointRecord& rec = config.add(1, 0x1000, {memory_action(pages.address(100), 64)});
    config.start();
    Block block;
    hit(rec, block);
    // The first page goes PROT_NONE and is listed no more: read directly through the range
    // remembered from the first hit, it would fault (and end this test).
    REQUIRE(mprotect(pages.base, page, PROT_NONE) == 0);
    const ReadableRange second[] = {{pages.address(page), pages.address(2 * page)}};
    shared().set_readable_ranges(second);
    hit(rec, block);
    REQUIRE(mprotect(pages.base, page, PROT_READ | PROT_WRITE) == 0);
    const auto frames = drain();
    REQUIRE(frames.size() == 2);
    REQUIRE(frames[0].memory.size() == 1);
    CHECK(frames[0].memory[0].bytes ==
          std::vector<std::uint8_t>(pages.base + 100, pages.base + 164));
    CHECK(frames[1].memory.empty());
}

TEST_CASE("inproc: expressions read memory safely through the collector", "[inproc]") {
    Pages pages(1);
    const bool listed = GENERATE(false, true);
    Config config;
    if (listed) {
        const ReadableRange ranges[] = {{pages.address(0), pages.address(pages.page)}};
        shared().set_readable_ranges(ranges);
    }
    // X: trace 8 bytes at the last readable word, then `ref64` on the guard page (a memory
    // error, which does not stop the trace: the frame keeps what was collected).
    std::vector<std::uint8_t> bytes{0x25};
    put_be(bytes, pages.address(pages.page - 8), 8);
    bytes.insert(bytes.end(), {0x22, 8, 0x0c, 0x25});
    put_be(bytes, address_of(pages.guard()), 8);
    bytes.insert(bytes.end(), {0x1a, 0x27});
    TracepointRecord& rec = config.add(1, 0x1000, {config.expression(program(bytes))});
    const auto m = hit_once(config, rec).memory;
    REQUIRE(m.size() == 1);
    CHECK(m[0].address == pages.address(pages.page - 8));
    CHECK(m[0].bytes == std::vector<std::uint8_t>(pages.guard() - 8, pages.guard()));
    CHECK(stop_reason() == StopReason::None);
    CHECK(header().tracing.load() == 1);
}

TEST_CASE("inproc: an interpreted condition lets only matching hits collect", "[inproc]") {
    Config config;
    TracepointRecord& rec = config.add(4, 0x1000, {registers_action()});
    // reg 5 (rdi); const8 3; rem_unsigned; log_not; end: rdi % 3 == 0
    REQUIRE(regnum("rdi") == 5);
    config.condition(rec, config.expression(program({0x26, 0, 5, 0x22, 3, 0x08, 0x0e, 0x27})));
    config.start();
    Block block;
    hit_numbered(rec, block, "rdi", 30);
    auto frames = drain();
    REQUIRE(frames.size() == 10);
    for (std::size_t i = 0; i < frames.size(); ++i) {
        REQUIRE(frames[i].has_registers);
        CHECK(register_in(frames[i].registers, "rdi") == 3 * i);
    }
    CHECK(stop_reason() == StopReason::None);
}

TEST_CASE("inproc: a failing condition stops the trace with Error", "[inproc]") {
    Config config;
    TracepointRecord& rec = config.add(9, 0x1000, {registers_action()});
    // const8 1; const8 0; div_unsigned; end
    config.condition(rec, config.expression(program({0x22, 1, 0x22, 0, 0x06, 0x27})));
    config.start();
    Block block;
    hit(rec, block);
    hit(rec, block);
    CHECK(drain().empty());
    CHECK(stop_reason() == StopReason::Error);
    CHECK(header().stop_tracepoint == 9);
    CHECK(header().stop_status == static_cast<std::uint64_t>(bytecode::EvalStatus::DivideByZero));
    CHECK(header().tracing.load() == 0);
}

TEST_CASE("inproc: pass count 5 with four threads: exactly five records", "[inproc]") {
    Config config;
    TracepointRecord& rec = config.add(3, 0x1000, {registers_action()});
    rec.pass_count = 5;
    config.start();
    on_threads(4, [&](int t) {
        Block block;
        block.set("rax", static_cast<std::uint64_t>(t));
        for (int i = 0; i < 1000; ++i)
            hit(rec, block);
    });
    auto frames = drain();
    CHECK(frames.size() == 5);
    CHECK(stop_reason() == StopReason::PassCount);
    CHECK(header().stop_tracepoint == 3);
    CHECK(header().tracing.load() == 0);
    // The threads ended: their chunks were sealed.
    for (std::size_t i = 0; i < header().chunk_count; ++i)
        CHECK(chunk_at(shared().local(), i)->state.load() !=
              static_cast<std::uint32_t>(ChunkState::Owned));
}

namespace {

// Four threads hit one tracepoint 20000 times each (circular) while this thread drains.
struct ConcurrentRun {
    static constexpr int kThreads = 4;
    static constexpr std::uint64_t kHits = 20000;
    std::size_t total = 0;
    std::size_t passes = 0;             // drains while the threads ran
    std::size_t backward = 0;           // a thread's record drained after a later one of its
    std::vector<std::vector<int>> seen; // [thread][sequence]: times drained
};

ConcurrentRun run_concurrently() {
    ConcurrentRun run;
    constexpr int kThreads = ConcurrentRun::kThreads;
    constexpr std::uint64_t kHits = ConcurrentRun::kHits;
    run.seen.assign(kThreads, std::vector<int>(kHits, 0));
    Config config; // circular
    // R (thread in rax, sequence in rbx) and M: the thread's own sequence word, at rsi.
    TracepointRecord& rec =
        config.add(5, 0x1000, {registers_action(), memory_action(0, 8, regnum("rsi"))});
    config.start();
    std::vector<std::uint64_t> last(kThreads, 0);
    std::vector<bool> any(kThreads, false);
    auto take = [&] {
        take_frames([&](const RecordHeader& rh, std::span<const std::uint8_t> staged) {
            Frame f;
            const std::string problem = parse(rh, staged, f);
            INFO(problem);
            REQUIRE(problem.empty());
            REQUIRE(f.has_registers);
            REQUIRE(f.memory.size() == 1);
            const std::uint64_t t = register_in(f.registers, "rax");
            const std::uint64_t seq = register_in(f.registers, "rbx");
            REQUIRE(t < static_cast<std::uint64_t>(kThreads));
            REQUIRE(seq < kHits);
            CHECK(load<std::uint64_t>(f.memory[0].bytes.data()) == seq);
            ++run.seen[t][seq];
            if (any[t] && seq < last[t]) ++run.backward;
            any[t] = true;
            last[t] = seq;
            ++run.total;
        });
    };
    on_threads(
        kThreads,
        [&](int t) {
            Block block;
            std::uint64_t sequence = 0;
            block.set("rax", static_cast<std::uint64_t>(t));
            block.set("rsi", address_of(&sequence));
            for (std::uint64_t i = 0; i < kHits; ++i) {
                sequence = i;
                block.set("rbx", i);
                hit(rec, block);
            }
        },
        [&] {
            take();
            ++run.passes;
        });
    take();
    CHECK(header().dropped_frames.load() == 0);
    CHECK(stop_reason() == StopReason::None);
    CHECK(drain().empty());
    return run;
}

} // namespace

TEST_CASE("inproc: four threads x 20000 hits drained while they run: each record once",
          "[inproc]") {
    const ConcurrentRun run = run_concurrently();
    INFO("drain passes while running: " << run.passes);
    CHECK(run.total == ConcurrentRun::kThreads * ConcurrentRun::kHits);
    std::size_t missing = 0, repeated = 0;
    for (const auto& thread : run.seen)
        for (int n : thread) {
            missing += n == 0;
            repeated += n > 1;
        }
    CHECK(missing == 0);
    CHECK(repeated == 0);
}

// A thread that moves from chunk A to chunk B during a drain: B's newer records must not come
// out before the rest of A (drain goes by the chunks' sequence, re-reading `committed`).
TEST_CASE("inproc: a thread's records are drained in the order it staged them", "[inproc]") {
    const ConcurrentRun run = run_concurrently();
    INFO("drain passes while running: " << run.passes);
    CHECK(run.backward == 0);
}

TEST_CASE("inproc: the linear budget stops the trace with BufferFull", "[inproc]") {
    // One frame's staged record. The collector charges the budget that much per frame, or
    // (an older accounting) that much plus the R block widened to the full `g` size; either
    // way the frames never take more than the budget.
    std::uint64_t size = 0;
    {
        Config config;
        TracepointRecord& rec = config.add(1, 0x1000, {registers_action()});
        size = hit_once(config, rec).header.size;
    }
    const std::uint64_t widened = size + host().g_size() - frame_block_bytes();

    SECTION("one thread: the frames the budget holds, then nothing") {
        const std::uint64_t budget = 10 * size + size / 2; // below one claim (64 KiB)
        Config config(false, static_cast<std::int64_t>(budget));
        TracepointRecord& rec = config.add(2, 0x1000, {registers_action()});
        config.start();
        Block block;
        hit_numbered(rec, block, "rbx", 20);
        auto frames = drain();
        INFO("record " << size << " bytes, widened " << widened << ", budget " << budget);
        CHECK((frames.size() == budget / size || frames.size() == budget / widened));
        for (std::uint64_t i = 0; i < frames.size(); ++i)
            CHECK(register_in(frames[i].registers, "rbx") == i);
        CHECK(stop_reason() == StopReason::BufferFull);
        CHECK(header().stop_tracepoint == 2);
        CHECK(header().tracing.load() == 0);
        hit(rec, block);
        CHECK(drain().empty());
    }

    SECTION("four threads: about N frames, never more than the budget holds") {
        constexpr std::uint64_t N = 2000;
        const std::uint64_t budget = N * size;
        Config config(false, static_cast<std::int64_t>(budget));
        TracepointRecord& rec = config.add(2, 0x1000, {registers_action()});
        config.start();
        on_threads(4, [&](int) {
            Block block;
            for (int i = 0; i < 1000; ++i)
                hit(rec, block);
        });
        auto frames = drain();
        INFO("record " << size << " bytes, widened " << widened << ", " << frames.size()
                       << " frames");
        CHECK(frames.size() <= N);
        // Each thread may leave up to one claim of credit unused (at most a 64th of what was
        // left, or a frame), and the stopping claim may leave less than a frame.
        CHECK(frames.size() * widened + 4 * (budget / 64 + widened) + widened >= budget);
        CHECK(stop_reason() == StopReason::BufferFull);
        CHECK(header().tracing.load() == 0);
        Block block;
        hit(rec, block);
        CHECK(drain().empty());
    }
}

TEST_CASE("inproc: a small linear buffer is filled by two writers, not ended by the second",
          "[inproc]") {
    std::uint64_t size = 0;
    {
        Config config;
        TracepointRecord& rec = config.add(1, 0x1000, {registers_action()});
        size = hit_once(config, rec).header.size;
    }
    // Far below the 64 KiB a writer may claim at once: the first writer's one frame must not
    // take it all (it did, and the second writer's first frame stopped the trace).
    const std::uint64_t budget = 40 * size;
    Config config(false, static_cast<std::int64_t>(budget));
    TracepointRecord& rec = config.add(2, 0x1000, {registers_action()});
    config.start();
    on_threads(1, [&](int) {
        Block block;
        hit(rec, block);
    });
    on_threads(1, [&](int) {
        Block block;
        for (int i = 0; i < 100; ++i)
            hit(rec, block);
    });
    const auto frames = drain();
    INFO("record " << size << " bytes, " << frames.size() << " frames");
    CHECK(frames.size() <= budget / size);
    // The budget is charged a record's size a frame. Lost: the first writer's unused credit
    // (one frame: a 64th of the buffer is less) and what the last claim leaves, under a frame.
    CHECK(frames.size() + 2 >= budget / size);
    CHECK(stop_reason() == StopReason::BufferFull);
}

TEST_CASE("inproc: tracing 0 or a disabled record collects nothing", "[inproc]") {
    Config config;
    TracepointRecord& rec = config.add(1, 0x1000, {registers_action()});
    Block block;
    hit(rec, block); // not started
    CHECK(drain().empty());
    config.start();
    rec.enabled = 0;
    hit(rec, block);
    CHECK(drain().empty());
    rec.enabled = 1;
    hit(rec, block);
    CHECK(drain().size() == 1);
    header().tracing.store(0);
    hit(rec, block);
    CHECK(drain().empty());
    CHECK(stop_reason() == StopReason::None);
}

namespace {
std::uint64_t g_nested_record = 0;
Block* g_nested_block = nullptr;
std::uint64_t g_condition_rdi = 0;
bool g_condition_guard_read = true;
Pages* g_condition_pages = nullptr;

// A "compiled" condition: native code the collector calls. It checks the context the
// collector gives compiled code, and calls the collector again, as a signal handler on the
// same thread would while the thread is inside the collector.
bytecode::EvalStatus nested_condition(const bytecode::Context* ctx, bytecode::EvalOut* out) {
    ctx->read_register(ctx->user, regnum("rdi"), &g_condition_rdi);
    std::uint64_t word = 0;
    g_condition_guard_read =
        ctx->read_memory(ctx->user, address_of(g_condition_pages->guard()), &word, sizeof word);
    agent().collect(g_nested_record, g_nested_block->bytes.data(), 0, g_nested_block->anchor);
    out->value = 1;
    return bytecode::EvalStatus::Ok;
}
} // namespace

TEST_CASE("inproc: a hit nested in a hit is dropped and compiled conditions get the context",
          "[inproc]") {
    Pages pages(1);
    Config config;
    TracepointRecord& rec = config.add(1, 0x1000, {registers_action()});
    TracepointRecord& inner = config.add(2, 0x2000, {registers_action()});
    ActionRecord cond{};
    cond.kind = ActionKind::Expression;
    cond.compiled = reinterpret_cast<std::uint64_t>(&nested_condition);
    config.condition(rec, cond);
    config.start();
    Block block;
    block.set("rdi", 0x1234567);
    g_nested_record = Config::remote(inner);
    g_nested_block = &block;
    g_condition_pages = &pages;
    hit(rec, block);
    CHECK(g_condition_rdi == 0x1234567);
    CHECK_FALSE(g_condition_guard_read);
    auto frames = drain();
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].number == 1);
    CHECK(header().dropped_frames.load() == 1);
    // Outside a hit the inner tracepoint collects as usual.
    hit(inner, block);
    CHECK(drain().size() == 1);
}

TEST_CASE("inproc: a new generation drops the old chunks and records still arrive", "[inproc]") {
    Config config;
    TracepointRecord& rec = config.add(1, 0x1000, {registers_action()});
    config.start();
    Block block;

    // A thread takes a chunk, then waits while tpagent starts a new run.
    std::atomic<int> phase{0};
    std::thread other([&] {
        Block b;
        b.set("rax", 99);
        hit(rec, b);
        phase = 1;
        while (phase.load() != 2)
            ;
        // It ends in the new run: its old chunk is not its to seal any more.
    });
    while (phase.load() != 1)
        ;
    block.set("rax", 1);
    hit(rec, block); // the main thread's chunk in the old generation

    header().tracing.store(0);
    configure_chunks(kTestBuffer); // new generation: every chunk empty, nothing to find
    header().tracing.store(1);
    CHECK(drain().empty());

    block.set("rax", 2);
    hit(rec, block); // a new chunk
    phase = 2;
    other.join();
    block.set("rax", 3);
    hit(rec, block);
    auto frames = drain();
    REQUIRE(frames.size() == 2);
    CHECK(register_in(frames[0].registers, "rax") == 2);
    CHECK(register_in(frames[1].registers, "rax") == 3);
    // The main thread still owns its chunk: the other thread's exit did not seal it.
    std::size_t owned = 0;
    for (std::size_t i = 0; i < header().chunk_count; ++i) {
        const auto s = static_cast<ChunkState>(chunk_at(shared().local(), i)->state.load());
        CHECK(s != ChunkState::Sealed);
        owned += s == ChunkState::Owned;
    }
    CHECK(owned == 1);
    block.set("rax", 4);
    hit(rec, block);
    frames = drain();
    REQUIRE(frames.size() == 1);
    CHECK(register_in(frames[0].registers, "rax") == 4);
}

// Records of ~250 KB, two per 512 KiB chunk; a 1 MiB buffer gets 4 chunks.
TEST_CASE("inproc: circular: a full buffer reuses the chunk sealed longest ago", "[inproc]") {
    std::vector<std::uint8_t> memory(250000, 0x5a);
    Config config(true, 0, 1u << 20);
    // 1 MiB in chunks of 512 KiB (less their headers): three sealed chunks are kept, and 64
    // more are there for writers to fill.
    REQUIRE(header().circular_keep == 3);
    REQUIRE(header().chunk_count == 3 + 64);
    TracepointRecord& rec =
        config.add(1, 0x1000, {memory_action(address_of(memory.data()), 250000)});
    config.start();
    Block block;
    hit_numbered(rec, block, "rbx", 8);
    CHECK(drain().size() == 8);
    CHECK(frames_reader()->frames_created() == 8);
    // The first chunk (frames 0 and 1) is reused: its frames are gone, and said so.
    const std::uint64_t discards = frames_reader()->discards();
    block.set("rbx", 8);
    hit(rec, block);
    CHECK(frames_reader()->discards() == discards + 1);
    CHECK(header().dropped_frames.load() == 0);
    CHECK(header().discarded_frames.load() == 2);
    CHECK(frames_reader()->frames_created() == 9);
    auto frames = drain();
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].memory.size() == 4);
    CHECK(stop_reason() == StopReason::None);
}

// Yields of writers waiting in the test below.
std::atomic<int> g_waits{0};

// A writer needing a chunk when every fresh one is taken and the only sealed one is between its
// sealer's two steps (counted, not yet in the ring): the writer waits for that chunk rather than
// dropping its frame, and takes it, not whatever an entry left from a zeroed ring or an earlier
// run names.
TEST_CASE("inproc: a writer waits for a chunk whose sealer is between its two steps", "[inproc]") {
    Config config(true, 0, 1u << 20);
    void* r = shared().local();
    Header& h = header();
    const std::uint64_t generation = h.generation.load();
    // An earlier run's seal 0 of chunk 0 in the ring, as a run that sealed chunk 0 first leaves.
    sealed_ring(r)[0].store(0);
    configure_chunks(1u << 20);
    REQUIRE(h.generation.load() == generation + 1);
    std::vector<ChunkHeader*> owned;
    for (std::uint32_t i = 0; i < h.chunk_count; ++i)
        owned.push_back(take_chunk(r, generation + 1, nullptr));
    REQUIRE(owned.back() != nullptr);
    CHECK(take_chunk(r, generation + 1, nullptr) == nullptr);

    // Chunk 5's sealer, halfway: seal 0 counted, its ring entry not written.
    ChunkHeader* sealed = owned[5];
    sealed->state.store(static_cast<std::uint32_t>(ChunkState::Sealed));
    REQUIRE(h.sealed_count.fetch_add(1) == 0);
    // Without a way to wait, the writer gives up (and would drop its frame).
    CHECK(take_chunk(r, generation + 1, nullptr) == nullptr);

    g_waits = 0;
    std::atomic<ChunkHeader*> taken{nullptr};
    std::atomic<bool> returned{false};
    std::thread writer([&] {
        taken = take_chunk(r, generation + 1, [](int) {
            ++g_waits;
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        });
        returned = true;
    });
    while (g_waits.load() < 10 && !returned.load())
        std::this_thread::yield();
    CHECK_FALSE(returned.load());
    // The sealer's second step.
    sealed_ring(r)[0].store((std::uint64_t{0} << 16) | chunk_index(r, sealed));
    writer.join();
    CHECK(taken == sealed);
    CHECK(h.reused_count.load() == 1);

    // A sealer that never takes its second step (held by a ptrace stop, say): the wait ends,
    // and no later writer waits for that seal again.
    owned[6]->state.store(static_cast<std::uint32_t>(ChunkState::Sealed));
    REQUIRE(h.sealed_count.fetch_add(1) == 1);
    const YieldFn count = [](int) { ++g_waits; };
    g_waits = 0;
    CHECK(take_chunk(r, generation + 1, count) == nullptr);
    CHECK(g_waits.load() == 200);
    g_waits = 0;
    CHECK(take_chunk(r, generation + 1, count) == nullptr);
    CHECK(g_waits.load() == 0);
}

TEST_CASE("inproc: a frame copied while its chunk is reused is refused", "[inproc]") {
    std::vector<std::uint8_t> memory(250000, 0x5a);
    Config config(true, 0, 1u << 20);
    TracepointRecord& rec =
        config.add(1, 0x1000, {memory_action(address_of(memory.data()), 250000)});
    config.start();
    Block block;
    hit(rec, block);
    std::vector<trace::SharedFrame> found;
    frames_reader()->take_new(found);
    REQUIRE(found.size() == 1);
    std::vector<std::uint8_t> copy;
    CHECK(frames_reader()->copy(found[0], copy));
    CHECK(copy.size() == found[0].size);
    for (int i = 0; i < 8; ++i) // the first chunk comes round again
        hit(rec, block);
    CHECK_FALSE(frames_reader()->holds(found[0]));
    CHECK_FALSE(frames_reader()->copy(found[0], copy));
}

TEST_CASE("inproc: linear credit does not outlive its run", "[inproc]") {
    {
        Config config(false);
        TracepointRecord& small = config.add(1, 0x1000, {registers_action()});
        config.start();
        Block block;
        hit(small, block); // this thread claims budget credit it does not use up
        REQUIRE(drain().size() == 1);
    }
    // A new run with no room at all: nothing may be staged.
    Config config(false, 0);
    TracepointRecord& small = config.add(1, 0x1000, {registers_action()});
    config.start();
    Block block;
    hit(small, block);
    CHECK(drain().empty());
    CHECK(stop_reason() == StopReason::BufferFull);
}

TEST_CASE("inproc: hits are counted per thread and summed", "[inproc]") {
    Config config;
    TracepointRecord& rec = config.add(1, 0x1000, {registers_action()});
    config.add(2, 0x2000, {registers_action()});
    config.start();
    on_threads(3, [&](int) {
        Block block;
        for (int i = 0; i < 100; ++i)
            hit(rec, block);
    });
    const auto totals = shared().hit_totals(0);
    CHECK(totals.hits == 300);
    std::uint64_t bytes = 0;
    for (const Frame& f : drain())
        bytes += f.header.size - sizeof(RecordHeader);
    CHECK(totals.bytes == bytes);
    CHECK(shared().hit_totals(1).hits == 0);
    CHECK(header().slots_taken.load() == 3);
}

TEST_CASE("inproc: setv and getv update trace state variables in the shared", "[inproc]") {
    Config config;
    config.define_variable(1, 10);
    config.define_variable(3, 0, 2); // $trace_timestamp_ns
    // getv 1; const8 1; add; setv 1; pop; tracev 1; pop; tracev 3; end
    auto increment =
        program({0x2c, 0, 1, 0x22, 1, 0x02, 0x2d, 0, 1, 0x29, 0x2e, 0, 1, 0x29, 0x2e, 0, 3, 0x27});
    TracepointRecord& rec = config.add(1, 0x1000, {config.expression(increment)});
    config.start();
    Block block;
    for (int i = 0; i < 5; ++i)
        hit(rec, block);
    CHECK(Config::variable(1) == 15);
    auto frames = drain();
    REQUIRE(frames.size() == 5);
    std::int64_t last_clock = 0;
    for (std::size_t i = 0; i < frames.size(); ++i) {
        REQUIRE(frames[i].variables.size() == 2);
        CHECK(frames[i].variables[0] == std::pair<std::uint32_t, std::int64_t>{1, 11 + i});
        CHECK(frames[i].variables[1].first == 3);
        CHECK(frames[i].variables[1].second >= last_clock);
        CHECK(frames[i].variables[1].second > 0);
        last_clock = frames[i].variables[1].second;
    }
    CHECK(stop_reason() == StopReason::None);

    SECTION("setv on a variable that is not defined stops the trace") {
        // const8 7; setv 2; end
        TracepointRecord& bad =
            config.add(2, 0x2000, {config.expression(program({0x22, 7, 0x2d, 0, 2, 0x27}))});
        hit(bad, block);
        CHECK(stop_reason() == StopReason::Error);
        CHECK(header().stop_status == static_cast<std::uint64_t>(bytecode::EvalStatus::TsvError));
        CHECK(header().stop_address == 2);
        CHECK(header().stop_tracepoint == 2);
        CHECK(drain().empty());
    }
    SECTION("setv on the timestamp variable fails") {
        TracepointRecord& bad =
            config.add(2, 0x2000, {config.expression(program({0x22, 7, 0x2d, 0, 3, 0x27}))});
        hit(bad, block);
        CHECK(stop_reason() == StopReason::Error);
        CHECK(header().stop_address == 3);
    }
}

#if defined(__x86_64__)
#include <asm/prctl.h>
#include <sys/syscall.h>

TEST_CASE("inproc: the R block ends with the thread's fs_base and gs_base", "[inproc]") {
    std::uint64_t fs = 0, gs = 0;
    REQUIRE(syscall(SYS_arch_prctl, ARCH_GET_FS, &fs) == 0);
    REQUIRE(syscall(SYS_arch_prctl, ARCH_GET_GS, &gs) == 0);
    std::vector<std::uint8_t> expected(16);
    std::memcpy(expected.data(), &fs, 8);
    std::memcpy(expected.data() + 8, &gs, 8);
    const bool by_instruction = host().fast_block_tail().by_instruction;
    // Read by instruction where the kernel allows it, and by system call always (a new run
    // reads them again: the thread joins it).
    for (const std::uint32_t instruction : {0u, by_instruction ? 1u : 0u}) {
        Config config;
        REQUIRE(header().tail_register_bytes == 16);
        CHECK(header().tail_by_instruction == (by_instruction ? 1u : 0u));
        header().tail_by_instruction = instruction;
        TracepointRecord& rec = config.add(1, 0x1000, {registers_action()});
        Block block;
        const Frame f = hit_once(config, rec, &block);
        INFO("by instruction: " << instruction);
        CHECK(f.registers == block.completed(0x1000));
        CHECK(f.tail == expected);
    }
    // tpagent puts them where gdb's g block has them.
    const auto& layout = shared().short_register_block();
    CHECK(layout.prefix == core_bytes());
    CHECK(layout.tail_offset == reg("fs_base").g_offset);
    CHECK(layout.tail == 16);
    CHECK(reg("gs_base").g_offset == reg("fs_base").g_offset + 8);
}

TEST_CASE("inproc: the process's constant registers lead the tail", "[inproc]") {
    // (arm64's pointer-authentication masks; x86-64 has none, so set by hand here)
    std::uint64_t fs = 0;
    REQUIRE(syscall(SYS_arch_prctl, ARCH_GET_FS, &fs) == 0);
    Config config;
    REQUIRE(header().tail_register_bytes == 16);
    header().tail_constant_bytes = 16;
    header().tail_constants[0] = 0x007f000000000000;
    header().tail_constants[1] = 0x0123456789abcdef;
    header().tail_register_bytes = 32;
    TracepointRecord& rec = config.add(1, 0x1000, {registers_action()});
    Block block;
    const Frame f = hit_once(config, rec, &block);
    REQUIRE(f.tail.size() == 32);
    std::uint64_t words[3] = {};
    std::memcpy(words, f.tail.data(), 24);
    CHECK(words[0] == 0x007f000000000000);
    CHECK(words[1] == 0x0123456789abcdef);
    CHECK(words[2] == fs);
    // Sizes that make no sense (the header is the program's memory): no R block, rather than
    // one read past the constants or holding what an earlier run left. Each is a new run.
    for (const auto& [constants, tail] :
         {std::pair{24u, 40u}, std::pair{24u, 32u}, std::pair{0u, 32u}, std::pair{8u, 12u}}) {
        INFO(constants << " constant bytes of a " << tail << "-byte tail");
        header().tail_constant_bytes = constants;
        header().tail_register_bytes = tail;
        header().generation.fetch_add(1);
        const Frame none = hit_once(config, rec, &block);
        CHECK_FALSE(none.has_registers);
    }
}
#endif
