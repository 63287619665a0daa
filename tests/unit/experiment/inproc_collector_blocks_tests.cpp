// What a hit's record holds: its R block (with the saved state and the thread-pointer tail),
// its M blocks (long, unreadable or listed ranges) and what expressions collect.
#include "tests/unit/experiment/inproc_collector_fixture.hpp"

using namespace tpagent::inproc_collector_fixture;

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
    // A borrowed thread pointer (arm64 Go pads): its value at tstart is the third constant,
    // and no register is read.
    header().tail_constant_bytes = 24;
    header().tail_constants[2] = 0;
    header().tail_register_bytes = 24;
    header().generation.fetch_add(1);
    const Frame borrowed = hit_once(config, rec, &block);
    REQUIRE(borrowed.tail.size() == 24);
    std::memcpy(words, borrowed.tail.data(), 24);
    CHECK(words[0] == 0x007f000000000000);
    CHECK(words[2] == 0);
    // Sizes that make no sense (the header is the program's memory): no R block, rather than
    // one read past the constants or holding what an earlier run left. Each is a new run.
    for (const auto& [constants, tail] :
         {std::pair{24u, 48u}, std::pair{32u, 32u}, std::pair{0u, 32u}, std::pair{8u, 12u},
          std::pair{24u, 40u}}) {
        INFO(constants << " constant bytes of a " << tail << "-byte tail");
        header().tail_constant_bytes = constants;
        header().tail_register_bytes = tail;
        header().generation.fetch_add(1);
        const Frame none = hit_once(config, rec, &block);
        CHECK_FALSE(none.has_registers);
    }
}
#endif
