// The FP/SIMD and SVE state a fast tracepoint's pad saves for tracepoints that collect those
// registers (FastPadOptions::stage_vector_state), and how it becomes their places in gdb's `g`
// block. The pad lowers sp under its general registers' block by the state's room (35 vector
// lengths and 32 bytes with SVE, ADDVL sizes it for the thread's own length; 544 bytes
// without), and the state starts at the collector's frame:
//
//     frame + 0    fpsr (4 bytes), fpcr (4)
//     frame + 8    the vector length in bytes (4; 0 where no SVE register was saved), 4 unused
//     frame + 16   z0..z31, one vector length each (SVE), or q0..q31, 16 bytes each
//                  p0..p15 and ffr, an eighth of the vector length each (SVE)
//
// The collector itself uses general registers only, but its system calls (mapping a chunk)
// discard the upper parts of the SVE registers: the pad restores the whole state after it.
// In SME's streaming mode FFR cannot be read: the pad then saves fpsr and fpcr only.
#pragma once
#include "arch/aarch64/emitter.hpp"
#include "arch/aarch64/registers.hpp"
#include <cstdint>
#include <span>
#include <vector>

namespace tpagent::arch::aarch64 {

struct PadVectorState {
    bool sve = false; // the CPU has SVE: z, p and ffr; otherwise q
    bool sme = false; // the CPU has SME: a thread may be in streaming mode
};

// The bytes the state takes for a thread of the layout's vector length (no SVE: q registers).
std::uint32_t vector_state_bytes(const Layout& layout);

// After the pad has stored the general registers into the block at sp + block_at: keeps the
// block's address in x19 (x19..x21 are the collector's to keep), lowers sp and saves the state
// from sp + 16, where the frame then is (the return address slot stays at frame - 8).
void emit_vector_state_save(Emitter& e, const PadVectorState& shape, std::uint32_t block_at);
// After the collector returns: restores the state and sp to what it was before the save.
void emit_vector_state_restore(Emitter& e, const PadVectorState& shape, std::uint32_t block_at);

// The registers a saved state holds, into their places in g; `placed` says which: fpsr and
// fpcr, and the vector registers (z, p, ffr and vg with SVE, else v) where the state has them
// at the layout's length (not for a thread in streaming mode, or with a length of its own).
void vector_state_to_g(const Layout& layout, std::span<const std::uint8_t> state,
                       std::span<std::uint8_t> g, std::vector<bool>& placed);
// Every register a state can hold, per regnum.
std::vector<bool> vector_state_registers(const Layout& layout);

} // namespace tpagent::arch::aarch64
