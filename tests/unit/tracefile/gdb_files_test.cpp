// Files written by gdb 13.1's `tsave` from gdbserver 13.1, and one tpagent wrote itself
// (tests/data/tracefiles/make_tracefiles.sh). Expected values were read back from the same
// files with gdb's own `target tfile`.
#include "trace/tracepoint_codec.hpp"
#include "tests/unit/tracefile/test_files.hpp"

#include <cstdlib>
#include <set>

using namespace tpagent;
using namespace tpagent::tracefile;
using tracefile_test::load;

namespace {

std::int64_t read_le(const Frame& frame, std::uint64_t address, std::size_t size) {
    std::vector<std::uint8_t> out(size);
    trace::FrameView view(frame.bytes, 0x9c4);
    REQUIRE(view.read_memory(address, out) == size);
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < size; ++i)
        v |= static_cast<std::uint64_t>(out[i]) << (8 * i);
    return static_cast<std::int64_t>(v);
}

std::uint64_t reg(const TraceFile& file, const Frame& frame, std::string_view name) {
    REQUIRE(file.register_layout());
    const RegisterInfo* info = file.register_layout()->find(name);
    REQUIRE(info);
    auto block = frame.registers();
    REQUIRE(block);
    auto value = register_value(*info, *block);
    REQUIRE(value);
    return *value;
}

constexpr std::uint64_t kWork = 0x555555555144;
constexpr std::uint64_t kGlob = 0x555555558040;
constexpr std::uint64_t kCounters = 0x555555558060;

} // namespace

TEST_CASE("basic.tf: text section") {
    TraceFile file = load("basic.tf");
    CHECK(file.register_block_size() == 0x9c4);

    REQUIRE(file.status());
    const TraceStatus& status = *file.status();
    CHECK_FALSE(status.running);
    CHECK(status.stop_reason == "tstop");
    CHECK(status.stop_text.empty());
    CHECK(status.frames == 5);
    CHECK(status.created == 5);
    CHECK(status.size == 0x500000);
    CHECK(status.free == 0x4fcc84);
    REQUIRE(status.start_time);
    REQUIRE(status.stop_time);
    CHECK(*status.stop_time - *status.start_time == 1722); // gdb: "stopped 0.001722 secs later"

    REQUIRE(file.variables().size() == 2);
    CHECK(file.variables()[0].name == "trace_timestamp");
    CHECK(file.variables()[0].builtin);
    CHECK(file.variables()[1].number == 2);
    CHECK(file.variables()[1].name == "calls");
    CHECK_FALSE(file.variables()[1].builtin);
    CHECK(file.timestamp_variable() == 1u);

    REQUIRE(file.tracepoints().size() == 1);
    const trace::Tracepoint& tp = file.tracepoints()[0];
    CHECK(tp.definition.key.number == 3);
    CHECK(tp.definition.key.address == kWork);
    CHECK(tp.definition.enabled);
    CHECK(tp.definition.kind == trace::TracepointKind::Trap);
    REQUIRE(tp.definition.actions.size() == 8);
    CHECK(trace::format_action_string(tp.definition.actions[0]) ==
          "R07ffffffffffffffffffffffffffffffffffffff");
    CHECK(trace::format_action_string(tp.definition.actions[1]) == "M-1,555555558040,4");
    CHECK(tp.definition.stepping_actions.empty());
    REQUIRE(tp.sources.size() == 4);
    CHECK(tp.sources[0].type == "at");
    CHECK(tp.sources[0].text == "work");
    CHECK(tp.sources[1].text ==
          "collect $regs, step, *slot, glob, counters[1]@3, $trace_timestamp");
    CHECK(tp.sources[2].text == "teval $calls = $calls + 1");
    CHECK(tp.sources[3].text == "collect $calls");
    CHECK(tp.counters.hits == 5);
    CHECK(tp.counters.bytes_used == 0x13150);

    REQUIRE(file.register_layout());
    const RegisterLayout& layout = *file.register_layout();
    CHECK(layout.architecture == "i386:x86-64");
    CHECK(layout.registers.size() == 155);
    CHECK(layout.block_size() == 0x9c4);
    REQUIRE(layout.pc());
    CHECK(layout.pc()->name == "rip");
    CHECK(layout.pc()->offset == 16 * 8);
    CHECK(file.target_description().find("<reg name=\"pkru\"") != std::string::npos);
}

TEST_CASE("basic.tf: frames hold what gdb shows for them") {
    TraceFile file = load("basic.tf");
    REQUIRE(file.frames().size() == 5);
    std::int64_t last_timestamp = 0;
    for (const Frame& frame : file.frames()) {
        INFO("frame " << frame.number);
        CHECK(frame.tracepoint == 3);
        CHECK(file.frame_pc(frame) == kWork);
        CHECK(reg(file, frame, "rip") == kWork);
        auto step = static_cast<std::int64_t>(frame.number);
        CHECK(reg(file, frame, "rdi") == static_cast<std::uint64_t>(step)); // first argument
        CHECK(reg(file, frame, "rsi") == kCounters + 8 * frame.number);     // slot
        CHECK(frame.variable(2) == step + 1);                               // $calls
        auto timestamp = frame.variable(1);
        REQUIRE(timestamp);
        CHECK(*timestamp > last_timestamp);
        last_timestamp = *timestamp;
        CHECK(read_le(frame, kCounters + 8 * frame.number, 8) == 10 + step); // *slot
    }
    const Frame& f0 = file.frames()[0];
    CHECK(f0.offset == file.frame_section_offset());
    CHECK(reg(file, f0, "rsp") == 0x7fffffffe620);
    CHECK(f0.variable(1) == 3446107777);
    CHECK(read_le(f0, kGlob, 4) == 100);
    CHECK(read_le(f0, kCounters + 8, 8) == 11);
    CHECK(read_le(f0, kCounters + 16, 8) == 12);
    CHECK(read_le(f0, kCounters + 24, 8) == 13);

    const Frame& f3 = file.frames()[3];
    CHECK(f3.variable(1) == 3446108117);
    CHECK(read_le(f3, kGlob, 4) == 103);
    CHECK(read_le(f3, kCounters + 8, 8) == 13);
    CHECK(read_le(f3, kCounters + 16, 8) == 16);
    CHECK(read_le(f3, kCounters + 24, 8) == 13);
    // The frames tile the section and the 4-byte end marker follows the last.
    const Frame& last = file.frames().back();
    CHECK(last.offset + last.bytes.size() + 4 == file.file_size());
}

TEST_CASE("stepping.tf: condition, while-stepping, pass count, disabled tracepoint") {
    TraceFile file = load("stepping.tf");
    REQUIRE(file.status());
    CHECK(file.status()->stop_reason == "tpasscount");
    CHECK(file.status()->stop_tracepoint == 5u);
    CHECK(file.status()->frames == 14);
    CHECK(file.frames().size() == 14);

    REQUIRE(file.tracepoints().size() == 3);
    const trace::Tracepoint* work = file.find_tracepoint(3);
    const trace::Tracepoint* finish = file.find_tracepoint(4);
    const trace::Tracepoint* line19 = file.find_tracepoint(5);
    REQUIRE(work);
    REQUIRE(finish);
    REQUIRE(line19);
    CHECK(work->definition.step_count == 2);
    CHECK(work->definition.condition);
    CHECK(work->definition.stepping_actions.size() == 2);
    CHECK(trace::format_action_string(work->definition.stepping_actions[1]) ==
          "M-1,555555558040,4");
    REQUIRE(work->sources.size() == 7);
    CHECK(work->sources[1].type == "cond");
    CHECK(work->sources[1].text == "step % 2 == 0");
    CHECK(work->sources[4].text == "while-stepping 2");
    CHECK(work->sources[5].text == "collect $rip, glob");
    CHECK(work->sources[6].text == "end");
    CHECK_FALSE(finish->definition.enabled);
    CHECK(finish->definition.actions.empty());
    CHECK(line19->definition.pass_count == 4);
    CHECK(line19->sources[0].text == "traced.c:19");
    CHECK(line19->counters.hits == 4);

    std::size_t hits[6] = {};
    for (const Frame& frame : file.frames()) {
        REQUIRE(frame.tracepoint < 6);
        ++hits[frame.tracepoint];
    }
    CHECK(hits[4] == 0);
    CHECK(hits[5] == 4);
    CHECK(hits[3] == 10); // 2 hits (step 0 and 2), each with its steps
    // Only registers 6 (rbp, for the locals) and 16 (rip, while stepping) were asked for,
    // but a frame's R block always holds every register.
    for (const Frame& frame : file.frames())
        if (frame.tracepoint == 3) CHECK(frame.registers());
}

TEST_CASE("empty.tf: no frames, just the end marker") {
    TraceFile file = load("empty.tf");
    CHECK(file.frames().empty());
    CHECK(file.frame_section_offset() + 4 == file.file_size());
    REQUIRE(file.tracepoints().size() == 1);
    CHECK(file.tracepoints()[0].counters.hits == 0);
    REQUIRE(file.status());
    CHECK(file.status()->frames == 0);
}

TEST_CASE("fast.tf: gdb writes a fast tracepoint's length as F0") {
    TraceFile file = load("fast.tf");
    REQUIRE(file.tracepoints().size() == 1);
    const trace::TracepointDefinition& def = file.tracepoints()[0].definition;
    CHECK(def.key == trace::TracepointKey{3, 0x401135});
    CHECK(def.kind == trace::TracepointKind::Fast);
    CHECK(def.fast_insn_length == 0); // gdb does not keep it
    CHECK(def.actions.size() == 5);
    REQUIRE(file.frames().size() == 5);
    for (const Frame& frame : file.frames()) {
        INFO("frame " << frame.number);
        CHECK(file.frame_pc(frame) == 0x401135);
        CHECK(reg(file, frame, "rdi") == frame.number); // step
    }
}

TEST_CASE("threads.tf: tpagent's own file, two threads, both clocks") {
    TraceFile file = load("threads.tf");
    REQUIRE(file.variables().size() == 2);
    const TraceVariable* nanosecond_clock = file.find_variable(2);
    REQUIRE(nanosecond_clock);
    CHECK(nanosecond_clock->name == "trace_timestamp_ns");
    CHECK(file.timestamp_variable() == 1u);
    REQUIRE(file.frames().size() == 6);
    std::set<std::uint64_t> threads;
    for (const Frame& frame : file.frames()) {
        INFO("frame " << frame.number);
        auto us = frame.variable(1);
        auto nanos = frame.variable(2);
        REQUIRE(us);
        REQUIRE(nanos);
        CHECK(*us > *nanos / 1000); // the epoch is older than the monotonic clock's origin
        threads.insert(reg(file, frame, "fs_base"));
    }
    CHECK(threads.size() == 2);
    const Frame& first = file.frames().front();
    const Frame& last = file.frames().back();
    // Read together: the two clocks agree on how long the run took, within a few µs.
    std::int64_t span_us = *last.variable(1) - *first.variable(1);
    std::int64_t span_ns = *last.variable(2) - *first.variable(2);
    CHECK(std::abs(span_us - span_ns / 1000) < 20);
}
