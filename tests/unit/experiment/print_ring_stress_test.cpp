// The ring of dprintf lines (inproc/print_ring.hpp) under load: writer threads take slots and
// publish lines as the agent does, waiting (here by yielding; in the program by stopping for
// tpagent) when the ring is full, while one reader takes them as tpagent does. Every line
// comes once, whole, and each writer's in its own order. Compiled into the test (as the chunk
// protocol's stress test is) so that ThreadSanitizer sees both sides. Tag [tsan]: the tsan
// preset runs it under ThreadSanitizer (scripts/test.sh tsan).
#include "inproc/print_ring.hpp"
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <vector>

using namespace tpagent::inproc;

TEST_CASE("print ring: four writers and a reader, every line once and whole",
          "[tsan][print-ring]") {
    constexpr std::size_t kBytes = kPrintRingOffset + kPrintRingBytes;
    void* shared =
        mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(shared != MAP_FAILED);
    constexpr int kWriters = 4, kLines = 20000;
    std::vector<std::thread> writers;
    writers.reserve(kWriters);
    for (int w = 0; w < kWriters; ++w)
        writers.emplace_back([&, w] {
            for (int i = 0; i < kLines; ++i) {
                std::uint64_t number = 0;
                PrintSlot* slot = nullptr;
                while (!(slot = try_print_slot(shared, number)))
                    std::this_thread::yield();
                // A long line, so that a torn one shows.
                const int n = std::snprintf(slot->text, sizeof slot->text, "%d %d %0300d", w, i, i);
                slot->length = static_cast<std::uint32_t>(n);
                slot->status = 0;
                publish_print_slot(slot, number);
            }
        });
    std::vector<int> next(kWriters, 0);
    std::uint64_t lines = 0, bad = 0;
    while (lines < std::uint64_t{kWriters} * kLines) {
        const std::uint64_t got = read_print_ring(shared, [&](const PrintSlot& slot) {
            int w = -1, i = -1, again = -1;
            const std::string text(slot.text, slot.length);
            if (std::sscanf(text.c_str(), "%d %d %d", &w, &i, &again) != 3 || w < 0 ||
                w >= kWriters || i != next[w] || again != i ||
                text.size() != 300 + text.find(' ', 2) + 1)
                ++bad;
            else
                ++next[w];
        });
        lines += got;
        if (got == 0) std::this_thread::yield();
    }
    for (auto& t : writers)
        t.join();
    CHECK(bad == 0);
    CHECK(next == std::vector<int>(kWriters, kLines));
    const PrintRing* ring = print_ring(shared);
    CHECK(ring->taken.load() == std::uint64_t{kWriters} * kLines);
    CHECK(ring->read.load() == ring->taken.load());
    munmap(shared, kBytes);
}
