"""`m1 verify` round trip (bad rows included), `m1 verifiers list`, and plugin discovery through an
installed entry point and through a plugin directory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.errors import InputError
from verifiers.base import Reward, default_registry, verify_safely

REPO = Path(__file__).resolve().parents[2]
M1 = [sys.executable, "-c", "from flows.cli import main; main()"]

DIR_PLUGIN = """
from verifiers.base import Reward

class Shouty:
    name = "shouty"
    version = "2.0"

    def __init__(self, bonus=0.0):
        self.bonus = bonus

    def verify(self, items):
        out = []
        for item in items:
            if item.get("explode"):
                raise RuntimeError("boom")
            text = item["response"]
            out.append(Reward(float(text.isupper()) + self.bonus, {"chars": len(text)}))
        return out
"""


def _write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_verify_round_trip_keeps_every_row(tmp_path):
    source = _write_jsonl(
        tmp_path / "in.jsonl",
        [
            json.dumps({"id": "a", "response": "so \\boxed{\\frac{1}{2}}", "reference": "0.5", "extra": [1]}),
            json.dumps({"id": "b", "response": "the answer is 3", "reference": "4"}),
            '{"id": "c", "response": broken',
            "[1, 2, 3]",
            "",
            json.dumps({"id": "d", "response": "\\boxed{1}"}),  # no reference
        ],
    )
    out = tmp_path / "sub" / "out.jsonl"
    result = CliRunner().invoke(
        app, ["verify", "--verifier", "math", "-i", str(source), "-o", str(out), "--batch-size", "2"]
    )
    assert result.exit_code == 0, result.output
    rows = _read_jsonl(out)
    assert len(rows) == 5  # the blank line is not a row; every other line is
    assert rows[0]["id"] == "a" and rows[0]["extra"] == [1] and rows[0]["reward"] == 1.0
    assert rows[0]["details"]["correct"] is True
    assert rows[1]["reward"] == 0.0 and rows[1]["details"]["correct"] is False
    assert rows[2]["line"] == 3 and "invalid JSON" in rows[2]["details"]["error"] and rows[2]["reward"] == 0
    assert rows[3]["raw"] == [1, 2, 3] and "expected a JSON object" in rows[3]["details"]["error"]
    assert rows[4]["id"] == "d" and "reference" in rows[4]["details"]["error"]
    assert not [p for p in out.parent.iterdir() if p.name != "out.jsonl"]  # no temp files left


def test_verify_options_and_user_errors(tmp_path):
    source = _write_jsonl(
        tmp_path / "in.jsonl", [json.dumps({"response": "the answer is 2", "reference": "2"})]
    )
    out = tmp_path / "out.jsonl"
    runner = CliRunner()
    ok = runner.invoke(
        app, ["verify", "-v", "math", "-i", str(source), "-o", str(out), "--option", "format_weight=0.5"]
    )
    assert ok.exit_code == 0 and _read_jsonl(out)[0]["reward"] == 0.5  # correct, not boxed
    # user errors: a one-line InputError (the CLI prints it and exits 2), and no output file
    for args, message in [
        (["-v", "nope", "-i", str(source)], "unknown verifier 'nope'"),
        (["-v", "math", "-i", str(tmp_path / "missing.jsonl")], "input file not found"),
        (["-v", "math", "-i", str(source), "--option", "bogus=1"], "unexpected keyword argument 'bogus'"),
        (["-v", "math", "-i", str(source), "--option", "novalue"], "expected key=value"),
        (
            ["-v", "math", "-i", str(source), "--plugin-dir", str(tmp_path / "nodir")],
            "plugin directory not found",
        ),
    ]:
        result = runner.invoke(app, ["verify", *args, "-o", str(tmp_path / "x.jsonl")])
        assert isinstance(result.exception, InputError) and message in str(result.exception)
    assert not (tmp_path / "x.jsonl").exists()
    proc = subprocess.run(
        [*M1, "verify", "-v", "nope", "-i", str(source), "-o", str(out)], capture_output=True, text=True
    )
    assert (
        proc.returncode == 2 and "unknown verifier 'nope'" in proc.stderr and "Traceback" not in proc.stderr
    )


def test_plugin_directory_and_config(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "shouty.py").write_text(DIR_PLUGIN, encoding="utf-8")
    (plugins / "broken.py").write_text("import does_not_exist\n", encoding="utf-8")
    config = tmp_path / "m1.toml"
    config.write_text(f'plugin_dirs = ["{plugins}"]\n', encoding="utf-8")

    registry = default_registry([plugins])
    infos = {p.name: p for p in registry.plugins()}
    assert infos["shouty"].version == "2.0" and infos["shouty"].source.endswith("shouty.py")
    assert "does_not_exist" in infos["broken"].load_error
    assert {"math", "constraints", "shouty"} <= set(registry.names())

    source = _write_jsonl(
        tmp_path / "in.jsonl",
        [
            json.dumps({"response": "LOUD"}),
            json.dumps({"response": "quiet"}),
            json.dumps({"response": "X", "explode": True}),
        ],
    )
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "verify",
            "-v",
            "shouty",
            "-c",
            str(config),
            "-i",
            str(source),
            "-o",
            str(out),
            "--option",
            "bonus=0.5",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = _read_jsonl(out)
    assert [r["reward"] for r in rows] == [1.5, 0.5, 0.0]
    assert rows[2]["details"]["error"] == "RuntimeError: boom"  # the plugin raised on one item only

    listing = CliRunner().invoke(
        app, ["verifiers", "list", "--plugin-dir", str(plugins)], env={"COLUMNS": "300"}
    )
    assert listing.exit_code == 0
    assert "shouty" in listing.output and "2.0" in listing.output and "does_not_exist" in listing.output
    assert "m1-pipeline" in listing.output


def test_verify_safely_rejects_bad_rewards():
    class Bad:
        name, version = "bad", "0"

        def verify(self, items):
            return [Reward(float("nan")), "not a reward", Reward(1.0, {"ok": True})][: len(items)]

    rewards = verify_safely(Bad(), [{}, {}, {}])
    assert "non-finite" in rewards[0].details["error"] and "not a Reward" in rewards[1].details["error"]
    assert rewards[2].reward == 1.0


@pytest.mark.slow
def test_third_party_package_installed_with_pip(tmp_path):
    """The worked example in examples/: pip-install the package, then use it through `m1 verify`."""
    package = shutil.copytree(REPO / "examples" / "m1-verifier-length", tmp_path / "src")
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(package),
        ],
        check=True,
        capture_output=True,
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(REPO)]), "COLUMNS": "300"}
    listing = subprocess.run([*M1, "verifiers", "list"], capture_output=True, text=True, env=env, check=True)
    assert "length" in listing.stdout and "m1-verifier-length==0.1.0" in listing.stdout

    source = _write_jsonl(
        tmp_path / "in.jsonl",
        [json.dumps({"response": "one two three"}), json.dumps({"response": "word " * 60}), "{oops"],
    )
    out = tmp_path / "out.jsonl"
    args = [
        "verify",
        "-v",
        "length",
        "-i",
        str(source),
        "-o",
        str(out),
        "--option",
        "max_words=50",
        "--option",
        "slack=20",
    ]
    subprocess.run([*M1, *args], check=True, capture_output=True, env=env)
    rows = _read_jsonl(out)
    assert [r["reward"] for r in rows] == [1.0, 0.5, 0.0]
    assert rows[1]["details"] == {"words": 60, "outside_by": 10}
