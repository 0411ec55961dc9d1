"""The one interface both backends implement, and program helpers (compile once, run many) on top."""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from sandboxes.languages import COMPILE_LIMITS, Language, language
from sandboxes.limits import DEFAULT_LIMITS, Limits, RunResult
from sandboxes.workspace import Workspace, seal, workspace

Files = Mapping[str, bytes | str]


class SandboxUnavailable(RuntimeError):
    """The backend cannot run here (missing tool or engine); the message says how to fix it."""


class Sandbox(ABC):
    """Runs untrusted programs. `run` is the whole contract; `program`/`run_program` build on it."""

    name: str

    def run(
        self,
        argv: Sequence[str],
        *,
        files: Files | None = None,
        stdin: bytes = b"",
        limits: Limits = DEFAULT_LIMITS,
    ) -> RunResult:
        """Run `argv` in a fresh work dir holding `files`; nothing of the run survives it."""
        with workspace(files) as ws:
            return self.run_in(ws, argv, stdin=stdin, limits=limits)

    @abstractmethod
    def run_in(self, ws: Workspace, argv: Sequence[str], *, stdin: bytes, limits: Limits) -> RunResult:
        """Run `argv` in an existing work dir (files written by earlier runs stay visible)."""

    @abstractmethod
    def has_tool(self, tool: str) -> bool:
        """Whether an executable exists inside this sandbox (e.g. g++ for C++)."""

    def supports(self, language_name: str) -> bool:
        return self.has_tool(language(language_name).tool)

    @contextlib.contextmanager
    def program(
        self,
        language_name: str,
        source: str | bytes,
        *,
        files: Files | None = None,
        compile_limits: Limits = COMPILE_LIMITS,
    ) -> Iterator[Program]:
        """Build a program once and run it on many inputs: `with sb.program("cpp", src) as p: p.run(...)`.

        `p.compile_result` is None for interpreted languages, else the compiler's run; when it failed,
        `p.run` returns it again with status "compile_error" instead of running anything. After the build
        the work dir is read-only to the program, so every run starts from the same files.
        """
        lang = language(language_name)
        with workspace({**(files or {}), lang.source_file: source}) as ws:
            compiled = None
            if lang.compile_argv is not None:
                compiled = self.run_in(ws, lang.compile_argv, stdin=b"", limits=compile_limits)
                if compiled.status != "sandbox_error" and not compiled.ok:
                    compiled = replace(compiled, status="compile_error")
            seal(ws)
            yield Program(self, ws, lang, compiled)

    def run_program(
        self,
        language: str,
        source: str | bytes,
        *,
        stdin: bytes = b"",
        limits: Limits = DEFAULT_LIMITS,
        files: Files | None = None,
    ) -> RunResult:
        """Compile (if needed) and run `source` once; compile failures come back as "compile_error"."""
        with self.program(language, source, files=files) as prog:
            return prog.run(stdin=stdin, limits=limits)


@dataclass(frozen=True)
class Program:
    sandbox: Sandbox
    workspace: Workspace
    language: Language
    compile_result: RunResult | None

    @property
    def built(self) -> bool:
        return self.compile_result is None or self.compile_result.ok

    def run(self, *, stdin: bytes = b"", limits: Limits = DEFAULT_LIMITS) -> RunResult:
        if not self.built:
            assert self.compile_result is not None
            return self.compile_result
        return self.sandbox.run_in(self.workspace, self.language.run_argv, stdin=stdin, limits=limits)
