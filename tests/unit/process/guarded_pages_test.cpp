// Finding BTI-guarded code in /proc/PID/smaps text.
#include "process/linux/guarded_pages.hpp"

#include <catch2/catch.hpp>
#include <unistd.h>

using tpagent::process::branch_target_guarded;
using tpagent::process::guarded_in_smaps;

namespace {
constexpr const char* kSmaps = "aaaaaaaa0000-aaaaaaaa1000 r-xp 00000000 00:0e 14   /payload/prog\n"
                               "Size:                  4 kB\n"
                               "VmFlags: rd ex mr mw me bt \n"
                               "aaaaaaab0000-aaaaaaab1000 rw-p 00010000 00:0e 14   /payload/prog\n"
                               "Size:                  4 kB\n"
                               "VmFlags: rd wr mr mw me ac \n"
                               "fffff7e20000-fffff7fa0000 r-xp 00000000 00:0e 20   /lib/libc.so.6\n"
                               "Rss:                 400 kB\n"
                               "VmFlags: rd ex mr mw me \n";
} // namespace

TEST_CASE("guarded pages: the VmFlags of the mapping holding the address", "[target]") {
    CHECK(guarded_in_smaps(kSmaps, 0xaaaaaaaa0000));
    CHECK(guarded_in_smaps(kSmaps, 0xaaaaaaaa0ffc));
    CHECK_FALSE(guarded_in_smaps(kSmaps, 0xaaaaaaaa1000)); // between mappings
    CHECK_FALSE(guarded_in_smaps(kSmaps, 0xaaaaaaab0010));
    CHECK_FALSE(guarded_in_smaps(kSmaps, 0xfffff7e30000));
    CHECK_FALSE(guarded_in_smaps("", 0x1000));
    CHECK_FALSE(guarded_in_smaps("VmFlags: bt\n", 0x1000)); // no mapping line before it
}

TEST_CASE("guarded pages: this process's code is found and not guarded on x86-64", "[target]") {
    const auto here = reinterpret_cast<std::uint64_t>(&branch_target_guarded);
    CHECK_FALSE(branch_target_guarded(getpid(), here));
    CHECK_FALSE(branch_target_guarded(-1, here)); // unreadable: not guarded
}
