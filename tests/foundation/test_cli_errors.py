"""Bad input to `m1 run`: one clear line naming the file and the problem, exit 2, nothing written."""

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

M1 = [sys.executable, "-c", "from flows.cli import main; main()"]


def run_m1(*args, cwd):
    return subprocess.run([*M1, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _items(path: Path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


GOOD = {
    "id": "a",
    "source": "s",
    "domain": "math",
    "task": "t",
    "prompt": "p",
    "reference": "\\boxed{1}",
    "metadata": "{}",
}


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        (lambda d: ["--config", str(d / "missing.toml")], "missing.toml: config file not found"),
        (
            lambda d: (d / "bad.toml").write_text("[train\n") and ["--config", str(d / "bad.toml")],
            "bad.toml: malformed toml",
        ),
        (
            lambda d: (
                (d / "neg.toml").write_text("[train]\nsft_steps = -2\n") and ["--config", str(d / "neg.toml")]
            ),
            "train.sft_steps",
        ),
        (
            lambda d: (
                _items(d / "cols.jsonl", [{k: v for k, v in GOOD.items() if k != "prompt"}])
                or ["--set", f"data.input_path={d / 'cols.jsonl'}"]
            ),
            "cols.jsonl: no prompt column",
        ),
        (
            lambda d: (
                (d / "broken.jsonl").write_text("{not json\n[1, 2\n")
                and ["--set", f"data.input_path={d / 'broken.jsonl'}"]
            ),
            "broken.jsonl: no valid items (2 rows quarantined; first: line 1: invalid JSON",
        ),
        (lambda d: ["--set", f"data.benchmarks=[{{path: {d / 'nope.jsonl'}}}]"], "nope.jsonl"),
        (
            lambda d: (
                (d / "ok.toml").write_text("[train]\nrl_lr = 1e-3\n")
                and ["--config", str(d / "ok.toml"), "-s", "train.rl_lrr=1e-3"]
            ),
            "error: override 'train.rl_lrr=1e-3': train.rl_lrr: Extra inputs are not permitted",
        ),
    ],
    ids=[
        "missing-config",
        "malformed-config",
        "invalid-value",
        "missing-column",
        "broken-json",
        "missing-bench",
        "override-typo",
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, m1_home, setup, expected):
    args = setup(tmp_path)
    proc = run_m1("run", *args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert expected in lines[0]
    assert "Traceback" not in proc.stderr + proc.stdout
    assert not m1_home.exists()  # no partial output in the store


def test_help_lists_subcommands(tmp_path):
    proc = run_m1("--help", cwd=tmp_path)
    assert proc.returncode == 0
    for cmd in ("run", "ui", "deploy", "verify", "curate", "logic", "model", "train", "serve", "bench"):
        assert f" {cmd} " in proc.stdout


def test_deploy_without_a_reachable_server_is_one_line(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    api = f"http://127.0.0.1:{port}/api"
    env = {
        "PATH": "/usr/bin:/bin",
        "M1_HOME": str(tmp_path / "home"),
        "HOME": str(tmp_path),
        "PREFECT_API_URL": api,
    }
    proc = subprocess.run([*M1, "deploy"], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        f"error: the Prefect server at {api} is unreachable; start one with `m1 ui`, or point "
        "PREFECT_API_URL at a running one"
    ]
    assert "being served" not in proc.stdout


@pytest.mark.slow
def test_an_error_inside_a_flow_is_one_line_with_the_traceback_in_the_log(tmp_path):
    """`m1 train curriculum` on a fresh store, every producer switched off, fails inside its flow (with
    producers on it builds their data and trains without the missing curated data, saying so): the user
    sees the reason in one line (exit 2), no traceback; the log under M1_HOME keeps it. Prefect's
    database is there too."""
    env = {"PATH": "/usr/bin:/bin", "M1_HOME": str(tmp_path / "home"), "HOME": str(tmp_path)}
    off = [f"--set={kind}.enabled=false" for kind in ("logic", "code", "swe", "genrm")]
    proc = subprocess.run(
        [*M1, "train", "curriculum", *off], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr + proc.stdout
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error: ")]
    assert errors == [
        f"error: dataset 'm1-tiny-curated' does not exist in {tmp_path / 'home' / 'datasets'} (curriculum tiny "
        "reads it; `m1 run` builds every dataset, `m1 curate run` the curated one)"
    ]
    assert "Traceback" in (tmp_path / "home" / "logs" / "m1.log").read_text()
    assert (tmp_path / "home" / "prefect" / "prefect.db").exists()
