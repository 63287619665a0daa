// gdb's agent-expression vectors (tests/vectors/ax, made by generate.py): the bytecode gdb
// produced for prog.c's expressions, and the memory and registers gdb saw at the probe line.
#pragma once
#include "fake_target.hpp"
#include <catch2/catch.hpp>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#ifndef TPAGENT_AX_VECTORS
#error "TPAGENT_AX_VECTORS must name tests/vectors/ax (tests/CMakeLists.txt)"
#endif

namespace tpagent::bytecode::testing {

struct Vector {
    std::string expr, kind;
    std::vector<std::uint8_t> bytes;
    unsigned size = 0;
    std::optional<std::uint64_t> expect;
    std::string gdb_disassembly;
};

inline std::vector<std::uint8_t> from_hex(const std::string& hex) {
    std::vector<std::uint8_t> out;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<std::uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
    return out;
}

inline std::ifstream open_vector_file(const std::string& name) {
    std::ifstream in(std::string(TPAGENT_AX_VECTORS) + "/" + name);
    REQUIRE(in.good());
    return in;
}

inline FakeTarget load_vector_image() {
    FakeTarget t;
    auto in = open_vector_file("image.txt");
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

inline std::vector<Vector> load_vectors() {
    std::vector<Vector> out;
    auto in = open_vector_file("vectors.txt");
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

} // namespace tpagent::bytecode::testing
