#include "process/linux/wait_router.hpp"
#include <catch2/catch.hpp>
#include <cerrno>
#include <set>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace tpagent::process;

namespace {
// A process of the test's, owning the children it was given.
struct TestOwner final : WaitRouter::Owner {
    pid_t pid = 0;
    std::set<pid_t> children;
    pid_t owner_pid() const override { return pid; }
    bool owns(pid_t tid) const override { return children.count(tid) != 0; }
};

pid_t child_exiting_with(int code, unsigned delay_us) {
    const pid_t child = fork();
    if (child == 0) {
        usleep(delay_us);
        _exit(code);
    }
    return child;
}
} // namespace

TEST_CASE("wait router: a status another process's wait took is kept for its owner",
          "[wait_router]") {
    TestOwner first, second;
    first.pid = 1;
    second.pid = 2;
    // The second's child ends first: the first's blocking wait takes its status on the way.
    const pid_t late = child_exiting_with(7, 50000);
    const pid_t early = child_exiting_with(9, 0);
    first.children.insert(late);
    second.children.insert(early);
    auto& router = WaitRouter::instance();
    router.enlist(first);
    router.enlist(second);

    WaitStatus status;
    pid_t got = 0;
    while ((got = router.wait(first, status, __WALL)) < 0 && errno == EINTR) {
    }
    CHECK(got == late);
    CHECK(status.exit_code() == 7);
    CHECK(router.holds(second));
    CHECK_FALSE(router.holds(first));

    // The kept one comes first, without a wait; then nothing is left (WNOHANG).
    CHECK(router.wait(second, status, __WALL | WNOHANG) == early);
    CHECK(status.exit_code() == 9);
    CHECK_FALSE(router.holds(second));

    // A process that leaves loses what was kept for it.
    const pid_t third_child = child_exiting_with(3, 0);
    second.children.insert(third_child);
    while ((got = router.wait(first, status, __WALL)) < 0 && errno == EINTR) {
    }
    CHECK(got == -1); // (ECHILD: the only child's status went to the second)
    CHECK(router.holds(second));
    router.leave(second);
    CHECK_FALSE(router.holds(second));
    router.leave(first);
}

TEST_CASE("wait router: with one process, every status is its own", "[wait_router]") {
    TestOwner only;
    only.pid = 1;
    const pid_t child = child_exiting_with(4, 0);
    auto& router = WaitRouter::instance();
    router.enlist(only);
    WaitStatus status;
    pid_t got = 0;
    while ((got = router.wait(only, status, __WALL)) < 0 && errno == EINTR) {
    }
    CHECK(got == child); // (not a child it claims: nobody else does)
    CHECK(status.exit_code() == 4);
    router.leave(only);
}
