// Typed requests: argument parsers for the packets that carry structured arguments.
// Handlers call these and never pick at raw bytes themselves.
#pragma once
#include "base/result.hpp"
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tpagent::protocol {

// Bound on any length a request may ask for (memory reads, qXfer chunks).
inline constexpr std::uint64_t kMaxTransfer = 1 << 20;
// Largest agent expression a Z packet may carry (bytecode::Limits::max_length).
inline constexpr std::uint64_t kMaxAgentExpression = 8192;

struct MemoryRange {
    std::uint64_t addr = 0;
    std::uint64_t length = 0;
};
// "addr,length" (m, qXfer offsets use their own parser).
Result<MemoryRange> parse_memory_range(std::string_view args);

struct MemoryWrite {
    std::uint64_t addr = 0;
    std::vector<std::uint8_t> bytes;
};
// M: "addr,length:hexbytes".
Result<MemoryWrite> parse_memory_write_hex(std::string_view args);
// X: "addr,length:binary" (already unescaped by the framing layer).
Result<MemoryWrite> parse_memory_write_binary(std::string_view args);

struct BreakpointRequest {
    int type = 0; // 0 sw, 1 hw, 2 write, 3 read, 4 access watchpoint
    std::uint64_t addr = 0;
    std::uint64_t kind = 0;
    // Agent expressions for tpagent to run at a hit (ConditionalBreakpoints+,
    // BreakpointCommands+): conditions, any of which true makes the hit gdb's, and commands
    // (agent-style dprintf), kept past gdb's detach when `persist`. Bytes as sent, unvalidated.
    std::vector<std::vector<std::uint8_t>> conditions;
    std::vector<std::vector<std::uint8_t>> commands;
    bool persist = false;
};
// Z/z: "type,addr,kind[;X len,hex...][;cmds:persist,X len,hex...]" (RSP "Z0": conditions
// are X entries one after the other, commands likewise after "cmds:").
Result<BreakpointRequest> parse_breakpoint(std::string_view args);

// A thread-id: "p<pid>.<tid>", "<tid>", with -1 = all and 0 = any.
struct ThreadId {
    static constexpr std::int64_t kAll = -1;
    static constexpr std::int64_t kAny = 0;
    std::int64_t pid = kAny;
    std::int64_t tid = kAny;
};
Result<ThreadId> parse_thread_id(std::string_view text);
std::string format_thread_id(std::int64_t pid, std::int64_t tid, bool multiprocess);

struct ResumeAction {
    enum class Kind { Continue, Step, Stop };
    Kind kind = Kind::Continue;
    int signal = 0;                 // 0: none
    std::optional<ThreadId> thread; // none: applies to all threads not otherwise named
    // `r start,end` (range stepping): a Step that goes on while the pc stays in [start, end).
    std::uint64_t range_start = 0, range_end = 0;
};
// vCont: "action[:thread-id][;action[:thread-id]]..." as classify() returns it; a leading ';'
// (the raw text after "vCont") is accepted too.
Result<std::vector<ResumeAction>> parse_vcont(std::string_view args);
// c/s: "[addr]"; C/S: "sig[;addr]".
struct LegacyResume {
    int signal = 0;
    std::optional<std::uint64_t> addr;
};
Result<LegacyResume> parse_legacy_resume(std::string_view args, bool has_signal);

// qXfer:object:read:annex:offset,length  (name already consumed; args = "annex:offset,length").
struct XferRead {
    std::string annex;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
};
Result<XferRead> parse_xfer_read(std::string_view args);
// qXfer:OBJECT:write:ANNEX:OFFSET:DATA (DATA binary, already unescaped): the reply is the
// number of bytes written, in hex.
struct XferWrite {
    std::string annex;
    std::uint64_t offset = 0;
    std::string_view data; // into the packet
};
Result<XferWrite> parse_xfer_write(std::string_view args);
// The reply to a qXfer read of `data`: "m"/"l" + escaped chunk.
std::string xfer_reply(std::string_view data, std::uint64_t offset, std::uint64_t length);

// gdb's answer to the stub's "qRelocInsn:FROM;TO" request: "qRelocInsn:LEN" (LEN hex, the bytes
// gdb wrote at TO), or nullopt for its "E01" (gdb could not relocate the instruction).
bool is_reloc_insn_answer(std::string_view payload);
Result<std::optional<std::uint64_t>> parse_reloc_insn_answer(std::string_view payload);

// QTro: "start,end[:start,end]..." (hex), the read-only ranges a trace file's memory is
// served from; each range [start, end).
struct AddressRange {
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    bool operator==(const AddressRange&) const = default;
};
Result<std::vector<AddressRange>> parse_readonly_ranges(std::string_view args);

// QTNotes: "user:<hex>;notes:<hex>;tstop:<hex>;" in any order, each optional (the text
// decoded); a name given twice keeps the last.
struct TraceNotes {
    std::optional<std::string> user;
    std::optional<std::string> notes;
    std::optional<std::string> tstop;
};
Result<TraceNotes> parse_trace_notes(std::string_view args);

} // namespace tpagent::protocol
