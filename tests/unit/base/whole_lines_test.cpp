#include "base/whole_lines.hpp"
#include <catch2/catch.hpp>
#include <climits>
#include <fcntl.h>
#include <regex>
#include <string>
#include <thread>
#include <unistd.h>

using tpagent::whole_lines_prefix;
using tpagent::write_whole_lines;

TEST_CASE("whole_lines_prefix keeps whole lines under the limit", "[base]") {
    CHECK(whole_lines_prefix("", 8) == 0);
    CHECK(whole_lines_prefix("ab\ncd\n", 8) == 6);       // all of it fits
    CHECK(whole_lines_prefix("ab\ncd\nef\n", 8) == 6);   // the third line does not
    CHECK(whole_lines_prefix("ab\ncdefghij\n", 8) == 3); // only the first
    CHECK(whole_lines_prefix("abcdefghijkl\n", 8) == 8); // one line too long: in pieces
    CHECK(whole_lines_prefix("abcdefg\nxyz", 8) == 8);   // the newline is the last byte
}

// Two writers on one pipe that its reader empties slowly, as the program and tpagent share the
// output a test reads: tpagent's lines, thousands of bytes at a time, and the program's short
// lines meanwhile. Every line read is one writer's whole line (a single write of all of them
// would be split where the pipe fills, with the other's line inside).
TEST_CASE("write_whole_lines: another writer's lines never land inside ours", "[base]") {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    // A small pipe, so that it fills often.
    (void)::fcntl(fds[1], F_SETPIPE_SZ, 4096);

    std::string ours;
    for (int n = 0; n < 4000; ++n)
        ours += "hot " + std::to_string(n) + "\n";
    std::thread tpagent([&] {
        for (int i = 0; i < 4; ++i)
            CHECK(write_whole_lines(fds[1], ours));
    });
    std::thread program([&] {
        const std::string line = "total 799980000\n";
        for (int i = 0; i < 400; ++i) {
            CHECK(::write(fds[1], line.data(), line.size()) == static_cast<ssize_t>(line.size()));
            std::this_thread::yield();
        }
    });
    std::thread closer([&] {
        tpagent.join();
        program.join();
        ::close(fds[1]);
    });

    std::string read_back;
    char buffer[512];
    for (;;) {
        const ssize_t got = ::read(fds[0], buffer, sizeof buffer);
        if (got <= 0) break;
        read_back.append(buffer, static_cast<std::size_t>(got));
        std::this_thread::yield(); // a slow reader
    }
    closer.join();
    ::close(fds[0]);

    const std::regex whole("hot \\d+|total 799980000");
    std::size_t lines = 0;
    std::size_t totals = 0;
    std::size_t start = 0;
    while (start < read_back.size()) {
        const std::size_t end = read_back.find('\n', start);
        REQUIRE(end != std::string::npos);
        const std::string line = read_back.substr(start, end - start);
        INFO(line);
        REQUIRE(std::regex_match(line, whole));
        totals += line[0] == 't' ? 1 : 0;
        ++lines;
        start = end + 1;
    }
    CHECK(totals == 400);
    CHECK(lines == 4 * 4000 + 400);
}
