// Skipping a unit test whose hardware this machine lacks: the test calls skip(reason) and
// returns. ctest runs each test case in a process of its own, and the shared main
// (catch_main.cpp) then exits with kSkipExitCode, which ctest reports as "Skipped"
// (SKIP_RETURN_CODE, tests/CMakeLists.txt); the reason is printed.
#pragma once
#include <string_view>

namespace tpagent::test {

inline constexpr int kSkipExitCode = 77;

void skip(std::string_view reason);

} // namespace tpagent::test
