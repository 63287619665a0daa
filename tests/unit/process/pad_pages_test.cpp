#include "process/linux/pad_pages.hpp"
#include <catch2/catch.hpp>

using namespace tpagent::process;

namespace {
constexpr std::uint64_t kReach = 0x7fff0000;
constexpr std::uint64_t kCode = 0x400000;
} // namespace

TEST_CASE("PadPages hands out a run's page until it is full", "[pad]") {
    PadPages pages;
    CHECK_FALSE(pages.take(kCode, 64, kReach)); // nothing mapped yet
    pages.add(0x3ff000, 4096, 64);
    CHECK(pages.take(kCode, 0x100, kReach) == 0x3ff040);
    CHECK(pages.take(kCode, 0x100, kReach) == 0x3ff140);
    CHECK_FALSE(pages.take(kCode, 4096, kReach));        // no room left
    CHECK_FALSE(pages.take(0x7f0000000000, 16, kReach)); // out of reach
    CHECK(pages.contains(0x3ff000));
    CHECK(pages.contains(0x3fffff));
    CHECK_FALSE(pages.contains(0x400000));
    CHECK(pages.mapped_bytes() == 4096);
}

TEST_CASE("PadPages reuses a retired run's pages once they are freed", "[pad]") {
    PadPages pages;
    pages.add(0x3ff000, 4096, 0x200);
    pages.retire_current();
    CHECK(pages.any_retired());
    // Retired but not freed: never handed out again (a thread may still be in them).
    CHECK_FALSE(pages.take(kCode, 16, kReach));
    const auto run = pages.retired_run_at(0x3ff100);
    REQUIRE(run);
    CHECK_FALSE(pages.retired_run_at(0x400000));
    CHECK(pages.free_retired_except({}) == 1);
    CHECK_FALSE(pages.any_retired());
    // The next run starts again at the page's start.
    CHECK(pages.take(kCode, 0x100, kReach) == 0x3ff000);
    CHECK(pages.take(kCode, 0x100, kReach) == 0x3ff100);
}

TEST_CASE("PadPages keeps every page of a run that a thread may still reach", "[pad]") {
    PadPages pages;
    pages.add(0x3ff000, 4096, 0x100);
    pages.add(0x500000, 8192, 0x1100); // a second mapping of the same run, two pages long
    pages.retire_current();
    const auto first = *pages.retired_run_at(0x3ff080);
    CHECK(pages.retired_run_at(0x501000) == first);
    pages.add(0x3fe000, 4096, 0x100); // the next run maps its own
    pages.retire_current();
    const auto second = *pages.retired_run_at(0x3fe000);
    CHECK(second != first);
    // A word points into the first run's second mapping: both its mappings stay.
    CHECK(pages.free_retired_except({first}) == 1);
    CHECK(pages.retired_run_at(0x3ff000) == first);
    CHECK(pages.take(kCode, 0x100, kReach) == 0x3fe000);
    CHECK(pages.free_retired_except({}) == 2);
    // Too big for what is left of the current page: a free one, not a new mapping.
    CHECK(pages.take(kCode, 0x1000, kReach) == 0x3ff000);
}

TEST_CASE("PadPages retires nothing for a run that mapped nothing", "[pad]") {
    PadPages pages;
    pages.retire_current();
    pages.add(0x3ff000, 4096, 0x100);
    pages.retire_current();
    pages.retire_current(); // no page of its own: the same run number goes on
    pages.add(0x3fe000, 4096, 0x100);
    pages.retire_current();
    CHECK(pages.retired_run_at(0x3fe000) == *pages.retired_run_at(0x3ff000) + 1);
}

TEST_CASE("PadPages never frees a pinned run", "[pad]") {
    PadPages pages;
    pages.add(0x3ff000, 4096, 0x100);
    pages.pin(0x3ff010); // a jump to it could not be removed
    pages.retire_current();
    CHECK(pages.free_retired_except({}) == 0);
    CHECK_FALSE(pages.take(kCode, 16, kReach));
    pages.clear();
    CHECK(pages.empty());
}
