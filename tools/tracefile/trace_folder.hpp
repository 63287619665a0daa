// A folder tpagent --record wrote (DIR/trace-NNNNNN.tf, rotated) read as one trace: the files
// of its newest run (those whose status gives the same start time as the newest file's), in
// number order, their frames one after another under the newest file's text section (its
// tracepoints' hit counts and its loss counts are the run's latest). Each file is a part, and
// says where it lies in the run, so that what is not in any file shows where it went missing.
// A file cut short (the newest, by a crash) gives its whole frames and its damage.
#pragma once
#include "base/result.hpp"
#include "tools/tracefile/trace_file.hpp"
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <string>
#include <utility>
#include <vector>

namespace tpagent::tracefile {

inline constexpr std::string_view kRecordedPrefix = "trace-";

struct FolderPart {
    std::string path;
    std::size_t first_frame = 0; // its first frame's number in the whole trace
    std::size_t frames = 0;
    std::optional<RecordedFile> recorded; // nothing in a file tpagent did not record
    // The run's frames between the previous part's last and this one's first (not written,
    // or in files removed); before the first part, the run's frames before it.
    std::uint64_t missing_before = 0;
    std::optional<Error> damage;
};

struct TraceFolder {
    TraceFile trace; // frames numbered across the parts
    std::vector<FolderPart> parts;
    std::size_t earlier_files = 0; // of earlier runs, left out
    // Files that could not be read (no whole text section, gone since listed), and why.
    std::vector<std::pair<std::string, Error>> skipped;
};

// The trace-NNNNNN.tf files in `dir`, in number order (full paths).
Result<std::vector<std::string>> recorded_files(const std::string& dir);
// NNNNNN of a path or name trace-NNNNNN.tf; nothing for any other name.
std::optional<std::uint64_t> recorded_file_number(std::string_view path);
// DIR/trace-NNNNNN.tf.
std::string recorded_file_path(const std::string& dir, std::uint64_t number);
// An Error if the folder holds no recorded file that can be read.
Result<TraceFolder> read_trace_folder(const std::string& dir);

} // namespace tpagent::tracefile
