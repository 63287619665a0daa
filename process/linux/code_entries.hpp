// Where control can arrive from elsewhere in the code of the ELF files a program maps: the
// addresses a fast tracepoint's jump must not cover past its own first byte. On x86-64 a jump
// at an instruction shorter than itself also displaces the instructions after it; a branch,
// a jump table or a stored code pointer leading into one of those would land inside the jump.
//
// Found per file, once, from the program's memory (tpagent's own patches hidden) with the
// file's section headers: its function symbols, a linear sweep of its code sections (direct branch
// and call targets, code addresses computed pc-relative), every aligned word of its data sections
// that points into its code (function pointers, vtables, absolute jump tables), and the 32-bit
// relative jump tables the code reaches pc-relative (entries read while they land in code).
// In a Go program, also the direct calls of runtime.deferreturn (a recovered panic resumes a
// frame there); where a preempted goroutine resumes is on its stack (the caller's to search).
// Not seen: targets only the unwinder knows (C++ landing pads, which compilers place after an
// unconditional transfer, never falling into them), and code pointers computed at run time
// or held in another file's data to an address with no symbol.
#pragma once
#include "arch/arch.hpp"
#include "base/result.hpp"
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace tpagent::process {

class CodeEntries {
  public:
    // The program's bytes at an address (tpagent's patches hidden): how many were read.
    using ReadProgram = std::function<Result<std::size_t>(std::uint64_t, std::span<std::uint8_t>)>;
    CodeEntries(const arch::Architecture& arch, ReadProgram read)
        : arch_(arch), read_(std::move(read)) {}

    // Why control may arrive inside (lo, hi) from elsewhere in process `pid`, or nullopt when
    // nothing does. The file's analysis is kept for later questions.
    std::optional<std::string> entry_inside(pid_t pid, std::uint64_t lo, std::uint64_t hi);
    // Whether the code at addr is a Go program's (whose runtime resumes goroutines elsewhere
    // too: see go_program.hpp).
    bool go_code(pid_t pid, std::uint64_t addr);
    // The mappings of the ELF file holding addr: [start, end).
    std::optional<std::pair<std::uint64_t, std::uint64_t>> file_span(pid_t pid, std::uint64_t addr);
    // The program's image changed (exec): every file is looked at again.
    void forget() { files_.clear(); }

    // Bytes of one section read at most (a larger one is not analysed).
    static constexpr std::uint64_t kMaxSectionBytes = 256u << 20;

  private:
    struct File {
        std::string path;
        std::uint64_t start = 0, end = 0;                          // its mappings
        std::vector<std::pair<std::uint64_t, std::uint64_t>> code; // loaded code sections
        std::vector<std::uint64_t> entries;                        // sorted
        std::optional<std::string> refused; // why none of its code may be displaced
        bool go = false;                    // a Go program's
    };
    const File* file_at(pid_t pid, std::uint64_t addr);
    File analyse(pid_t pid, const std::string& path, std::uint64_t start, std::uint64_t end);
    bool in_code(const File& f, std::uint64_t addr) const;

    const arch::Architecture& arch_;
    ReadProgram read_;
    std::vector<File> files_;
};

} // namespace tpagent::process
