// Drives a libFuzzer target (LLVMFuzzerTestOneInput) without libFuzzer, on an architecture the
// fuzz build does not run: every file of the corpus folders given, then random inputs
// (random lengths and bytes, so both the generator path and raw bytecode are exercised) for a
// number of seconds. A mismatch aborts in the target, with its input written to
// crash-input.bin first (in the working folder).
//
// Usage: DRIVER [--seconds S] [--seed N] [CORPUS_DIR...]
#include <chrono>
#include <csignal>
#include <ctime>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::vector<std::uint8_t> current;

void keep_input() {
    if (FILE* f = std::fopen("crash-input.bin", "wb")) {
        std::fwrite(current.data(), 1, current.size(), f);
        std::fclose(f);
    }
}

void run(std::vector<std::uint8_t> input) {
    current = std::move(input);
    LLVMFuzzerTestOneInput(current.data(), current.size());
}

} // namespace

int main(int argc, char** argv) {
    double seconds = 10;
    std::uint64_t seed = static_cast<std::uint64_t>(std::time(nullptr));
    std::vector<std::string> dirs;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--seconds" && i + 1 < argc)
            seconds = std::atof(argv[++i]);
        else if (a == "--seed" && i + 1 < argc)
            seed = std::strtoull(argv[++i], nullptr, 10);
        else
            dirs.push_back(a);
    }
    std::atexit(keep_input); // abort() skips it: the signal handler below covers that
    std::signal(SIGABRT, [](int) {
        keep_input();
        std::_Exit(134);
    });
    std::size_t replayed = 0;
    for (const auto& dir : dirs) {
        std::error_code missing;
        if (!std::filesystem::is_directory(dir, missing)) {
            std::fprintf(stderr, "fuzz driver: no corpus folder %s\n", dir.c_str());
            continue;
        }
        for (const auto& entry : std::filesystem::directory_iterator(dir)) {
            std::ifstream f(entry.path(), std::ios::binary);
            run({std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()});
            ++replayed;
        }
    }
    std::mt19937_64 g(seed);
    std::size_t random = 0;
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
        std::vector<std::uint8_t> input(1 + g() % 512);
        for (auto& b : input)
            b = static_cast<std::uint8_t>(g());
        run(std::move(input));
        ++random;
    }
    current.clear();
    std::printf("fuzz driver: %zu corpus inputs, %zu random inputs (seed %llu), no mismatch\n",
                replayed, random, static_cast<unsigned long long>(seed));
    return 0;
}
