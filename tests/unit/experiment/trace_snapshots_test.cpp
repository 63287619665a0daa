// Snapshots (experiment/trace_snapshots.hpp): the frames a buffer holds now into a new file,
// whole, numbered after the folder's earlier ones, its status counting them; the newest kept;
// none written under the floor of free space.
#include "trace_file_frames.hpp"
#include "experiment/trace_experiment.hpp"
#include "experiment/trace_snapshots.hpp"
#include "arch/arch.hpp"
#include <catch2/catch.hpp>
#include <filesystem>

using namespace tpagent;
using namespace tpagent::test;
namespace fs = std::filesystem;

TEST_CASE("snapshots: the buffer's frames, oldest first, into a whole file each", "[snapshots]") {
    Scratch scratch;
    experiment::TraceExperiment e(arch::host_architecture());
    REQUIRE(e.set_buffer(trace::BufferSetting{trace::BufferSizeSetting{16u << 10}}));
    e.buffer().set_circular(true);
    // 40 frames of about 1 KiB through 16 KiB: the buffer keeps the newest.
    for (int i = 0; i < 40; ++i)
        commit(e, 1, 1000, static_cast<std::uint8_t>(i));
    // An earlier run's snapshot in the folder: numbering goes on after it.
    { std::ofstream(scratch.dir / "snapshot-000004.tf") << "x"; }
    experiment::TraceSnapshots snapshots({scratch.dir.string(), 2, 0});
    auto first = snapshots.take(e, "<target/>", "test");
    REQUIRE(first);
    CHECK(first->path == (scratch.dir / "snapshot-000005.tf").string());
    CHECK(first->gone == 0);
    CHECK(first->frames == e.buffer().frame_count());
    const FileFrames f = frames_of(first->path);
    CHECK(f.ended);
    CHECK(f.count == first->frames);
    REQUIRE(!f.fills.empty());
    CHECK(f.fills.back() == 39);
    for (std::size_t i = 1; i < f.fills.size(); ++i)
        CHECK(f.fills[i] == f.fills[i - 1] + 1);
    CHECK(status_field(f.status, "tframes") == static_cast<long long>(f.count));
    CHECK(status_field(f.status, "tcreated") == 40);
    // The buffer is as it was: nothing taken, nothing marked.
    CHECK(e.buffer().frame_count() == first->frames);

    // Two kept: the third removes the first (the earlier run's file is not this one's).
    commit(e, 1, 1000, 40);
    REQUIRE(snapshots.take(e, "<target/>", "test"));
    auto third = snapshots.take(e, "<target/>", "test");
    REQUIRE(third);
    CHECK(third->path == (scratch.dir / "snapshot-000007.tf").string());
    CHECK(!fs::exists(first->path));
    CHECK(fs::exists(scratch.dir / "snapshot-000004.tf"));
    CHECK(snapshots.written() == 3);
    CHECK(snapshots.removed() == 1);
    CHECK(frames_of(third->path).fills.back() == 40);
}

TEST_CASE("snapshots: none under the floor of free space", "[snapshots]") {
    Scratch scratch;
    experiment::TraceExperiment e(arch::host_architecture());
    commit(e, 1, 100, 1);
    experiment::TraceSnapshots snapshots({scratch.dir.string(), 0, ~0ull >> 1});
    auto taken = snapshots.take(e, "<target/>", "test");
    REQUIRE(!taken);
    CHECK(taken.error().text.find("under the floor") != std::string::npos);
    CHECK(fs::is_empty(scratch.dir));
    CHECK(snapshots.written() == 0);
}
