// Every packet tpagent understands, with its handler. The table itself is in packet_handlers.cpp.
#pragma once
#include "protocol/replies.hpp"
#include "protocol/packet_table.hpp"
#include <string>
#include <string_view>

namespace tpagent::server {

class Session;
using Handler = std::string(Session&, std::string_view);
// Handlers of packets whose table entry has an argument schema (protocol/packet_args.hpp).
using ArgsHandler = std::string(Session&, const protocol::PacketArgs&);

const protocol::PacketTable<Session>& packet_table();
// Looked up first while the served program is one that ended with gdb away
// (exited_program_packets.cpp).
const protocol::PacketTable<Session>& exited_program_packets();

// handlers_general.cpp
Handler handle_supported, handle_start_no_ack, handle_status, handle_attached,
    handle_current_thread, handle_thread_info_first, handle_thread_info_next, handle_pass_signals,
    handle_catch_syscalls, handle_program_signals, handle_disable_randomization, handle_symbol,
    handle_non_stop, handle_stopped_ack, handle_thread_events, handle_extended_mode;
ArgsHandler handle_thread_alive, handle_set_thread, handle_monitor;
// handlers_run.cpp
Handler handle_continue, handle_continue_signal, handle_step, handle_step_signal, handle_vcont,
    handle_vcont_query, handle_kill, handle_detach, handle_vrun, handle_restart, handle_vctrlc;
ArgsHandler handle_vkill, handle_vattach;
// handlers_branch_trace.cpp
Handler handle_btrace, handle_btrace_conf, handle_xfer_btrace, handle_xfer_btrace_conf;
// handlers_data.cpp
Handler handle_read_registers, handle_write_registers, handle_write_register, handle_read_memory,
    handle_write_memory_hex, handle_write_memory_binary, handle_insert_point, handle_remove_point;
ArgsHandler handle_read_register, handle_tls_address;
// p's reply to a register number that is not one.
std::string unknown_register(const Error&);
// handlers_xfer.cpp
Handler handle_xfer_features, handle_xfer_auxv, handle_xfer_exec_file, handle_xfer_threads,
    handle_xfer_libraries_svr4, handle_xfer_siginfo_read, handle_xfer_siginfo_write,
    handle_xfer_osdata;
// handlers_run.cpp: environment for `run`
Handler handle_environment_reset;
ArgsHandler handle_environment_set, handle_environment_unset;
// handlers_trace.cpp
Handler handle_trace_init, handle_trace_define, handle_trace_source, handle_trace_variable,
    handle_trace_readonly, handle_trace_disconnected, handle_trace_buffer_setting,
    handle_trace_notes, handle_trace_start, handle_trace_stop, handle_trace_enable,
    handle_trace_disable, handle_trace_status, handle_tracepoint_status,
    handle_trace_variable_value, handle_tracepoints_first, handle_tracepoints_next,
    handle_trace_variables_first, handle_trace_variables_next, handle_trace_frame,
    handle_trace_buffer_read, handle_trace_save, handle_xfer_traceframe_info,
    handle_xfer_static_trace_data, handle_min_fast_tracepoint_length;
// handlers_static_markers.cpp
Handler handle_static_markers_first, handle_static_markers_next;
ArgsHandler handle_static_marker_at;
// handlers_hostio.cpp
Handler handle_vfile_pread, handle_vfile_pwrite;
ArgsHandler handle_vfile_setfs, handle_vfile_open, handle_vfile_close, handle_vfile_fstat,
    handle_vfile_unlink, handle_vfile_readlink;
// Host I/O's replies to arguments that do not parse: EINVAL, or EBADF for a file descriptor.
std::string hostio_bad_arguments(const Error&);
std::string hostio_bad_fd(const Error&);

// The tables' argument schemas (protocol/packet_args.hpp), with the handler's own reply to
// arguments that do not fit where it is not the parse error's code.
inline constexpr protocol::ArgumentSchema kHex{"x"};
inline constexpr protocol::ArgumentSchema kThreadId{"t"};
inline constexpr protocol::ArgumentSchema kTlsAddress{"t,x,x"};   // qGetTLSAddr: thread,offset,lm
inline constexpr protocol::ArgumentSchema kThreadOperation{"ct"}; // H: g or c, a thread id
inline constexpr protocol::ArgumentSchema kText{"s"};
inline constexpr protocol::ArgumentSchema kTextReplyingText{"s", protocol::reply_error_text};
inline constexpr protocol::ArgumentSchema kRegisterNumber{"x", unknown_register};
inline constexpr protocol::ArgumentSchema kHostIoPid{"x", hostio_bad_arguments};
inline constexpr protocol::ArgumentSchema kHostIoOpen{"s,x,x",
                                                      hostio_bad_arguments}; // NAME,FLAGS,MODE
inline constexpr protocol::ArgumentSchema kHostIoFd{"x", hostio_bad_fd};
inline constexpr protocol::ArgumentSchema kHostIoName{"s", hostio_bad_arguments};

} // namespace tpagent::server
