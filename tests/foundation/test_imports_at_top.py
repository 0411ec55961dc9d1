"""Imports sit at the top of flows/ modules (issue 24), where a reader sees what a module depends on and
import-linter and Python see the same graph. An import inside a function is allowed only with its reason,
in a comment on its line or directly above its block of imports:

- ``# heavy: torch, transformers`` - a dependency that `m1 --help`, the CLI's start-up and the modules
  that import this one should not pay for (torch, transformers, prefect, polars, matplotlib, ...);
- ``# lazy: <why>`` - any other reason: an optional extra (``lazy: optional extra [swe]``), a registration
  that must run after the module's body.

And `m1 --help` imports none of the heavy libraries: each command imports them when it runs.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REASON = re.compile(r"#.*(\bheavy\b|\blazy:)", re.IGNORECASE)
# What `m1 --help` must not import (each costs 0.2-4 s of start-up; together they were 3 s of CPU).
NOT_AT_START = ("torch", "transformers", "prefect", "polars", "matplotlib", "docker", "datasketch", "scipy")


def unexplained_imports(source: str) -> list[int]:
    """Line numbers of the imports inside functions that carry no `heavy` / `lazy:` comment on their own
    lines or in the comment lines directly above their block of consecutive imports."""
    tree = ast.parse(source)
    lines = source.splitlines()
    import_lines = {
        n
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for n in range(node.lineno, node.end_lineno + 1)
    }

    def explained(node: ast.Import | ast.ImportFrom) -> bool:
        if any(REASON.search(lines[n - 1]) for n in range(node.lineno, node.end_lineno + 1)):
            return True
        # Walk up over the block's earlier imports (isort's blank lines between groups included) and the
        # comments above them.
        n = node.lineno - 1
        while n >= 1:
            text = lines[n - 1].strip()
            if REASON.search(lines[n - 1]) and text.startswith("#"):
                return True
            if n in import_lines or text.startswith("#"):
                n -= 1
            elif not text and n - 1 in import_lines:
                n -= 1
            else:
                return False
        return False

    found: list[int] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                if in_function and not explained(child):
                    found.append(child.lineno)
            else:
                visit(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    visit(tree, False)
    return found


def test_every_import_inside_a_function_in_flows_says_why():
    bad = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted((ROOT / "flows").rglob("*.py"))
        for line in unexplained_imports(path.read_text())
    ]
    assert not bad, (
        "imports inside functions without a reason; move them to the top of the module, or say why "
        "with a `# heavy: <library>` or `# lazy: <why>` comment on or above them:\n" + "\n".join(bad)
    )


def test_the_check_finds_an_import_without_a_reason(tmp_path):
    module = tmp_path / "module.py"
    module.write_text(
        "import json\n"
        "\n"
        "\n"
        "def plain():\n"
        "    # the parser\n"
        "    from flows.config import load_config\n"  # 6: a comment, but no reason
        "\n"
        "\n"
        "def heavy():\n"
        "    # heavy: torch\n"
        "    import torch\n"
        "\n"
        "    from m1model.policy import load_policy\n"  # the same block: isort's groups
        "    torch.manual_seed(0)\n"
        "    from flows.store import DatasetStore\n"  # 15: after code, a new block
        "\n"
        "\n"
        "def inline():\n"
        "    import vllm  # lazy: optional extra [gpu]\n"
        "\n"
        "\n"
        "class Step:\n"
        "    def run(self):\n"
        "        if True:\n"
        "            import polars as pl\n"  # 25: nested in a method and a branch
    )
    assert unexplained_imports(module.read_text()) == [6, 15, 25]


def test_m1_help_imports_no_heavy_library():
    code = (
        "import sys\n"
        "sys.argv = ['m1', '--help']\n"
        "from flows.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({NOT_AT_START!r})))"
    )
    env = {**os.environ, "COLUMNS": "100"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "[]"
