// The one table: packet name -> handler. A name missing here gets the empty reply.
#include "server/packet_handlers.hpp"
#include "server/session.hpp"

namespace tpagent::server {

namespace {
// See PacketTable::Entry::stops_all.
constexpr bool kStopsAll = true;
} // namespace

const protocol::PacketTable<Session>& packet_table() {
    static const protocol::PacketTable<Session> table{
        // Connection and general queries
        {"qSupported", handle_supported},
        {"QStartNoAckMode", handle_start_no_ack},
        {"?", handle_status},
        {"!", handle_extended_mode},
        {"qAttached", handle_attached},
        {"qC", handle_current_thread},
        {"qfThreadInfo", handle_thread_info_first},
        {"qsThreadInfo", handle_thread_info_next},
        {"T", kThreadId, handle_thread_alive},
        {"qGetTLSAddr", kTlsAddress, handle_tls_address},
        {"H", kThreadOperation, handle_set_thread},
        {"QPassSignals", handle_pass_signals},
        {"QProgramSignals", handle_program_signals},
        {"QDisableRandomization", handle_disable_randomization},
        {"qSymbol", handle_symbol},
        {"qRcmd", kText, handle_monitor},
        {"QNonStop", handle_non_stop},
        {"vStopped", handle_stopped_ack},
        {"QThreadEvents", handle_thread_events},
        {"QCatchSyscalls", handle_catch_syscalls},
        // Run control
        {"c", handle_continue},
        {"C", handle_continue_signal},
        {"s", handle_step},
        {"S", handle_step_signal},
        {"vCont", handle_vcont},
        {"vCont?", handle_vcont_query},
        {"k", handle_kill},
        {"vKill", kHex, handle_vkill},
        {"D", handle_detach, kStopsAll},
        {"vRun", handle_vrun},
        {"R", handle_restart},
        {"vAttach", kHex, handle_vattach},
        {"vCtrlC", handle_vctrlc},
        // Registers, memory, breakpoints
        {"g", handle_read_registers},
        {"G", handle_write_registers},
        {"p", kRegisterNumber, handle_read_register},
        {"P", handle_write_register},
        {"m", handle_read_memory},
        {"M", handle_write_memory_hex, kStopsAll},
        {"X", handle_write_memory_binary, kStopsAll},
        {"Z", handle_insert_point, kStopsAll},
        {"z", handle_remove_point, kStopsAll},
        // qXfer objects
        {"qXfer:features:read", handle_xfer_features},
        {"qXfer:auxv:read", handle_xfer_auxv},
        {"qXfer:exec-file:read", handle_xfer_exec_file},
        {"qXfer:threads:read", handle_xfer_threads},
        {"qXfer:libraries-svr4:read", handle_xfer_libraries_svr4},
        {"qXfer:siginfo:read", handle_xfer_siginfo_read},
        {"qXfer:osdata:read", handle_xfer_osdata},
        {"qXfer:siginfo:write", handle_xfer_siginfo_write},
        {"qXfer:traceframe-info:read", handle_xfer_traceframe_info},
        {"qXfer:statictrace:read", handle_xfer_static_trace_data},
        {"qXfer:btrace:read", handle_xfer_btrace},
        {"qXfer:btrace-conf:read", handle_xfer_btrace_conf},
        // Branch trace
        {"Qbtrace", handle_btrace},
        {"Qbtrace-conf", handle_btrace_conf},
        // Tracepoints
        {"QEnvironmentHexEncoded", kTextReplyingText, handle_environment_set},
        {"QEnvironmentUnset", kTextReplyingText, handle_environment_unset},
        {"QEnvironmentReset", handle_environment_reset},
        {"QTinit", handle_trace_init, kStopsAll},
        {"QTDP", handle_trace_define, kStopsAll},
        {"QTDPsrc", handle_trace_source},
        {"QTDV", handle_trace_variable},
        {"QTro", handle_trace_readonly},
        {"QTDisconnected", handle_trace_disconnected},
        {"QTBuffer", handle_trace_buffer_setting},
        {"QTNotes", handle_trace_notes},
        {"QTStart", handle_trace_start, kStopsAll},
        {"QTStop", handle_trace_stop, kStopsAll},
        {"QTEnable", handle_trace_enable, kStopsAll},
        {"QTDisable", handle_trace_disable, kStopsAll},
        {"qTStatus", handle_trace_status},
        {"qTP", handle_tracepoint_status},
        {"qTV", handle_trace_variable_value},
        {"qTfP", handle_tracepoints_first},
        {"qTsP", handle_tracepoints_next},
        {"qTfV", handle_trace_variables_first},
        {"qTsV", handle_trace_variables_next},
        {"qTfSTM", handle_static_markers_first},
        {"qTsSTM", handle_static_markers_next},
        {"qTSTMat", kHex, handle_static_marker_at},
        {"QTFrame", handle_trace_frame},
        {"qTBuffer", handle_trace_buffer_read},
        {"QTSave", handle_trace_save},
        {"qTMinFTPILen", handle_min_fast_tracepoint_length},
        // Host I/O
        {"vFile:setfs", kHostIoPid, handle_vfile_setfs},
        {"vFile:open", kHostIoOpen, handle_vfile_open},
        {"vFile:close", kHostIoFd, handle_vfile_close},
        {"vFile:pread", handle_vfile_pread},
        {"vFile:pwrite", handle_vfile_pwrite},
        {"vFile:fstat", kHostIoFd, handle_vfile_fstat},
        {"vFile:unlink", kHostIoName, handle_vfile_unlink},
        {"vFile:readlink", kHostIoName, handle_vfile_readlink},
    };
    return table;
}

} // namespace tpagent::server
