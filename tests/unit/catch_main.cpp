// The unit tests' main: Catch2's, plus skip() (skip.hpp): a run that passed and skipped a
// test exits with kSkipExitCode.
#define CATCH_CONFIG_RUNNER
#include "tests/unit/skip.hpp"
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

namespace {
int g_skipped = 0;
} // namespace

void tpagent::test::skip(std::string_view reason) {
    ++g_skipped;
    std::printf("SKIPPED: %s\n", std::string(reason).c_str());
    std::fflush(stdout);
}

int main(int argc, char** argv) {
    const int failed = Catch::Session().run(argc, argv);
    if (failed == 0 && g_skipped > 0) {
        std::printf("%d test case(s) skipped\n", g_skipped);
        return tpagent::test::kSkipExitCode;
    }
    return failed;
}
