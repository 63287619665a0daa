// Tracepoint packets (GDB manual, "Tracepoint Packets"; what gdb really sends: spec notes N2-N10).
#include "process/target.hpp"
#include "server/packet_handlers.hpp"
#include "server/server.hpp"
#include "server/session.hpp"
#include "trace/frame_query.hpp"
#include "experiment/trace_file_writer.hpp"
#include "arch/arch.hpp"
#include "trace/tracepoint_codec.hpp"
#include "protocol/hex.hpp"
#include "protocol/replies.hpp"
#include "protocol/requests.hpp"
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tpagent::server {

using namespace protocol;

namespace {
experiment::TraceExperiment& experiment(Session& s) {
    return s.server().experiment();
}

std::string status_to_reply(const Status& st) {
    return st ? reply_ok() : reply_error_text(st.error());
}

// Fast tracepoints collected through traps, said on gdb's console before QTStart's OK (gdb
// prints `O` packets that come before a reply): the first few, then how many more.
constexpr std::size_t kTrapSpeedLinesShown = 10;
void tell_trap_speed(Session& s) {
    const auto lines = experiment(s).fast_tracepoint_lines(s.live_inferior(), true);
    std::string text;
    for (std::size_t i = 0; i < lines.size() && i < kTrapSpeedLinesShown; ++i)
        text += lines[i] + "\n";
    if (lines.size() > kTrapSpeedLinesShown)
        text += fmt::format("... and {} more (monitor tracepoints lists them all).\n",
                            lines.size() - kTrapSpeedLinesShown);
    if (!text.empty()) s.send_console(text);
}

// QTStart with gdb relocating fast tracepoints' instructions: the reply is gdb's next
// qRelocInsn request while there is one; gdb's answer comes back here.
std::string start_reply(Session& s, const Status& st) {
    if (!st) return reply_error_text(st.error());
    auto move = experiment(s).relocation_request();
    if (!move) {
        tell_trap_speed(s);
        return reply_ok();
    }
    s.await_reloc_answer([](Session& s, std::string_view answer) {
        auto length = parse_reloc_insn_answer(answer);
        if (!length) {
            experiment(s).abandon_relocation(s.live_inferior());
            return reply_error_text(length.error());
        }
        return start_reply(s, experiment(s).relocated(s.live_inferior(), *length));
    });
    return fmt::format("qRelocInsn:{:x};{:x}", move->from, move->to);
}
} // namespace

std::string handle_trace_init(Session& s, std::string_view) {
    // tstart during a run ("Start a new run?"): gdb's QTinit ends the old run, as gdbserver's.
    if (experiment(s).running()) experiment(s).stop(s.live_inferior());
    experiment(s).abandon_relocation(s.live_inferior());
    experiment(s).init();
    s.leave_trace_frame();
    return reply_ok();
}

// A QTDP or QTDPsrc packet that does not parse still goes to the experiment: it ends the
// definition in progress all the same.
std::string handle_trace_define(Session& s, std::string_view args) {
    auto packet = trace::parse_tracepoint_packet(args, experiment(s).table().register_count());
    return status_to_reply(experiment(s).define(std::move(packet), s.live_inferior()));
}

std::string handle_trace_source(Session& s, std::string_view args) {
    return status_to_reply(
        experiment(s).add_source(trace::parse_source_packet(args), s.live_inferior()));
}

std::string handle_trace_variable(Session& s, std::string_view args) {
    auto variable = trace::parse_variable_definition(args);
    if (!variable) return reply_error_text(variable.error());
    experiment(s).variables().define(std::move(*variable));
    return reply_ok();
}

// QTro lists the executable's read-only sections at their link-time addresses (wrong for a
// PIE) and no library: a trace frame shows the read-only image of every ELF object where the
// program has it instead (handle_read_memory, Target::read_only_image_extent). The ranges are
// checked, and acknowledged.
std::string handle_trace_readonly(Session&, std::string_view args) {
    auto ranges = parse_readonly_ranges(args);
    if (!ranges) return reply_error_text(ranges.error());
    return reply_ok();
}

std::string handle_trace_disconnected(Session& s, std::string_view args) {
    if (args != "0" && args != "1") return reply_error(ErrorCode::BadPacket);
    experiment(s).set_disconnected_tracing(args == "1");
    return reply_ok();
}

std::string handle_trace_buffer_setting(Session& s, std::string_view args) {
    auto setting = trace::parse_buffer_setting(args);
    if (!setting) return reply_error_text(setting.error());
    return status_to_reply(experiment(s).set_buffer(*setting));
}

std::string handle_trace_notes(Session& s, std::string_view args) {
    auto notes = parse_trace_notes(args);
    if (!notes) return reply_error_text(notes.error());
    experiment(s).set_notes(*notes);
    return reply_ok();
}

std::string handle_trace_start(Session& s, std::string_view) {
    s.leave_trace_frame();
    // gdb relocates x86 instructions only; elsewhere --relocate-with-gdb is ignored (told at
    // start-up) and tpagent's own relocator moves them.
    const bool gdb_relocates = s.server().options().relocate_with_gdb &&
                               s.gdb_features().reloc_insn &&
                               arch::host_architecture().gdb_relocates_instructions();
    return start_reply(s, experiment(s).start(s.live_inferior(), gdb_relocates));
}

std::string handle_trace_stop(Session& s, std::string_view) {
    experiment(s).stop(s.live_inferior());
    return reply_ok();
}

// The shortest instruction gdb may place a fast tracepoint at (tracepoint-packets.md,
// qTMinFTPILen), loaded agent or not: on x86-64 any, since the jump displaces the next
// instructions where that is safe, and a trap collects the tracepoint where it is not.
std::string handle_min_fast_tracepoint_length(Session&, std::string_view) {
    return fmt::format("{:x}", arch::host_architecture().fast_tracepoint_instruction_minimum());
}

std::string handle_trace_enable(Session& s, std::string_view args) {
    auto key = trace::parse_tracepoint_key(args);
    if (!key) return reply_error_text(key.error());
    return status_to_reply(experiment(s).set_enabled(*key, true, s.live_inferior()));
}

std::string handle_trace_disable(Session& s, std::string_view args) {
    auto key = trace::parse_tracepoint_key(args);
    if (!key) return reply_error_text(key.error());
    return status_to_reply(experiment(s).set_enabled(*key, false, s.live_inferior()));
}

std::string handle_trace_status(Session& s, std::string_view) {
    return experiment(s).status_reply();
}

std::string handle_tracepoint_status(Session& s, std::string_view args) {
    auto key = trace::parse_tracepoint_key(args);
    if (!key) return reply_error(key.error());
    const auto* tp = experiment(s).table().find(*key);
    if (!tp) return reply_error(ErrorCode::NotFound);
    return trace::format_counters(tp->counters);
}

std::string handle_trace_variable_value(Session& s, std::string_view args) {
    auto num = parse_hex_u64(args);
    if (!num || *num > 0xffffffff) return reply_error(ErrorCode::BadPacket);
    auto number = static_cast<std::uint32_t>(*num);
    if (s.trace_frame()) {
        auto frame = experiment(s).buffer().frame(*s.trace_frame());
        return trace::format_tsv_value(frame ? frame->variable(number) : std::nullopt);
    }
    return experiment(s).variables().value_reply(number);
}

std::string handle_tracepoints_first(Session& s, std::string_view) {
    return s.begin_upload(Session::Upload::Tracepoints, experiment(s).table().upload());
}

std::string handle_tracepoints_next(Session& s, std::string_view) {
    return s.continue_upload(Session::Upload::Tracepoints);
}

std::string handle_trace_variables_first(Session& s, std::string_view) {
    return s.begin_upload(Session::Upload::Variables, experiment(s).variables().upload());
}

std::string handle_trace_variables_next(Session& s, std::string_view) {
    return s.continue_upload(Session::Upload::Variables);
}

std::string handle_trace_frame(Session& s, std::string_view args) {
    auto query = trace::parse_frame_query(args);
    if (!query) return reply_error(query.error());
    if (auto* n = std::get_if<trace::FrameByNumber>(&*query); n && n->number < 0) {
        s.leave_trace_frame(); // tfind none: back to the live program
        return reply_ok();
    }
    auto found = experiment(s).buffer().find(*query, s.trace_frame());
    if (!found) return trace::frame_not_found_reply();
    s.select_trace_frame(found->number);
    return trace::frame_found_reply(found->number, found->tracepoint);
}

std::string handle_trace_buffer_read(Session& s, std::string_view args) {
    auto range = parse_memory_range(args);
    if (!range) return reply_error(range.error());
    const auto& buffer = experiment(s).buffer();
    if (range->addr >= buffer.raw_size()) return "l";
    std::vector<std::uint8_t> bytes(std::min<std::uint64_t>(range->length, kPacketSize / 2));
    std::size_t got = buffer.read_raw(range->addr, bytes);
    if (got == 0) return "l";
    return to_hex(std::span(bytes.data(), got));
}

namespace {
// write_trace_file() writes a temporary file beside `path` and renames it into place, and its
// errors name that file. What keeps it from starting is found here first, in terms of the file
// gdb asked for (`asked`; `path` is where it goes, inside --save-dir).
Status can_save_to(const std::string& asked, const std::string& path) {
    auto refuse = [&](int error) {
        const std::string shown = asked == path ? asked : fmt::format("{} ({})", asked, path);
        return make_error(ErrorCode::SystemError,
                          fmt::format("cannot create {}: {}", shown, std::strerror(error)));
    };
    struct stat st {};
    if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return refuse(EISDIR);
    std::string dir = std::filesystem::path(path).parent_path().string();
    if (access(dir.empty() ? "." : dir.c_str(), W_OK | X_OK) != 0) return refuse(errno);
    return ok_status();
}
} // namespace

std::string handle_trace_save(Session& s, std::string_view args) {
    auto name = hex_to_text(args);
    if (!name) return reply_error(name.error());
    auto path = experiment::resolve_save_path(*name, s.server().options().save_dir);
    if (!path) return reply_error_text(path.error());
    if (auto can = can_save_to(*name, *path); !can) return reply_error_text(can.error());
    auto xml = arch::host_architecture().feature_xml("target.xml");
    return status_to_reply(experiment::write_trace_file(
        *path, experiment(s), xml ? *xml : std::string(), s.server().options().save_dir));
}

namespace {
// qXfer:<object>:read of the selected trace frame: `part` gives the object's bytes.
std::string xfer_frame_object(Session& s, std::string_view args,
                              const std::function<std::string(const trace::FrameView&)>& part) {
    auto req = parse_xfer_read(args);
    if (!req) return reply_error(req.error());
    if (!s.trace_frame())
        return reply_error_text(make_error(ErrorCode::NotAllowed, "no trace frame selected"));
    auto frame = experiment(s).buffer().frame(*s.trace_frame());
    if (!frame) return reply_error(ErrorCode::NotFound);
    return xfer_reply(part(*frame), req->offset,
                      std::min<std::uint64_t>(req->length, kPacketSize / 2 - 16));
}
} // namespace

std::string handle_xfer_traceframe_info(Session& s, std::string_view args) {
    return xfer_frame_object(s, args,
                             [](const trace::FrameView& f) { return f.traceframe_info(); });
}

// `$_sdata`: the frame's static tracepoint data (the object the manual calls sdata).
std::string handle_xfer_static_trace_data(Session& s, std::string_view args) {
    return xfer_frame_object(s, args, [](const trace::FrameView& f) {
        const auto data = f.static_data();
        return std::string(data.begin(), data.end());
    });
}

} // namespace tpagent::server
