// Bytecode that the real gdb produced for prog.c's expressions (tests/vectors/ax, made by
// generate.py), run against the memory and registers gdb saw at the probe line.
#include "ax_builder.hpp"
#include "ax_vectors.hpp"
#include "bytecode/disassembler.hpp"
#include <map>

using namespace tpagent::bytecode;
using namespace tpagent::bytecode::testing;

namespace {

bool inside_image(const FakeTarget& t, std::uint64_t addr, std::uint64_t len) {
    for (const auto& [start, bytes] : t.memory)
        if (addr >= start && addr + len <= start + bytes.size()) return true;
    return false;
}

} // namespace

TEST_CASE("gdb-generated vectors: validator, disassembler, interpreter and compiler") {
    const FakeTarget image = load_vector_image();
    REQUIRE(image.memory.size() == 2); // prog.c's data and the probe frame's stack
    const std::vector<Vector> vectors = load_vectors();
    REQUIRE(vectors.size() >= 100);
    unsigned with_value = 0;
    for (const Vector& v : vectors) {
        CAPTURE(v.expr);
        const Program p = must_validate(v.bytes);
        CHECK(disassemble(p) == v.gdb_disassembly);
        const Outcome o = run_all(v.bytes, image);
        INFO("status " << to_string(o.status) << " at offset " << o.fault_offset << " address 0x"
                       << std::hex << o.fault_address);
        REQUIRE(o.status == EvalStatus::Ok);
        if (v.kind == "cond" && v.expect) {
            const std::uint64_t mask = v.size >= 8 ? ~0ull : (1ull << (8 * v.size)) - 1;
            CHECK((o.value & mask) == (*v.expect & mask));
            ++with_value;
        }
        if (v.kind == "collect") {
            CHECK_FALSE((o.collected.empty() && o.collected_tsvs.empty()));
            for (const auto& [addr, len] : o.collected)
                CHECK(inside_image(image, addr, len));
        }
    }
    CHECK(with_value >= 90);
}

TEST_CASE("gdb-generated teval vectors assign trace state variables") {
    const FakeTarget image = load_vector_image();
    // $tv1 is variable 2 (initially 5), $tv2 is 3 (initially -3); x == a == 7.
    const std::map<std::string, std::pair<unsigned, std::int64_t>> want = {
        {"$tv2 = $tv2 + x", {3, 4}}, {"$tv1 = $tv1 * 3", {2, 15}}, {"$tv1 = a + 1", {2, 8}}};
    unsigned seen = 0;
    for (const Vector& v : load_vectors()) {
        auto it = want.find(v.expr);
        if (it == want.end()) continue;
        ++seen;
        CAPTURE(v.expr);
        const Outcome o = run_all(v.bytes, image);
        REQUIRE(o.status == EvalStatus::Ok);
        CHECK(o.tsvs.at(it->second.first) == it->second.second);
        CHECK(static_cast<std::int64_t>(o.value) == it->second.second);
    }
    CHECK(seen == want.size());
}
