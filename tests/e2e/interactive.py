"""gdb at its prompt, typed at as a user types: for what gdb -batch cannot show, such as
non-stop mode, where stops come in while gdb waits at its prompt and are printed then.

`InteractiveGdb(e2e, program)` starts gdb on a pseudo-terminal (its controlling terminal)
with the harness's settings; `.run(command, until=)` types a command and waits for what
it must print; `.expect(pattern)` waits for something printed later (an asynchronous
stop); `.transcript` is everything printed, for failures.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from pathlib import Path

from harness import GDB_INIT, WAIT_TIMEOUT, E2E, _clean_terminal_text, start_on_terminal

PROMPT = r"\(gdb\) "


class InteractiveGdb:
    def __init__(self, e2e: E2E, program: Path, *init: str) -> None:
        argv = ["gdb", "-nx", "-q"]
        for option in (*GDB_INIT, *init):
            argv += ["-iex", option]
        # TERM=dumb: no escape sequences, no line editing tricks around the prompt; wide
        # enough that gdb's line editor never scrolls a long command sideways.
        self.proc, master = start_on_terminal(
            [*argv, str(program)], env=dict(os.environ, TERM="dumb"), size=(50, 1000)
        )
        e2e.reaper.track_popen(self.proc)
        self._master = master
        self._text = ""
        self._seen = 0  # where the next expect() looks from
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.expect(PROMPT)

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self._master, 4096)
            except OSError:  # EIO once gdb is gone
                data = b""
            with self._changed:
                if not data:
                    self._closed = True
                    self._changed.notify_all()
                    return
                self._text += _clean_terminal_text(data.decode(errors="replace")).replace("\r", "")
                self._changed.notify_all()

    @property
    def transcript(self) -> str:
        with self._changed:
            return self._text

    def expect(self, pattern: str, timeout: float = WAIT_TIMEOUT) -> re.Match:
        """Waits until PATTERN (a multi-line regex) matches what gdb printed since the last
        match; the next expect looks after this one."""
        regex = re.compile(pattern, re.MULTILINE)
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                match = regex.search(self._text, self._seen)
                if match:
                    self._seen = match.end()
                    return match
                left = deadline - time.monotonic()
                if left <= 0 or getattr(self, "_closed", False):
                    raise AssertionError(f"gdb did not print /{pattern}/ within {timeout}s:\n{self._text}")
                self._changed.wait(left)

    def run(self, command: str, until: str = PROMPT, timeout: float = WAIT_TIMEOUT) -> str:
        """Types COMMAND and waits until gdb has printed UNTIL (by default its next prompt);
        returns what it printed up to there, without the command's echo and the prompt."""
        with self._changed:
            self._seen = len(self._text)
        os.write(self._master, command.encode() + b"\n")
        # gdb echoes the command as it reads it: what it prints for it comes after (a prompt
        # before it is an earlier command's, or one reprinted after an asynchronous stop).
        echo = self.expect(re.escape(command) + r"\n", timeout)
        match = self.expect(until, timeout)
        with self._changed:
            printed = self._text[echo.end() : match.end()]
        return re.sub(PROMPT, "", printed)

    def quit(self) -> None:
        os.write(self._master, b"quit\n")
        try:
            self.proc.wait(timeout=WAIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._master)
        print(f"=== interactive gdb transcript\n{self.transcript}")
