// A folder of numbered trace files on the target (--record's trace-NNNNNN.tf, the snapshots'
// snapshot-NNNNNN.tf): their names, their numbering, and the free space kept on its disk.
#pragma once
#include "experiment/record_sink.hpp"
#include "base/dir_sync.hpp"
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
// The free space kept by default: a twentieth of the disk.
std::uint64_t default_floor(const std::string& dir);
// Why nothing is written now, if the disk's free space is under `min_free`.
std::optional<Error> under_floor(const std::string& dir, std::uint64_t min_free);

// A recording's files in a folder on the target: DIR/PREFIXNNNNNN.tf.
class FolderSink final : public RecordSink {
  public:
    FolderSink(std::string dir, std::string prefix)
        : dir_(std::move(dir)), prefix_(std::move(prefix)) {}
    FolderSink(const FolderSink&) = delete;
    FolderSink& operator=(const FolderSink&) = delete;
    ~FolderSink() override;

    void prepare() override;
    std::string name(std::uint64_t number) const override;
    std::uint64_t last_number() const override;
    std::uint64_t default_floor() const override;
    std::optional<Error> under_floor(std::uint64_t min_free) const override;
    Status create(std::uint64_t number) override;
    bool has_current() const override { return fd_ >= 0; }
    Status append(std::span<const std::uint8_t> bytes) override;
    Status rewrite(std::uint64_t offset, std::span<const std::uint8_t> bytes) override;
    Status end() override;
    void abandon() override;
    Status remove(std::uint64_t number) override;

  private:
    std::string dir_, prefix_;
    int fd_ = -1;
    std::uint64_t current_ = 0; // the current file's number
    std::uint64_t size_ = 0;    // its bytes written
    bool named_ = false;        // renamed from its .new name (at its first bytes)
};

} // namespace tpagent::experiment
