// One gdb connection: framing, acks, dispatch through the packet table, and the protocol state
// that gdb negotiated (no-ack mode, multiprocess ids, selected threads).
#pragma once
#include "server/host_io.hpp"
#include "trace/upload_cursor.hpp"
#include "process/stop_event.hpp"
#include "server/transport.hpp"
#include "server/xfer_read.hpp"
#include "protocol/framing.hpp"
#include "protocol/packet.hpp"
#include "protocol/packet_table.hpp"
#include "protocol/stop_reply.hpp"
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <sys/types.h>

namespace tpagent::process {
class Target;
}

namespace tpagent::server {

class Server;
struct ExitedProgram;

// Largest packet we accept (advertised as PacketSize).
inline constexpr std::size_t kPacketSize = 0x4000;

class Session {
  public:
    Session(Server& server, std::unique_ptr<Connection> conn);
    void start();
    void close();
    // Feeds bytes from gdb through framing and dispatch (the read loop's body; tests call it too).
    void receive(std::span<const std::uint8_t> bytes);
    bool closed() const { return closed_; }

    Server& server() { return server_; }
    process::Target* inferior();
    // The inferior while its process lives (nullptr before it starts, or once it has exited).
    process::Target* live_inferior();
    // Whether the inferior has thread `tid` (or had: an exited program's main thread).
    bool has_thread(pid_t tid);
    // The program that ended while gdb was away (its trace kept), or nullptr.
    const ExitedProgram* exited_program();

    // For resume handlers: the reply is the stop reply sent when the inferior stops.
    void defer_reply() { deferred_ = true; }
    // For packets gdb expects no answer to (`k`).
    void suppress_reply() { suppressed_ = true; }
    // Text for gdb's console before the reply (an `O` packet: qRcmd's output).
    void send_console(std::string_view text);
    // For a handler whose reply is a request to gdb ("qRelocInsn:FROM;TO" while QTStart waits):
    // gdb's answer ("qRelocInsn:LEN" or "E01") goes to `next`, whose return value is sent in
    // turn; every other packet is handled as usual meanwhile.
    using AnswerHandler = std::function<std::string(Session&, std::string_view answer)>;
    void await_reloc_answer(AnswerHandler next) { reloc_answer_ = std::move(next); }
    bool waiting_for_stop() const { return waiting_; }
    void on_stop(const process::StopEvent& ev);
    std::string stop_reply(const process::StopEvent& ev);
    // What stop replies carry, after --disable-packet.
    protocol::StopReply::Form stop_reply_form() const;
    std::string status_reply(); // reply to `?`
    // Non-stop mode (RSP "Remote Non-Stop"): each stop goes out as a %Stop notification,
    // the ones after it as the replies to gdb's vStopped, the last followed by OK. `?`
    // starts the sequence afresh with every stopped thread. (The mode is the server's:
    // QNonStop sets it, a gdb's leaving clears it.)
    bool non_stop() const;
    std::string acknowledge_stop(); // reply to vStopped
    // Whether a stop of the thread is still to be acknowledged: for gdb it is running.
    bool stop_unacknowledged(pid_t tid) const;
    // Non-stop vAttach: the attached process's stop, told to gdb when it stops the process
    // (vCont;t), as a notification after that packet's reply.
    void hold_attach_stop(const process::StopEvent& ev) { attach_stops_[ev.pid] = ev; }
    void notify_attach_stop(pid_t pid) {
        if (auto it = attach_stops_.find(pid); it != attach_stops_.end()) {
            after_reply_.push_back(it->second);
            attach_stops_.erase(it);
        }
    }
    // Whether gdb has taken the stop reply that told of this forked child: sent and, in
    // non-stop mode, acknowledged. Until then a wildcard resume does not run the child: gdb,
    // which does not know of it yet, will detach it or keep it (as gdbserver: a queued fork
    // stop keeps its child out of resumes).
    bool fork_child_announced(pid_t child) const;
    // Those told of that are no longer held at their fork (let go, killed, taken) are
    // forgotten: the set stays as small as the held ones, and a pid used again is not taken
    // for one announced.
    void keep_announced_children(const std::set<pid_t>& held) {
        std::erase_if(announced_children_, [&](pid_t child) { return held.count(child) == 0; });
    }

    // What gdb said in qSupported that changes what tpagent does.
    struct GdbFeatures {
        bool multiprocess = false;
        bool swbreak = false;
        bool hwbreak = false;
        bool reloc_insn = false;
        bool exec_events = false;
        bool no_resumed = false;
        bool fork_events = false;
        bool vfork_events = false;
    };
    const GdbFeatures& gdb_features() const { return gdb_features_; }
    void set_gdb_features(const GdbFeatures& features) { gdb_features_ = features; }
    // Thread ids in replies carry the process (gdb's multiprocess+).
    bool multiprocess() const { return gdb_features_.multiprocess; }

    // QStartNoAckMode: from its OK on, neither side acknowledges packets.
    bool no_ack() const { return no_ack_; }
    void start_no_ack_mode() { no_ack_ = true; }
    // `!`: gdb stays connected with no program (run, attach, kill leave the session open).
    bool extended() const { return extended_; }
    void enter_extended_mode() { extended_ = true; }
    // After the reply to this packet the connection ends (detach, `monitor exit`).
    void close_after_reply() { exit_after_reply_ = true; }

    // Hg's thread, for g/G/p/P/m/M (0 = any), and Hc's, for c/s (-1 = all).
    pid_t general_thread() const { return general_thread_; }
    void select_general_thread(pid_t tid) {
        general_thread_ = tid;
        general_ended_ = false;
    }
    // Hg named a process that ended, its end kept for gdb's next resume (several processes,
    // all-stop): nothing is addressed, and clearing a point there is done.
    void select_ended_process() {
        general_thread_ = 0;
        general_ended_ = true;
    }
    bool addresses_ended_process() const { return general_ended_; }
    pid_t continue_thread() const { return continue_thread_; }
    void select_continue_thread(pid_t tid) { continue_thread_ = tid; }

    // The last stop reported (all-stop's `?` repeats it), or how the program ended.
    const std::optional<process::StopEvent>& last_stop() const { return last_stop_; }
    // A stop told to gdb: gdb takes its thread as the one Hg names from then on (it records
    // the reply's thread as the stub's general thread and sends no Hg), so tpagent does too.
    void set_last_stop(const process::StopEvent& ev) {
        last_stop_ = ev;
        if (ev.kind == process::StopEvent::Kind::Signal) select_general_thread(ev.tid);
    }
    void forget_last_stop() { last_stop_.reset(); }

    // QTFrame's selection: g/p/m/qTV answer from that trace frame while there is one.
    std::optional<std::size_t> trace_frame() const { return trace_frame_; }
    void select_trace_frame(std::size_t number) { trace_frame_ = number; }
    void leave_trace_frame() { trace_frame_.reset(); } // back to the live program

    // qTfP/qTfV/qTfSTM start an upload (its first reply), qTsP/qTsV/qTsSTM go on with it.
    enum class Upload { Tracepoints, Variables, Markers };
    std::string begin_upload(Upload which, trace::UploadCursor cursor);
    std::string continue_upload(Upload which);

    // The qXfer document being read in chunks (see cached_xfer).
    XferDocumentCache& xfer_documents() { return xfer_documents_; }

    HostIoState& host_io() { return host_io_; }

    // Qbtrace-conf: the ring sizes asked for the threads recorded next (gdb's defaults).
    struct BranchTraceSizes {
        std::uint32_t bts = 0x10000, pt = 0x4000;
    };
    const BranchTraceSizes& branch_trace_sizes() const { return branch_trace_sizes_; }
    void set_branch_trace_sizes(const BranchTraceSizes& sizes) { branch_trace_sizes_ = sizes; }

    // Thread selected for register access: Hg's choice, else the last stopped thread.
    pid_t current_thread();
    // Hg named a forked child held for gdb (fork-events), not taken as a process yet.
    bool general_thread_is_fork_child();
    // The process Hg names: the served program, or a held one (a forked child held for gdb
    // is taken as a process of its own, still held, when gdb first addresses it). nullptr
    // with none alive.
    process::Target* addressed();
    // The thread of `process` that register accesses are for.
    pid_t addressed_thread(process::Target& process);
    // Every thread gdb may name, as (pid, tid): the served program's, then the held
    // processes' and the forked children's held for gdb.
    std::vector<std::pair<pid_t, pid_t>> all_threads();
    std::string thread_id(pid_t tid);

  private:
    void read_more();
    void handle(const protocol::FrameEvent& ev);
    void dispatch(const std::string& payload);
    std::string run_handler(const protocol::PacketTable<Session>::Handler& handler,
                            const protocol::PacketView& view);
    void send_packet(const std::string& payload);

    Server& server_;
    std::unique_ptr<Connection> conn_;
    protocol::PacketDecoder decoder_{kPacketSize};
    std::array<std::uint8_t, 16384> buf_{};
    std::string last_frame_;
    AnswerHandler reloc_answer_;
    std::string non_stop_status();
    // Runs a handler of packet `name`, with the program paused for it if its entry says so.
    std::string run_paused(std::string_view name, const std::function<std::string()>& run);
    void send_notification(const std::string& payload);
    std::deque<process::StopEvent> stop_notifications_; // the first one is out, awaiting vStopped
    std::map<pid_t, process::StopEvent>
        thread_stops_; // each thread's last stop reported (non-stop)
    bool deferred_ = false;
    bool suppressed_ = false;
    bool waiting_ = false;
    std::set<pid_t> announced_children_;
    std::map<pid_t, process::StopEvent> attach_stops_;
    std::vector<process::StopEvent> after_reply_; // stops to notify once the reply is out
    // non_stop_status's part for one process: a stop for each of its threads gdb saw stop.
    void add_stopped_threads(process::Target& inf,
                             const std::map<pid_t, process::StopEvent>& untaken);
    bool closed_ = false;

    GdbFeatures gdb_features_;
    bool no_ack_ = false;
    bool extended_ = false;
    bool exit_after_reply_ = false;
    pid_t general_thread_ = 0;
    bool general_ended_ = false;
    pid_t continue_thread_ = -1;
    std::optional<process::StopEvent> last_stop_;
    std::optional<std::size_t> trace_frame_;
    std::array<trace::UploadCursor, 3> uploads_; // by Upload
    XferDocumentCache xfer_documents_;
    HostIoState host_io_;
    BranchTraceSizes branch_trace_sizes_;
};

} // namespace tpagent::server
