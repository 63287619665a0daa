// --record-host: a recording's files sent to a host over TCP instead of made on the target
// (boards with little storage). The recorder's file operations (create, write at an offset,
// end, remove) are numbered and kept in a log until the host says it has kept them; the host
// tool (`tpdump record BOARD:PORT DIR`) applies them to the same files in its folder. After a
// link cut, or a restart of the host tool, the host says the last operation it kept and the
// stream goes on from the next: no gap. While the log holds its bound, the recorder takes no
// frames (RecordSink::backlogged): they wait in the trace buffer, and what overflows it is
// counted there. Wire format: trace/record_stream_wire.hpp.
#pragma once
#include "base/asio.hpp"
#include "experiment/record_sink.hpp"
#include "server/transport.hpp"
#include "trace/record_stream_wire.hpp"
#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace tpagent::server {

class RecordStream final : public experiment::RecordSink {
  public:
    RecordStream(boost::asio::io_context& io, Endpoint endpoint, AddressFilter allowed,
                 std::uint64_t backlog_bytes);
    RecordStream(const RecordStream&) = delete;
    RecordStream& operator=(const RecordStream&) = delete;
    ~RecordStream() override;

    // Binds the port (an error names it); then hosts are accepted, one at a time.
    Status open();
    void announce() const;
    void close();
    // Where it goes and how far the host is: for tstatus and `monitor record`.
    std::string describe() const;
    unsigned short port() const;
    // The operations no host has kept yet, their bytes, and the last one the host kept.
    std::size_t undelivered() const { return ops_.size(); }
    std::uint64_t undelivered_bytes() const { return log_bytes_; }
    std::uint64_t kept() const { return acked_; }

    void prepare() override {}
    std::string name(std::uint64_t number) const override;
    std::uint64_t last_number() const override { return last_file_; }
    std::uint64_t default_floor() const override { return 0; }
    std::optional<Error> under_floor(std::uint64_t) const override { return std::nullopt; }
    bool backlogged() const override { return log_bytes_ >= backlog_bytes_; }
    Status create(std::uint64_t number) override;
    bool has_current() const override { return has_current_; }
    Status append(std::span<const std::uint8_t> bytes) override;
    Status rewrite(std::uint64_t offset, std::span<const std::uint8_t> bytes) override;
    Status end() override;
    void abandon() override;
    Status remove(std::uint64_t number) override;

  private:
    struct Op {
        std::array<std::uint8_t, trace::kRecordOpHeaderSize> header;
        std::vector<std::uint8_t> bytes;
    };
    // No host, a host being greeted, or one the operations go to.
    enum class Link { None, Greeting, Streaming };

    void log(trace::RecordOpKind kind, std::uint64_t file, std::uint64_t offset,
             std::span<const std::uint8_t> bytes = {});
    void accept();
    void greet();
    void read_acks();
    void send();
    void forget_up_to(std::uint64_t seq);
    void drop_host(const std::string& why);
    std::uint64_t next_seq() const { return first_seq_ + ops_.size(); }

    boost::asio::io_context& io_;
    Endpoint endpoint_;
    AddressFilter allowed_;
    std::uint64_t backlog_bytes_;
    std::uint64_t stream_id_;
    std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;

    // The log: operations first_seq_ .. next_seq()-1, not yet kept by a host.
    std::deque<Op> ops_;
    std::uint64_t first_seq_ = 1;
    std::uint64_t log_bytes_ = 0;
    std::uint64_t acked_ = 0; // the last operation the host served said it kept

    std::uint64_t last_file_ = 0, current_ = 0, current_size_ = 0;
    bool has_current_ = false;

    // The host served now; handlers of an earlier one see another generation and stop.
    std::unique_ptr<boost::asio::ip::tcp::socket> socket_;
    std::uint64_t generation_ = 0;
    Link link_ = Link::None;
    std::string host_;       // "host H, port P"
    std::uint64_t sent_ = 0; // the last operation sent whole to it
    // A write under way (of this link or a dropped one), from this operation on: its buffers
    // point into the log.
    bool writing_ = false;
    std::uint64_t writing_from_ = 0;
    boost::asio::steady_timer greeting_timer_;
    std::array<std::uint8_t, trace::kRecordHelloSize> hello_{}, resume_{};
    std::array<std::uint8_t, trace::kRecordAckSize> ack_{};
};

} // namespace tpagent::server
