// Where the trace files written by gdb (tests/data/tracefiles) are, and a loader.
#pragma once
#include "tools/tracefile/trace_file.hpp"
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace tracefile_test {

inline std::filesystem::path data_dir() {
    return std::filesystem::path(__FILE__).parent_path() / "../../data/tracefiles";
}

inline std::vector<std::uint8_t> file_bytes(const std::string& name) {
    std::ifstream in(data_dir() / name, std::ios::binary);
    REQUIRE(in);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A whole, undamaged file.
inline tpagent::tracefile::TraceFile load(const std::string& name) {
    auto file = tpagent::tracefile::read_trace_file((data_dir() / name).string());
    if (!file) FAIL(file.error().text);
    if (file->damage()) FAIL(file->damage()->text);
    return std::move(*file);
}

} // namespace tracefile_test
