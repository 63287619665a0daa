// The flight recorder's files (experiment/trace_recorder.hpp), written from a trace buffer
// frames are committed to: each file whole (text section, frames, end marker), rotated at its
// size, the oldest removed past keep_files, each one's status saying which frames it holds,
// every frame either in a file or counted (lost, unwritten), and a file cut short sealed.
#include "trace_file_frames.hpp"
#include "experiment/trace_experiment.hpp"
#include "experiment/trace_recorder.hpp"
#include "trace/trace_file_seal.hpp"
#include "arch/arch.hpp"
#include <catch2/catch.hpp>
#include <csignal>
#include <sys/resource.h>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

using namespace tpagent;
namespace fs = std::filesystem;
using namespace tpagent::test;

TEST_CASE("recorder: frames go into files rotated at their size, the newest kept", "[recorder]") {
    Scratch scratch;
    experiment::TraceExperiment e(arch::host_architecture());
    experiment::TraceRecorder recorder({scratch.dir.string(), 16u << 10, 3, 0});
    recorder.start(e, "<target/>");
    // 40 frames of about 1 KiB: about 15 a file of 16 KiB, so 3 files at least; 3 kept.
    for (int i = 0; i < 40; ++i) {
        commit(e, 1, 1000, static_cast<std::uint8_t>(i));
        if (i % 7 == 0) recorder.poll(e);
    }
    recorder.finish(e);
    CHECK(recorder.refusal().empty());
    const auto& t = recorder.totals();
    CHECK(t.frames == 40);
    CHECK(t.lost == 0);
    CHECK(t.files >= 3);
    CHECK(recorder.files().size() == 3);
    CHECK(t.files_removed == t.files - 3);
    std::size_t kept = 0;
    std::vector<std::uint8_t> fills;
    for (const std::string& path : recorder.files()) {
        INFO(path);
        CHECK(fs::file_size(path) <= (16u << 10));
        const FileFrames f = frames_of(path);
        CHECK(f.ended);
        CHECK(f.count > 0);
        // Its status, restated at its end: its frames, the run's index of the first.
        CHECK(f.status.size() == 960);
        CHECK(status_field(f.status, "tframes") == static_cast<long long>(f.count));
        CHECK(status_field(f.status, "rfirst") == static_cast<long long>(f.fills.front()));
        CHECK(status_field(f.status, "rlost") == 0);
        kept += f.count;
        fills.insert(fills.end(), f.fills.begin(), f.fills.end());
    }
    // The newest files hold the newest frames, in collection order, the last one last.
    REQUIRE(!fills.empty());
    CHECK(fills.back() == 39);
    for (std::size_t i = 1; i < fills.size(); ++i)
        CHECK(fills[i] == fills[i - 1] + 1);
    CHECK(kept == fills.size());
}

TEST_CASE("recorder: frames a circular buffer reused before a poll are counted lost",
          "[recorder]") {
    Scratch scratch;
    experiment::TraceExperiment e(arch::host_architecture());
    REQUIRE(e.set_buffer(trace::BufferSetting{trace::BufferSizeSetting{8u << 10}}));
    REQUIRE(e.set_buffer(trace::BufferSetting{trace::BufferCircularSetting{true}}));
    experiment::TraceRecorder recorder({scratch.dir.string(), 1u << 20, 0, 0});
    recorder.start(e, "<target/>");
    for (int i = 0; i < 30; ++i) // 30 KiB through an 8 KiB buffer, no poll meanwhile
        commit(e, 1, 1000, static_cast<std::uint8_t>(i));
    recorder.finish(e);
    CHECK(recorder.refusal().empty());
    const auto& t = recorder.totals();
    CHECK(t.frames + t.lost == 30);
    CHECK(t.lost > 0);
    const FileFrames f = frames_of(recorder.files().front());
    CHECK(f.ended);
    CHECK(f.count == t.frames);
    CHECK(f.fills.back() == 29);
}

TEST_CASE("recorder: a new recording into the same folder goes on after its files", "[recorder]") {
    Scratch scratch;
    experiment::TraceExperiment e(arch::host_architecture());
    {
        experiment::TraceRecorder first({scratch.dir.string(), 1u << 20, 0, 0});
        first.start(e, "<target/>");
        first.finish(e);
    }
    experiment::TraceRecorder second({scratch.dir.string(), 1u << 20, 0, 0});
    second.start(e, "<target/>");
    second.finish(e);
    CHECK(fs::path(second.files().front()).filename() == "trace-000002.tf");
    CHECK(fs::exists(scratch.dir / "trace-000001.tf"));
}

TEST_CASE("recorder: a file cut short is sealed after its last whole frame, its status restated",
          "[recorder]") {
    Scratch scratch;
    experiment::TraceExperiment e(arch::host_architecture());
    experiment::TraceRecorder recorder({scratch.dir.string(), 1u << 20, 0, 0});
    recorder.start(e, "<target/>");
    for (int i = 0; i < 10; ++i)
        commit(e, 1, 1000, static_cast<std::uint8_t>(i));
    recorder.poll(e); // written, the file not ended: as tpagent killed here leaves it
    const std::string path = recorder.files().front();
    const auto whole = fs::file_size(path);
    fs::resize_file(path, whole - 300); // and the last frame cut
    auto report = trace::seal_trace_file(path);
    REQUIRE(report);
    CHECK_FALSE(report->was_sealed);
    CHECK(report->frames == 9);
    // The tenth frame, 300 bytes short, removed; the end marker (4 bytes) in its place.
    CHECK(report->cut_bytes > 0);
    CHECK(report->cut_bytes < 1100);
    CHECK(fs::file_size(path) == whole - 300 - report->cut_bytes + 4);
    const FileFrames f = frames_of(path);
    CHECK(f.ended);
    CHECK(f.count == 9);
    CHECK(f.fills.back() == 8);
    CHECK(f.status.size() == 960);
    CHECK(status_field(f.status, "tframes") == 9);
    // Sealed once: a second time leaves it as it is.
    auto again = trace::seal_trace_file(path);
    REQUIRE(again);
    CHECK(again->was_sealed);
    CHECK(again->frames == 9);
    // Not a trace file: refused, not changed.
    const auto other = scratch.dir / "other";
    std::ofstream(other) << "hello";
    CHECK_FALSE(trace::seal_trace_file(other.string()));
    CHECK(fs::file_size(other) == 5);
}

TEST_CASE("recorder: frames a disk refuses are counted, the files keep whole frames",
          "[recorder]") {
    Scratch scratch;
    experiment::TraceExperiment e(arch::host_architecture());
    SECTION("free space under the floor: nothing written, everything counted") {
        experiment::TraceRecorder recorder({scratch.dir.string(), 1u << 20, 0, ~0ull >> 1});
        recorder.start(e, "<target/>");
        for (int i = 0; i < 20; ++i)
            commit(e, 1, 1000, static_cast<std::uint8_t>(i));
        recorder.poll(e);
        recorder.finish(e);
        CHECK(recorder.totals().frames == 0);
        CHECK(recorder.totals().unwritten == 20);
        CHECK(recorder.refusal().find("under the floor") != std::string::npos);
        CHECK(recorder.files().empty());
    }
    SECTION("the file size limit reached mid-frame (as a full disk): cut back, counted") {
        // RLIMIT_FSIZE: a write past 24 KiB fails (EFBIG, SIGXFSZ ignored), as ENOSPC would.
        struct rlimit old {};
        REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
        const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
        struct rlimit limit = old;
        limit.rlim_cur = 24u << 10;
        REQUIRE(setrlimit(RLIMIT_FSIZE, &limit) == 0);
        experiment::TraceRecorder recorder({scratch.dir.string(), 1u << 20, 0, 0});
        recorder.start(e, "<target/>");
        for (int i = 0; i < 40; ++i) {
            commit(e, 1, 1000, static_cast<std::uint8_t>(i));
            recorder.poll(e);
        }
        recorder.finish(e);
        setrlimit(RLIMIT_FSIZE, &old);
        std::signal(SIGXFSZ, old_handler);
        const auto& t = recorder.totals();
        CHECK(t.frames > 0);
        CHECK(t.unwritten > 0);
        CHECK(t.frames + t.unwritten + t.lost == 40);
        CHECK(recorder.refusal().find("cannot write") != std::string::npos);
        std::size_t in_files = 0;
        for (const std::string& path : recorder.files()) {
            INFO(path);
            const FileFrames f = frames_of(path);
            CHECK(f.ended);
            CHECK(status_field(f.status, "tframes") == static_cast<long long>(f.count));
            in_files += f.count;
        }
        CHECK(in_files == t.frames);
    }
}

TEST_CASE("recorder: a file written long enough ends, if it holds a frame", "[recorder]") {
    Scratch scratch;
    experiment::TraceExperiment e(arch::host_architecture());
    experiment::TraceRecorder recorder(
        {scratch.dir.string(), 1u << 20, 0, 0, std::chrono::seconds(1)});
    recorder.start(e, "<target/>");
    commit(e, 1, 100, 1);
    recorder.poll(e);
    recorder.poll(e); // not a second yet: the same file
    CHECK(recorder.files().size() == 1);
    usleep(1100 * 1000);
    recorder.poll(e); // a second on: ended; the next one begun
    CHECK(recorder.files().size() == 2);
    usleep(1100 * 1000);
    recorder.poll(e); // the new one holds no frame: it stays
    CHECK(recorder.files().size() == 2);
    commit(e, 1, 100, 2);
    recorder.finish(e);
    REQUIRE(recorder.files().size() == 2);
    CHECK(frames_of(recorder.files()[0]).fills == std::vector<std::uint8_t>{1});
    CHECK(frames_of(recorder.files()[1]).fills == std::vector<std::uint8_t>{2});
}
