"""How to build and start a program from source, per language. Compilation runs inside the sandbox too:
a compiler fed hostile source (huge templates, `#include "/dev/stdin"`) deserves the same limits."""

from __future__ import annotations

from dataclasses import dataclass

from sandboxes.limits import Limits


@dataclass(frozen=True)
class Language:
    name: str
    source_file: str
    run_argv: tuple[str, ...]
    compile_argv: tuple[str, ...] | None = None
    tool: str = ""  # the executable that must exist in the sandbox for this language to work


LANGUAGES: dict[str, Language] = {
    # -B: no .pyc beside the source; the program's work dir stays as the caller left it.
    "python": Language("python", "main.py", ("python3", "-B", "main.py"), tool="python3"),
    "cpp": Language(
        "cpp",
        "main.cpp",
        ("./main",),
        compile_argv=("g++", "-std=gnu++17", "-O2", "-pipe", "-o", "main", "main.cpp"),
        tool="g++",
    ),
}

# g++ forks cc1plus, as, collect2 and ld, and cc1plus maps a lot of address space for big headers.
COMPILE_LIMITS = Limits(
    cpu_s=30.0,
    wall_s=60.0,
    memory_mb=2048,
    processes=16,
    file_size_mb=128,
    open_files=256,
    output_bytes=1 << 16,
)


def language(name: str) -> Language:
    try:
        return LANGUAGES[name]
    except KeyError:
        raise ValueError(f"unknown language {name!r}; known: {', '.join(LANGUAGES)}") from None
