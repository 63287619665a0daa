#include "process/linux/linux_thread.hpp"
#include <catch2/catch.hpp>

using namespace tpagent::process;
using namespace tpagent::process::thread_activity;

TEST_CASE("a thread does one thing of tpagent's at a time", "[linux_thread]") {
    LinuxThread t;
    CHECK(t.is_doing<Plain>());
    t.activity = SteppingOverSite{0x1000, true};
    REQUIRE(t.doing<SteppingOverSite>() != nullptr);
    CHECK(t.doing<SteppingOverSite>()->resumes);
    CHECK_FALSE(t.is_doing<SteppingThroughPad>());
    t.end<SteppingThroughPad>(); // not what it does: nothing changes
    CHECK(t.is_doing<SteppingOverSite>());
    t.activity = SteppingFastJump{0x2000};
    CHECK_FALSE(t.is_doing<SteppingOverSite>()); // the new state replaced the old
    t.end<SteppingFastJump>();
    CHECK(t.is_doing<Plain>());
}

TEST_CASE("a thread owes one SIGSTOP at most", "[linux_thread]") {
    LinuxThread t;
    CHECK_FALSE(t.sigstop_on_way());
    t.owed_sigstop = OwedSigstop::First;
    CHECK(t.awaiting_first_stop());
    t.took_own_sigstop(); // only one tpagent sent is taken that way
    CHECK(t.awaiting_first_stop());
    t.owed_sigstop = OwedSigstop::Ours;
    CHECK(t.sigstop_on_way());
    t.took_own_sigstop();
    CHECK_FALSE(t.sigstop_on_way());
}
