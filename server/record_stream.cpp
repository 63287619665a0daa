// See record_stream.hpp.
#include "server/record_stream.hpp"
#include "server/debug_output.hpp"
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
// A host must answer the Hello within this: until then no other may connect.
constexpr std::chrono::seconds kGreetingTime{10};

std::uint64_t new_stream_id() {
    std::random_device random;
    const std::uint64_t id = (std::uint64_t{random()} << 32) ^ random();
    return id == 0 ? 1 : id;
}
} // namespace

RecordStream::RecordStream(asio::io_context& io, Endpoint endpoint, AddressFilter allowed,
                           std::uint64_t backlog_bytes)
    : io_(io), endpoint_(std::move(endpoint)), allowed_(std::move(allowed)),
      backlog_bytes_(backlog_bytes), stream_id_(new_stream_id()), greeting_timer_(io) {}

RecordStream::~RecordStream() {
    error_code ec; // the timer cancels itself
    if (acceptor_) acceptor_->close(ec);
    if (socket_) socket_->close(ec);
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
    debug_output::say(
        fmt::format("Record stream on port {}{}", port(),
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
    greeting_timer_.cancel();
    ++generation_;
    link_ = Link::None;
}

std::string RecordStream::describe() const {
    std::string s = fmt::format("the host stream on port {}", port());
    if (link_ == Link::Streaming)
        s += fmt::format(" (to {}", host_);
    else if (link_ == Link::Greeting)
        s += fmt::format(" ({} connecting", host_);
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
            debug_output::say(
                fmt::format("Refused a record stream connection from {}: not in --allow", from));
            socket.close(e2);
        } else if (link_ != Link::None) {
            // One host at a time: two taking turns would each find the other's operations gone.
            // A link that died unseen is found out within about 25 s (detect_vanished_peer),
            // a host that never answers its Hello within kGreetingTime.
            debug_output::say(fmt::format(
                "Refused a record stream connection from {}: streaming to {}", from, host_));
            socket.close(e2);
        } else {
            socket.set_option(asio::ip::tcp::no_delay(true), e2);
            close_on_exec(socket.native_handle());
            detect_vanished_peer(socket);
            socket_ = std::make_unique<asio::ip::tcp::socket>(std::move(socket));
            host_ = from;
            debug_output::say(fmt::format("Record stream to {}", from));
            greet();
        }
        if (acceptor_ && acceptor_->is_open()) accept();
    });
}

// Hello (the stream and the oldest operation held), then the host's Resume: what it kept.
void RecordStream::greet() {
    link_ = Link::Greeting;
    const std::uint64_t gen = ++generation_;
    greeting_timer_.expires_after(kGreetingTime);
    greeting_timer_.async_wait([this, gen](const error_code& ec) {
        if (!ec && gen == generation_ && link_ == Link::Greeting)
            drop_host("no answer to its greeting");
    });
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
                    const std::uint64_t kept = resume->stream == stream_id_ ? resume->number : 0;
                    if (kept >= next_seq())
                        return drop_host("it says it kept operations never sent");
                    greeting_timer_.cancel();
                    acked_ = kept; // this host's: what an earlier one kept is not its
                    sent_ = std::max(kept, first_seq_ - 1);
                    forget_up_to(kept);
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

// Operations the host has kept leave the log, but none a write still points into (one under
// way, or one a dropped link's socket has not given back yet).
void RecordStream::forget_up_to(std::uint64_t seq) {
    while (!ops_.empty() && first_seq_ <= seq && !(writing_ && first_seq_ >= writing_from_)) {
        log_bytes_ -= trace::kRecordOpHeaderSize + ops_.front().bytes.size();
        ops_.pop_front();
        ++first_seq_;
    }
}

void RecordStream::send() {
    if (link_ != Link::Streaming || writing_ || sent_ + 1 >= next_seq()) return;
    std::vector<asio::const_buffer> buffers;
    std::uint64_t seq = sent_ + 1;
    for (; seq < next_seq() && buffers.size() < 2 * kWriteOps; ++seq) {
        const Op& op = ops_[seq - first_seq_];
        buffers.emplace_back(asio::buffer(op.header));
        if (!op.bytes.empty()) buffers.emplace_back(asio::buffer(op.bytes));
    }
    writing_ = true;
    writing_from_ = sent_ + 1;
    const std::uint64_t gen = generation_, last = seq - 1;
    asio::async_write(*socket_, buffers, [this, gen, last](const error_code& ec, std::size_t) {
        writing_ = false; // the buffers are free again, whichever link this was
        if (gen == generation_) {
            if (ec) return drop_host(ec.message());
            sent_ = last;
        }
        if (link_ == Link::Streaming) forget_up_to(std::min(acked_, sent_));
        send();
    });
}

void RecordStream::drop_host(const std::string& why) {
    error_code ec;
    if (socket_) socket_->close(ec);
    greeting_timer_.cancel();
    ++generation_;
    link_ = Link::None;
    debug_output::say(
        fmt::format("Record stream to {} ended: {}; {} operation(s) ({} KiB) kept for the next "
                    "host",
                    host_, why, ops_.size(), log_bytes_ >> 10));
}

} // namespace tpagent::server
