// See record_stream.hpp.
#include "server/record_stream.hpp"
#include <cstdio>
#include <fmt/format.h>
#include <random>
#include <spdlog/spdlog.h>

namespace tpagent::server {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {
// Operations gathered into one write to the host.
constexpr std::size_t kWriteOps = 64;

void say(const std::string& line) {
    fmt::print(stderr, "{}\n", line);
    std::fflush(stderr);
}

std::uint64_t new_stream_id() {
    std::random_device random;
    const std::uint64_t id = (std::uint64_t{random()} << 32) ^ random();
    return id == 0 ? 1 : id;
}
} // namespace

RecordStream::RecordStream(asio::io_context& io, Endpoint endpoint, AddressFilter allowed,
                           std::uint64_t backlog_bytes)
    : io_(io), endpoint_(std::move(endpoint)), allowed_(std::move(allowed)),
      backlog_bytes_(backlog_bytes), stream_id_(new_stream_id()) {}

RecordStream::~RecordStream() {
    close();
}

Status RecordStream::open() {
    auto acceptor = listen_tcp(io_, endpoint_);
    if (!acceptor)
        return make_error(acceptor.error().code, fmt::format("--record-host {}: {}", endpoint_.spec,
                                                             acceptor.error().text));
    acceptor_ = std::move(*acceptor);
    accept();
    return ok_status();
}

unsigned short RecordStream::port() const {
    error_code ec;
    return acceptor_ ? acceptor_->local_endpoint(ec).port() : 0;
}

void RecordStream::announce() const {
    say(fmt::format("Record stream on port {}{}", port(),
                    endpoint_.host == "127.0.0.1" || endpoint_.host == "::1"
                        ? fmt::format(" (this machine only; use --record-host 0.0.0.0:{} to "
                                      "stream to another)",
                                      port())
                        : std::string()));
}

void RecordStream::close() {
    error_code ec;
    if (acceptor_) acceptor_->close(ec);
    if (socket_) socket_->close(ec);
    ++generation_;
    link_ = Link::None;
}

std::string RecordStream::describe() const {
    std::string s = fmt::format("the host stream on port {}", port());
    if (link_ == Link::Streaming)
        s += fmt::format(" (to {}", host_);
    else
        s += " (no host connected";
    if (!ops_.empty())
        s += fmt::format("; {} KiB not yet kept by a host{}", log_bytes_ >> 10,
                         backlogged() ? ", frames waiting in the buffer" : "");
    return s + ")";
}

std::string RecordStream::name(std::uint64_t number) const {
    return fmt::format("stream file {}", number);
}

void RecordStream::log(trace::RecordOpKind kind, std::uint64_t file, std::uint64_t offset,
                       std::span<const std::uint8_t> bytes) {
    Op& op = ops_.emplace_back();
    op.header = trace::encode_op_header({kind, next_seq() - 1, file, offset, bytes.size()});
    op.bytes.assign(bytes.begin(), bytes.end());
    log_bytes_ += trace::kRecordOpHeaderSize + bytes.size();
    send();
}

Status RecordStream::create(std::uint64_t number) {
    last_file_ = std::max(last_file_, number);
    current_ = number;
    current_size_ = 0;
    has_current_ = true;
    log(trace::RecordOpKind::Create, number, 0);
    return ok_status();
}

Status RecordStream::append(std::span<const std::uint8_t> bytes) {
    log(trace::RecordOpKind::Write, current_, current_size_, bytes);
    current_size_ += bytes.size();
    return ok_status();
}

Status RecordStream::rewrite(std::uint64_t offset, std::span<const std::uint8_t> bytes) {
    log(trace::RecordOpKind::Write, current_, offset, bytes);
    return ok_status();
}

Status RecordStream::end() {
    log(trace::RecordOpKind::End, current_, 0);
    has_current_ = false;
    return ok_status();
}

void RecordStream::abandon() {
    log(trace::RecordOpKind::Remove, current_, 0);
    has_current_ = false;
}

Status RecordStream::remove(std::uint64_t number) {
    log(trace::RecordOpKind::Remove, number, 0);
    return ok_status();
}

void RecordStream::accept() {
    acceptor_->async_accept([this](const error_code& ec, asio::ip::tcp::socket socket) {
        if (ec) {
            if (ec != asio::error::operation_aborted && acceptor_ && acceptor_->is_open()) accept();
            return;
        }
        error_code e2;
        const auto remote = socket.remote_endpoint(e2);
        const std::string from =
            e2 ? "host ?, port 0"
               : fmt::format("host {}, port {}", remote.address().to_string(), remote.port());
        if (!allowed_.empty() && (e2 || !allowed_.allows(remote.address()))) {
            say(fmt::format("Refused a record stream connection from {}: not in --allow", from));
            socket.close(e2);
        } else {
            // The newest host wins: the one before may be a link that died unseen.
            if (link_ != Link::None) drop_host("another host connected");
            socket.set_option(asio::ip::tcp::no_delay(true), e2);
            close_on_exec(socket.native_handle());
            detect_vanished_peer(socket);
            socket_ = std::make_unique<asio::ip::tcp::socket>(std::move(socket));
            host_ = from;
            ++links_;
            say(fmt::format("Record stream to {}", from));
            greet();
        }
        if (acceptor_ && acceptor_->is_open()) accept();
    });
}

// Hello (the stream and the oldest operation held), then the host's Resume: what it kept.
void RecordStream::greet() {
    link_ = Link::Greeting;
    const std::uint64_t gen = ++generation_;
    hello_ = trace::encode_hello({stream_id_, first_seq_});
    asio::async_write(
        *socket_, asio::buffer(hello_), [this, gen](const error_code& ec, std::size_t) {
            if (gen != generation_) return;
            if (ec) return drop_host(ec.message());
            asio::async_read(
                *socket_, asio::buffer(resume_), [this, gen](const error_code& ec, std::size_t) {
                    if (gen != generation_) return;
                    if (ec) return drop_host(ec.message());
                    auto resume = trace::decode_resume(resume_);
                    if (!resume) return drop_host(resume.error().text);
                    // A host that kept part of this stream goes on after it; any other from the
                    // oldest operation held (it sees from the Hello what is gone).
                    std::uint64_t kept = resume->stream == stream_id_ ? resume->number : 0;
                    if (kept >= next_seq())
                        return drop_host("it says it kept operations never sent");
                    forget_up_to(kept);
                    sent_ = std::max(kept, first_seq_ - 1);
                    sending_ = 0;
                    link_ = Link::Streaming;
                    read_acks();
                    send();
                });
        });
}

void RecordStream::read_acks() {
    const std::uint64_t gen = generation_;
    asio::async_read(*socket_, asio::buffer(ack_), [this, gen](const error_code& ec, std::size_t) {
        if (gen != generation_) return;
        if (ec) return drop_host(ec == asio::error::eof ? "it closed the link" : ec.message());
        const std::uint64_t kept = trace::decode_ack(ack_);
        if (kept >= next_seq()) return drop_host("it acknowledged operations never sent");
        acked_ = std::max(acked_, kept);
        forget_up_to(std::min(acked_, sent_));
        read_acks();
    });
}

// Operations sent whole and kept by the host leave the log (those of a write under way stay:
// its buffers point into them).
void RecordStream::forget_up_to(std::uint64_t seq) {
    acked_ = std::max(acked_, seq);
    while (!ops_.empty() && first_seq_ <= seq && (sending_ == 0 || first_seq_ <= sent_)) {
        log_bytes_ -= trace::kRecordOpHeaderSize + ops_.front().bytes.size();
        ops_.pop_front();
        ++first_seq_;
    }
}

void RecordStream::send() {
    if (link_ != Link::Streaming || sending_ != 0 || sent_ + 1 >= next_seq()) return;
    std::vector<asio::const_buffer> buffers;
    std::uint64_t seq = sent_ + 1;
    for (; seq < next_seq() && buffers.size() < 2 * kWriteOps; ++seq) {
        const Op& op = ops_[seq - first_seq_];
        buffers.emplace_back(asio::buffer(op.header));
        if (!op.bytes.empty()) buffers.emplace_back(asio::buffer(op.bytes));
    }
    sending_ = seq - 1;
    const std::uint64_t gen = generation_;
    asio::async_write(*socket_, buffers, [this, gen](const error_code& ec, std::size_t) {
        if (gen != generation_) return;
        if (ec) return drop_host(ec.message());
        sent_ = sending_;
        sending_ = 0;
        forget_up_to(std::min(acked_, sent_));
        send();
    });
}

void RecordStream::drop_host(const std::string& why) {
    error_code ec;
    if (socket_) socket_->close(ec);
    ++generation_;
    link_ = Link::None;
    sending_ = 0;
    say(fmt::format("Record stream to {} ended: {}; {} operation(s) ({} KiB) kept for the next "
                    "host",
                    host_, why, ops_.size(), log_bytes_ >> 10));
}

} // namespace tpagent::server
