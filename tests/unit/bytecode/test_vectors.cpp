// Bytecode that the real gdb produced for prog.c's expressions (tests/vectors/ax, made by
// generate.py), run against the memory and registers gdb saw at the probe line.
#include "ax_builder.hpp"
#include "bytecode/disassembler.hpp"
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

using namespace tpagent::bytecode;
using namespace tpagent::bytecode::testing;

namespace {

struct Vector {
    std::string expr, kind;
    std::vector<std::uint8_t> bytes;
    unsigned size = 0;
    std::optional<std::uint64_t> expect;
    std::string gdb_disassembly;
};

std::vector<std::uint8_t> from_hex(const std::string& hex) {
    std::vector<std::uint8_t> out;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<std::uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
    return out;
}

std::ifstream open(const std::string& name) {
    std::ifstream in(std::string(TPAGENT_AX_VECTORS) + "/" + name);
    REQUIRE(in.good());
    return in;
}

FakeTarget load_image() {
    FakeTarget t;
    auto in = open("image.txt");
    std::string line;
    std::uint64_t run_start = 0;
    std::vector<std::uint8_t>* run = nullptr;
    while (std::getline(in, line)) {
        std::istringstream s(line);
        std::string tag, a, b;
        s >> tag >> a >> b;
        if (tag == "reg") {
            t.registers[std::stoul(a)] = std::stoull(b, nullptr, 16);
        } else if (tag == "tsv") {
            t.tsvs[std::stoul(a)] = std::stoll(b);
        } else if (tag == "mem") {
            const std::uint64_t addr = std::stoull(a, nullptr, 16);
            const auto bytes = from_hex(b);
            if (run && run_start + run->size() == addr) {
                run->insert(run->end(), bytes.begin(), bytes.end());
            } else {
                t.memory[addr] = bytes;
                run_start = addr;
                run = &t.memory[addr];
            }
        }
    }
    return t;
}

std::vector<Vector> load_vectors() {
    std::vector<Vector> out;
    auto in = open("vectors.txt");
    std::string line;
    while (std::getline(in, line) && !line.empty()) {
    } // the header comment ends at the first blank line
    while (std::getline(in, line)) {
        if (line.rfind("# ", 0) == 0) {
            out.emplace_back();
            out.back().expr = line.substr(2);
        } else if (!out.empty()) {
            Vector& v = out.back();
            if (line.rfind("kind ", 0) == 0)
                v.kind = line.substr(5);
            else if (line.rfind("bytes ", 0) == 0)
                v.bytes = from_hex(line.substr(6));
            else if (line.rfind("size ", 0) == 0)
                v.size = static_cast<unsigned>(std::stoul(line.substr(5)));
            else if (line.rfind("expect ", 0) == 0)
                v.expect = std::stoull(line.substr(7), nullptr, 16);
            else if (line.rfind("gdb ", 0) == 0)
                v.gdb_disassembly += line.substr(4) + "\n";
        }
    }
    return out;
}

bool inside_image(const FakeTarget& t, std::uint64_t addr, std::uint64_t len) {
    for (const auto& [start, bytes] : t.memory)
        if (addr >= start && addr + len <= start + bytes.size()) return true;
    return false;
}

} // namespace

TEST_CASE("gdb-generated vectors: validator, disassembler, interpreter and compiler") {
    const FakeTarget image = load_image();
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
    const FakeTarget image = load_image();
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
