// Stop replies (GDB manual, "Stop Reply Packets"): W (exited), X (killed by a signal), w (a
// thread exited), and T with the expedited registers, the thread and why it stopped.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tpagent::protocol {

struct StopReply {
    enum class Kind : std::uint8_t { Exited, Killed, Signal, ThreadExited };
    Kind kind = Kind::Signal;
    int code = 0; // Exited, ThreadExited: the exit status; else the gdb signal number
    std::optional<std::uint64_t> process; // multiprocess: ";process:PID" after W and X
    // T: "NN:VALUE;" for each register, already hex-encoded in target byte order.
    std::vector<std::pair<int, std::string>> registers;
    std::string thread; // T, w: the thread id as gdb wants it ("pPID.TID" or "TID")
    bool swbreak = false, hwbreak = false;
    // T: a watchpoint's trigger: 2 watch, 3 rwatch, 4 awatch, and the address.
    std::optional<std::pair<int, std::uint64_t>> watch;
    // T: a caught system call: entry (true) or return, and its number.
    std::optional<std::pair<bool, std::uint64_t>> syscall;
    // T: the program ran execve; the new program's path (sent hex-encoded).
    std::optional<std::string> exec_path;
    // T: the program forked (or vforked); the child's thread id as gdb wants it.
    std::optional<std::string> fork_child;
    bool vfork = false;
    // T: a vfork child has exec'd or exited: the parent's memory is its own again.
    bool vfork_done = false;
    // T: the thread was just created (QThreadEvents), and waits for gdb to resume it.
    bool thread_created = false;
    // What a Signal reply carries (gdbserver's --disable-packet=Tthread or T): all of it, a T
    // reply without its thread, or a plain "S" with the signal alone.
    enum class Form : std::uint8_t { Full, NoThread, SignalOnly };
    Form form = Form::Full;
};
std::string encode_stop_reply(const StopReply& reply);

} // namespace tpagent::protocol
