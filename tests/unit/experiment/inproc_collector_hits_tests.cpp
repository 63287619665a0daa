// Which hits collect: conditions (interpreted and compiled), pass counts, tracing off or a
// disabled record, a hit nested in a hit; and what hits count and set (hit totals, trace
// state variables).
#include "tests/unit/experiment/inproc_collector_fixture.hpp"

using namespace tpagent::inproc_collector_fixture;

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

// (The test's name keeps "region", the shared buffer's earlier name: its id.)
TEST_CASE("inproc: setv and getv update trace state variables in the region", "[inproc]") {
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
