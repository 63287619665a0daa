// Trace files written on the target, as the unit tests of experiment/ read them back: a
// scratch folder, frames committed to an experiment's buffer, and a file's frames and status.
#pragma once
#include "experiment/trace_experiment.hpp"
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

namespace tpagent::test {

struct Scratch {
    std::filesystem::path dir;
    Scratch() {
        char name[] = "/tmp/tpagent-recorder-XXXXXX";
        dir = mkdtemp(name);
    }
    ~Scratch() { std::filesystem::remove_all(dir); }
};

// Commits a frame of tracepoint `tp` with one memory block of `bytes` bytes.
inline void commit(experiment::TraceExperiment& e, std::uint16_t tp, std::size_t bytes,
                   std::uint8_t fill) {
    auto frame = e.buffer().make_builder();
    frame.start(tp);
    const std::vector<std::uint8_t> memory(bytes, fill);
    frame.add_memory(0x1000, memory);
    REQUIRE(e.buffer().commit(frame, 0x400000) == trace::CommitResult::Stored);
}

struct FileFrames {
    std::size_t count = 0;
    std::string status; // the status line's payload
    bool ended = false; // the end marker after the last whole frame, and nothing after it
    std::vector<std::uint8_t> fills;
};

// The frames of a recorded file: after the text section (its blank line), tracepoint number
// (2 bytes), size (4), that many bytes; number 0 ends them.
inline FileFrames frames_of(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<std::uint8_t> b{std::istreambuf_iterator<char>(in), {}};
    const std::string_view text(reinterpret_cast<const char*>(b.data()), b.size());
    FileFrames f;
    REQUIRE(text.starts_with("\x7fTRACE0\n"));
    std::size_t at = text.find("\n\n");
    REQUIRE(at != std::string_view::npos);
    const auto status_at = text.find("\nstatus ");
    REQUIRE(status_at < at);
    f.status =
        std::string(text.substr(status_at + 8, text.find('\n', status_at + 8) - status_at - 8));
    at += 2;
    while (at + 2 <= b.size()) {
        std::uint16_t tp = 0;
        std::memcpy(&tp, b.data() + at, 2);
        if (tp == 0) {
            f.ended = at + 4 == b.size();
            break;
        }
        std::uint32_t size = 0;
        REQUIRE(at + 6 <= b.size());
        std::memcpy(&size, b.data() + at + 2, 4);
        REQUIRE(at + 6 + size <= b.size());
        f.fills.push_back(b[at + 6 + size - 1]); // the memory block's last byte
        at += 6 + size;
        ++f.count;
    }
    return f;
}

// The value of status field `name` (hex), or -1.
inline long long status_field(const std::string& status, const std::string& name) {
    const auto at = status.find(";" + name + ":");
    if (at == std::string::npos) return -1;
    return std::stoll(status.substr(at + name.size() + 2), nullptr, 16);
}

} // namespace tpagent::test
