"""Reading JSONL: the one loop over a file's lines that the CLI and the flows share (curation's ingest, the
SWE tasks and predictions, `m1 verify`'s input, the judge tools' labels and candidates).

Not a flow: a helper of the flows' and the commands' input files. Each caller decides what a bad line means
for it (quarantined with a reason, reported, or fatal) and says so in its own words; the reader only says
which line is which, and what is wrong with the ones that are not JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal


@dataclass(frozen=True)
class JsonLine:
    number: int  # 1-based, blank lines counted
    raw: bytes  # the line without its line break
    value: Any = None  # the parsed JSON; None when `error` is set
    error: json.JSONDecodeError | UnicodeDecodeError | None = None

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", "replace")

    @property
    def reason(self) -> str | None:
        """Why the line is not JSON, briefly (the decoder's own message); None when it is."""
        if isinstance(self.error, UnicodeDecodeError):
            return f"not UTF-8: {self.error.reason}"
        return None if self.error is None else self.error.msg

    @property
    def problem(self) -> str | None:
        """Why the line is not a JSON object (curation's quarantine reason), with the column; None when it is."""
        if isinstance(self.error, json.JSONDecodeError):
            return f"invalid JSON: {self.error.msg} at column {self.error.pos + 1}"
        if self.error is not None:
            return self.reason
        return None if isinstance(self.value, dict) else "not a JSON object"


def read_jsonl(path: str | Path, *, errors: Literal["strict", "replace"] = "strict") -> Iterator[JsonLine]:
    """Each non-blank line of a JSONL file, parsed. With ``errors="replace"`` bytes that are not UTF-8 are
    read as U+FFFD (the line is still JSON when they sit inside a string) instead of making it an error."""
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            line = line.rstrip(b"\r\n")
            try:
                value = json.loads(line if errors == "strict" else line.decode("utf-8", "replace"))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                yield JsonLine(number, line, error=exc)
            else:
                yield JsonLine(number, line, value)
