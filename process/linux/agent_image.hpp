// The in-process agent's self-mapped image (inproc/image.cpp, libtpagent-inproc-image.so) as
// tpagent places it in a program: its loadable segments, the RELATIVE relocations tpagent
// applies itself, and its entry. Read from the file, every size bounded; anything a loader would
// have to do beyond that (another relocation type, a needed library, TLS) refuses the file.
#pragma once
#include "base/result.hpp"
#include <cstdint>
#include <string>
#include <vector>

namespace tpagent::process {

struct AgentImage {
    struct Segment {
        std::uint64_t vaddr = 0; // from the image's base
        std::uint64_t offset = 0;
        std::uint64_t file_bytes = 0;
        std::uint64_t memory_bytes = 0;
        int prot = 0; // PROT_*
    };
    // A word at base + offset that must hold base + addend.
    struct Relocation {
        std::uint64_t offset = 0;
        std::uint64_t addend = 0;
    };
    std::vector<Segment> segments;
    std::vector<Relocation> relocations; // sorted by offset
    std::uint64_t span = 0;              // bytes from the base to the last segment's page end
    std::uint64_t start = 0;             // tpagent_inproc_image_start, from the base

    static constexpr std::uint64_t kPage = 4096;
    static constexpr std::uint64_t kMaxSpan = 64u << 20;
    static constexpr std::size_t kMaxRelocations = 1u << 16;
};

Result<AgentImage> read_agent_image(const std::string& path);

// The relocated words, by runs of adjacent ones: [address, bytes] to write for an image at base.
std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>>
relocated_words(const AgentImage& image, std::uint64_t base);

} // namespace tpagent::process
