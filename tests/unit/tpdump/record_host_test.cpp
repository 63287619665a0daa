// `tpdump record` (tools/tpdump/record_host.hpp) against a board end written here from the wire
// format, so that a link can be cut at an exact byte: in the middle of an operation, after
// operations the host applied but had not yet acknowledged. What the host then says it kept
// (its Resume) must be what its folder says it kept: the board forgets those operations, so a
// host killed after that and started again on the folder must not ask for them again.
#include "tools/tpdump/record_host.hpp"
#include "trace/record_stream_wire.hpp"
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <netinet/in.h>
#include <poll.h>
#include <span>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace tpagent;

namespace {

class Board {
  public:
    Board() {
        listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t size = sizeof address;
        REQUIRE(bind(listener_, reinterpret_cast<sockaddr*>(&address), size) == 0);
        REQUIRE(listen(listener_, 4) == 0);
        REQUIRE(getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &size) == 0);
        port_ = ntohs(address.sin_port);
    }
    ~Board() {
        if (link_ >= 0) close(link_);
        close(listener_);
    }
    Board(const Board&) = delete;
    Board& operator=(const Board&) = delete;

    unsigned short port() const { return port_; }

    // The next host to connect, waited for at most 10 s.
    bool accept_host() {
        pollfd p{listener_, POLLIN, 0};
        if (poll(&p, 1, 10000) != 1) return false;
        link_ = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        return link_ >= 0;
    }
    void cut() {
        close(link_);
        link_ = -1;
    }
    bool send_bytes(std::span<const std::uint8_t> bytes) {
        while (!bytes.empty()) {
            const ssize_t n = send(link_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
            if (n <= 0) return false;
            bytes = bytes.subspan(static_cast<std::size_t>(n));
        }
        return true;
    }
    // Exactly `size` bytes, waited for at most 10 s; fewer if the host closed the link.
    std::vector<std::uint8_t> receive(std::size_t size) {
        std::vector<std::uint8_t> bytes(size);
        std::size_t got = 0;
        while (got < size) {
            pollfd p{link_, POLLIN, 0};
            if (poll(&p, 1, 10000) != 1) break;
            const ssize_t n = recv(link_, bytes.data() + got, size - got, 0);
            if (n <= 0) break;
            got += static_cast<std::size_t>(n);
        }
        bytes.resize(got);
        return bytes;
    }

  private:
    int listener_ = -1, link_ = -1;
    unsigned short port_ = 0;
};

void append(std::vector<std::uint8_t>& out, std::span<const std::uint8_t> bytes) {
    out.insert(out.end(), bytes.begin(), bytes.end());
}

void append_op(std::vector<std::uint8_t>& out, trace::RecordOpKind kind, std::uint64_t seq,
               std::uint64_t offset, std::span<const std::uint8_t> bytes) {
    append(out, trace::encode_op_header({kind, seq, 1, offset, bytes.size()}));
    append(out, bytes);
}

std::uint64_t applied_in_folder(const std::filesystem::path& dir) {
    std::ifstream in(dir / ".tpdump-record");
    std::string w1, w2;
    std::uint64_t stream = 0, applied = 0;
    in >> w1 >> std::hex >> stream >> w2 >> std::dec >> applied;
    return w2 == "applied" ? applied : 0;
}

std::string file_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The host end run in a thread until the test is done with it.
class Host {
  public:
    Host(unsigned short port, std::string dir)
        : messages_(std::tmpfile()), thread_([this, port, dir = std::move(dir)] {
              tpdump::record_from_board({"127.0.0.1", std::to_string(port)}, dir, messages_);
          }) {}
    ~Host() {
        tpdump::request_stop();
        thread_.join();
        std::fclose(messages_);
    }
    Host(const Host&) = delete;
    Host& operator=(const Host&) = delete;

  private:
    std::FILE* messages_;
    std::thread thread_;
};

} // namespace

TEST_CASE("tpdump record: a link cut mid-operation resumes from what the folder kept",
          "[tpdump-record]") {
    char name[] = "/tmp/tpdump-record-XXXXXX";
    REQUIRE(mkdtemp(name));
    const std::filesystem::path dir = name;
    constexpr std::uint64_t kStream = 0x5eed;
    const std::string abc = "abc", tail(100, 't');
    const auto abc_bytes = std::span(reinterpret_cast<const std::uint8_t*>(abc.data()), 3);
    const auto tail_bytes = std::span(reinterpret_cast<const std::uint8_t*>(tail.data()), 100);
    {
        Board board;
        Host host(board.port(), dir.string());

        // Link 1: a new folder (nothing kept), then a file begun and written, then the link cut
        // 10 bytes into the next write. All in one send: the host sees more coming after each
        // of the first two, so it acknowledges neither.
        REQUIRE(board.accept_host());
        REQUIRE(board.send_bytes(trace::encode_hello({kStream, 1})));
        auto resume_bytes = board.receive(trace::kRecordHelloSize);
        REQUIRE(resume_bytes.size() == trace::kRecordHelloSize);
        auto resume = trace::decode_resume(
            std::span<const std::uint8_t, trace::kRecordHelloSize>(resume_bytes));
        REQUIRE(resume);
        CHECK(resume->number == 0);
        std::vector<std::uint8_t> ops;
        append_op(ops, trace::RecordOpKind::Create, 1, 0, {});
        append_op(ops, trace::RecordOpKind::Write, 2, 0, abc_bytes);
        append(ops, trace::encode_op_header({trace::RecordOpKind::Write, 3, 1, 3, 100}));
        append(ops, tail_bytes.first(10));
        REQUIRE(board.send_bytes(ops));
        board.cut();

        // Link 2: the host says it kept operation 2, so the board may forget 1 and 2; its
        // folder must say so too before it is said (a host killed now, and started again,
        // would otherwise ask for operations the board no longer has).
        REQUIRE(board.accept_host());
        REQUIRE(board.send_bytes(trace::encode_hello({kStream, 1})));
        resume_bytes = board.receive(trace::kRecordHelloSize);
        REQUIRE(resume_bytes.size() == trace::kRecordHelloSize);
        resume = trace::decode_resume(
            std::span<const std::uint8_t, trace::kRecordHelloSize>(resume_bytes));
        REQUIRE(resume);
        CHECK(resume->stream == kStream);
        CHECK(resume->number == 2);
        CHECK(applied_in_folder(dir) == 2);
        CHECK(file_text(dir / "trace-000001.tf") == "abc");

        // The rest from operation 3; the file's end is acknowledged at once.
        ops.clear();
        append_op(ops, trace::RecordOpKind::Write, 3, 3, tail_bytes);
        append_op(ops, trace::RecordOpKind::End, 4, 0, {});
        REQUIRE(board.send_bytes(ops));
        const auto ack = board.receive(trace::kRecordAckSize);
        REQUIRE(ack.size() == trace::kRecordAckSize);
        CHECK(trace::decode_ack(std::span<const std::uint8_t, trace::kRecordAckSize>(ack)) == 4);
        CHECK(applied_in_folder(dir) == 4);
    }
    CHECK(file_text(dir / "trace-000001.tf") == abc + tail);
    std::filesystem::remove_all(dir);
}
