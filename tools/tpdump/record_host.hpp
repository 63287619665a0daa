// `tpdump record BOARD:PORT DIR`: the host end of a record stream (tpagent --record-host,
// server/record_stream.hpp). It connects to the board, applies the recording's file operations
// to DIR (the same trace-NNNNNN.tf files the board would have made), and says after each batch
// which operation it has kept, so that the board forgets them. It keeps that in
// DIR/.tpdump-record (the stream, the last operation kept, the number its files go on after), so
// after a link cut, or after it was itself killed and started again, the stream goes on from
// the next operation: no gap. A new stream (tpagent started again) goes on after the files
// already in DIR, the newest of them sealed first if the board's end cut it short. Connects
// again every half second while the board is away; runs until SIGINT or SIGTERM.
#pragma once
#include <cstdio>
#include <optional>
#include <span>
#include <string>

namespace tpagent::tpdump {

// `args`: what follows "record". An exit code.
int record_main(std::span<char* const> args);

// BOARD as HOST:PORT, [V6]:PORT, :PORT or PORT (this machine): host and port, or nothing if
// it is not of that shape (a folder's name, say).
struct BoardAddress {
    std::string host, port;
};
std::optional<BoardAddress> parse_board(const std::string& text);

// SIGINT and SIGTERM end record_from_board (and whatever asks stop_requested) cleanly.
void stop_on_signals();
bool stop_requested();
void request_stop();
// Receives the stream from `board` into `dir` until stop_requested(); its lines go to
// `messages`. An exit code.
int record_from_board(const BoardAddress& board, const std::string& dir, std::FILE* messages);

} // namespace tpagent::tpdump
