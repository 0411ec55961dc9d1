"""Feed stdin and collect stdout/stderr of a child with a byte cap and a deadline, without threads."""

from __future__ import annotations

import os
import selectors
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO


@dataclass
class BoundedOutput:
    """stdout + stderr kept up to `limit` bytes in total; anything beyond is dropped and flagged."""

    limit: int
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    truncated: bool = False

    def add(self, stream: str, chunk: bytes) -> bool:
        """Keep what fits; return False once the cap is exceeded (the caller stops the run)."""
        room = self.limit - len(self.stdout) - len(self.stderr)
        getattr(self, stream).extend(chunk[: max(room, 0)])
        if len(chunk) > room:
            self.truncated = True
        return not self.truncated


def pump(
    stdin: IO[bytes],
    stdout: IO[bytes],
    stderr: IO[bytes],
    data: bytes,
    output: BoundedOutput,
    deadline: float,
) -> str:
    """Write `data` to stdin and read both outputs until they close, the cap or the deadline.

    Returns "eof", "output" (cap exceeded) or "deadline". stdin is closed on return; the caller closes
    stdout/stderr after stopping the program (closing them first would hand it an EPIPE to report).
    """
    sel = selectors.DefaultSelector()
    names = {stdout.fileno(): "stdout", stderr.fileno(): "stderr"}
    for fd in names:
        sel.register(fd, selectors.EVENT_READ)
    view = memoryview(data)
    if view:
        os.set_blocking(stdin.fileno(), False)
        sel.register(stdin.fileno(), selectors.EVENT_WRITE)
    else:
        stdin.close()
    reason = "eof"
    try:
        while names:
            left = deadline - time.monotonic()
            if left <= 0:
                reason = "deadline"
                break
            for key, _ in sel.select(left):
                fd = key.fd
                if fd in names:
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        sel.unregister(fd)
                        del names[fd]
                    elif not output.add(names[fd], chunk):
                        return "output"
                else:
                    try:
                        view = view[os.write(fd, view[: 1 << 16]) :]
                    except BrokenPipeError:  # the program stopped reading its input: not our error
                        view = view[:0]
                    if not view:
                        sel.unregister(fd)
                        stdin.close()
    finally:
        sel.close()
        if not stdin.closed:
            stdin.close()
    return reason


def wait_until(poll: Callable[[], bool], deadline: float, step: float = 0.002) -> bool:
    """Poll until `poll()` is true or the deadline passes; back off up to 50 ms between polls."""
    while not poll():
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)
        step = min(step * 2, 0.05)
    return True
