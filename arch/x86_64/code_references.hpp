// x86-64: the branch targets and table bases in a linear sweep of code (see
// arch/code_references.hpp), and whether displacing the instructions after a fast tracepoint's
// own is safe as far as the instructions themselves tell.
#pragma once
#include "arch/code_references.hpp"
#include "arch/relocation.hpp"
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace tpagent::arch::x86_64 {

// Decodes `code` (at `addr`) from its start, one instruction after another (GCC and Clang
// put no data in code; an undecodable byte is skipped, and the sweep falls back in step within
// a few instructions). Appends to `out`.
void sweep_code_references(std::span<const std::uint8_t> code, std::uint64_t addr,
                           CodeReferences& out);

// Why the instructions `relocated` displaces from `code` (at `addr`) cannot all move, or
// nullopt: each but the last must go on to the next one (no jmp, ret, int3, ud2, hlt), so
// that only a branch from elsewhere could reach the next instruction; a jmp or ret may be
// followed by alignment padding only (nops, int3), which never runs. A call may be among
// them (its relocated form returns into the pad). Branches into the displaced instructions
// from elsewhere, and threads that will return or resume inside them, are the caller's to
// rule out.
std::optional<std::string> displacement_hazard(std::span<const std::uint8_t> code,
                                               std::uint64_t addr, const Relocated& relocated);

// A call among the instructions `relocated` displaces, before the last, or nullopt: its callee
// returns into the pad, an address a runtime that walks its own stacks (Go's: collection,
// stack growth, panics) does not know.
std::optional<std::string> displaced_call(std::span<const std::uint8_t> code, std::uint64_t addr,
                                          const Relocated& relocated);

} // namespace tpagent::arch::x86_64
