// `tsave -r` (QTSave): the trace as a trace file written on the target, in the format of the GDB
// manual's "Trace File Format" (with gdb's practice: hex `R` size, `status` without its `T`).
#pragma once
#include "base/result.hpp"
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tpagent::experiment {

class TraceExperiment;

// Where QTSave may write: with a save directory, relative names go inside it and absolute names
// must already point inside it; `..` is refused either way.
Result<std::string> resolve_save_path(std::string_view name,
                                      const std::optional<std::string>& save_dir);

// The text section of a trace file of the experiment as it is now: the header, `R`, the
// target description, `status`, `tsv` and `tp` lines, and the blank line before the frames.
// `status_payload` (without its T) replaces the experiment's own status.
std::string trace_file_text_section(TraceExperiment& experiment, std::string_view tdesc_xml,
                                    std::optional<std::string_view> status_payload = {});

// Writes to a temporary file beside `path` and renames it into place, so a crash never leaves a
// half-written trace file under the requested name. With `confine_to` (the save directory,
// `path` inside it), the folder is resolved beneath it: a symbolic link leading out of it is
// refused; a link under the file's own name is replaced, never followed.
Status write_trace_file(const std::string& path, TraceExperiment& experiment,
                        std::string_view tdesc_xml,
                        const std::optional<std::string>& confine_to = std::nullopt);
// The same for a text section and frames already made (a snapshot's).
Status write_trace_file(const std::string& path, std::string_view text,
                        std::span<const std::uint8_t> frames,
                        const std::optional<std::string>& confine_to);

} // namespace tpagent::experiment
