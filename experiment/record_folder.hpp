// A folder of numbered trace files on the target (--record's trace-NNNNNN.tf, the snapshots'
// snapshot-NNNNNN.tf): their names, their numbering, and the free space kept on its disk.
#pragma once
#include "base/result.hpp"
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tpagent::experiment {

// DIR/PREFIXNNNNNN.tf.
std::string numbered_file_path(const std::string& dir, std::string_view prefix,
                               std::uint64_t number);
// The highest number of a PREFIXNNNNNN.tf already in `dir` (0: none): new files go on after
// it, never over an earlier run's.
std::uint64_t last_file_number(const std::string& dir, std::string_view prefix);
// The folder's entries synced: a file's name too survives a power cut.
void sync_dir(const std::string& dir);
// The free space kept by default: a twentieth of the disk.
std::uint64_t default_floor(const std::string& dir);
// Why nothing is written now, if the disk's free space is under `min_free`.
std::optional<Error> under_floor(const std::string& dir, std::uint64_t min_free);

} // namespace tpagent::experiment
