// Where a recording's files go (experiment/trace_recorder.hpp): the recorder decides what
// goes into which file and when a file ends; a sink makes the files. FolderSink
// (record_folder.hpp) makes them in a folder on the target; the record stream
// (server/record_stream.hpp) sends them to a host, which makes them there.
#pragma once
#include "base/result.hpp"
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace tpagent::experiment {

class RecordSink {
  public:
    virtual ~RecordSink() = default;

    // Before a recording: the place made if it can be (an error shows at the first file).
    virtual void prepare() = 0;
    // The name of file `number` (messages, RecordTotals), and the highest number already
    // there (0: none), which new files go on after.
    virtual std::string name(std::uint64_t number) const = 0;
    virtual std::uint64_t last_number() const = 0;
    // The free space kept by default, and why nothing may be written now, if so.
    virtual std::uint64_t default_floor() const = 0;
    virtual std::optional<Error> under_floor(std::uint64_t min_free) const = 0;

    // Whether frames must wait in the trace buffer: the sink holds as much as it may of what it
    // has not delivered yet (a host not reading, or not connected).
    virtual bool backlogged() const { return false; }

    // File `number` begins; it is the current file until end() or abandon().
    virtual Status create(std::uint64_t number) = 0;
    virtual bool has_current() const = 0;
    // Bytes at the end of the current file: all of them, or none (what a failed write left
    // is cut back).
    virtual Status append(std::span<const std::uint8_t> bytes) = 0;
    // Bytes written over the current file's, at `offset` (its status line, restated).
    virtual Status rewrite(std::uint64_t offset, std::span<const std::uint8_t> bytes) = 0;
    // The current file synced and closed.
    virtual Status end() = 0;
    // The current file closed and removed (it holds no frame).
    virtual void abandon() = 0;
    // An ended file removed (past the files kept); gone already is no error.
    virtual Status remove(std::uint64_t number) = 0;
};

} // namespace tpagent::experiment
