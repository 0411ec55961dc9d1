"""The import rules of shared/DESIGN.md as import-linter contracts (pyproject.toml [tool.importlinter]):
flows -> verifiers | m1model -> sandboxes -> kernels, the forbidden imports, and no import cycle between
the modules of a package. The next circle fails here instead of waiting to be found."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_import_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    run = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "Contracts: 5 kept, 0 broken." in run.stdout


def test_a_forbidden_import_breaks_a_contract(tmp_path):
    """The contracts are live: a verifier importing m1model is reported (on a copy of the config that
    adds that import to a scratch package tree)."""
    tree = tmp_path / "tree"
    for package in ("flows", "verifiers", "sandboxes", "m1model", "kernels"):
        (tree / package).mkdir(parents=True)
        (tree / package / "__init__.py").write_text("")
    (tree / "verifiers" / "judge.py").write_text("import m1model\n")
    (tree / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    lint = Path(sys.executable).with_name("lint-imports")
    env = {"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"}
    run = subprocess.run(
        [str(lint), "--no-cache"], cwd=tree, capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 1 and "verifiers import neither m1model nor flows" in run.stdout
    assert "verifiers.judge -> m1model" in run.stdout
