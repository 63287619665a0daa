"""A minimal GDB remote serial protocol client over TCP, for feeding servers bad input.

It does exactly what it is told: no retransmission, no hidden acks beyond the one that
follows a received packet in ack mode, so tests see the server's raw answers.
"""

from __future__ import annotations

import socket
import time


def checksum(payload: bytes) -> bytes:
    return b"%02x" % (sum(payload) & 0xFF)


def frame(payload: bytes | str) -> bytes:
    if isinstance(payload, str):
        payload = payload.encode()
    return b"$" + payload + b"#" + checksum(payload)


def decode_rle(payload: str) -> str:
    """Expand run-length encoding: 'X*n' repeats X (ord(n) - 29) more times."""
    out: list[str] = []
    i = 0
    while i < len(payload):
        if payload[i] == "*" and out:
            out.append(out[-1] * (ord(payload[i + 1]) - 29))
            i += 2
        else:
            out.append(payload[i])
            i += 1
    return "".join(out)


class ProtocolError(AssertionError):
    pass


class RspClient:
    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 5.0) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.timeout = timeout
        self.ack_mode = True
        self._buf = b""

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RspClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # raw bytes

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self, deadline: float) -> bool:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        self.sock.settimeout(left)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return False
        if not data:
            raise ProtocolError(f"server closed the connection (unread: {self._buf!r})")
        self._buf += data
        return True

    def read_byte(self, timeout: float | None = None) -> bytes:
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not self._buf:
            if not self._fill(deadline):
                raise ProtocolError("timed out waiting for a byte")
        byte, self._buf = self._buf[:1], self._buf[1:]
        return byte

    def silent(self, wait: float = 0.3) -> bool:
        """True if the server sends nothing within wait seconds."""
        if self._buf:
            return False
        return not self._fill(time.monotonic() + wait)

    # packets

    def read_ack(self) -> bytes:
        ack = self.read_byte()
        if ack not in (b"+", b"-"):
            raise ProtocolError(f"expected '+' or '-', got {ack + self._buf!r}")
        return ack

    def read_packet(self, timeout: float | None = None) -> str:
        """One '$payload#cc' packet; checks its checksum and acks it in ack mode."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            start = self._buf.find(b"$")
            if start > 0:
                raise ProtocolError(f"junk before packet: {self._buf[:start]!r}")
            end = self._buf.find(b"#", max(start, 0))
            if start == 0 and end >= 0 and len(self._buf) >= end + 3:
                break
            if not self._fill(deadline):
                raise ProtocolError(f"timed out waiting for a packet (got {self._buf!r})")
        payload, sent = self._buf[1:end], self._buf[end + 1 : end + 3]
        self._buf = self._buf[end + 3 :]
        if sent.lower() != checksum(payload):
            raise ProtocolError(f"bad checksum {sent!r} on {payload!r}")
        if self.ack_mode:
            self.send_raw(b"+")
        return payload.decode("latin-1")

    def request(self, payload: bytes | str) -> str:
        """Send a packet, take the server's '+' (in ack mode), return its reply."""
        self.send_raw(frame(payload))
        if self.ack_mode:
            ack = self.read_ack()
            if ack != b"+":
                raise ProtocolError(f"server NAKed {payload!r}")
        return self.read_packet()

    def request_noisy(self, payload: bytes | str) -> tuple[str, str]:
        """A request whose reply may come after console output ('O' + hex text), as gdb reads
        QTStart's and qRcmd's: the reply, and the text."""
        reply, text = self.request(payload), ""
        while reply.startswith("O") and reply != "OK":
            text += bytes.fromhex(reply[1:]).decode()
            reply = self.read_packet()
        return reply, text

    # conveniences

    def handshake(self, supported: str = "multiprocess+;swbreak+;hwbreak+;vContSupported+") -> dict[str, str]:
        """qSupported:SUPPORTED (gdb's features); returns the server's features, e.g.
        {'PacketSize': '47ff', 'swbreak': '+'}."""
        reply = self.request(f"qSupported:{supported}")
        features = {}
        for item in reply.split(";"):
            if "=" in item:
                name, value = item.split("=", 1)
                features[name] = value
            elif item:
                features[item[:-1]] = item[-1]
        return features

    def no_ack_mode(self) -> None:
        assert self.request("QStartNoAckMode") == "OK"
        self.ack_mode = False

    def registers(self) -> bytes:
        reply = decode_rle(self.request("g"))
        assert not reply.startswith("E"), reply
        return bytes.fromhex(reply)

    def pc(self) -> int:
        # x86-64 'g' layout: rax..r15 (16 x 8 bytes), then rip.
        return int.from_bytes(self.registers()[16 * 8 : 17 * 8], "little")
