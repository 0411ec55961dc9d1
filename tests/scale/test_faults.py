"""Faults a long run meets: `m1 curate run` killed with SIGKILL mid-flow, a reward-service worker
killed, the Prefect server gone before `m1 deploy` is stopped."""

from __future__ import annotations

import os
import random
import shutil
import signal
import threading
import time
from pathlib import Path

import httpx
import psutil
import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.config import PipelineConfig, load_config
from flows.store import DatasetStore

from .conftest import M1, free_port, healthy, started, wait_until

pytestmark = pytest.mark.slow

TASKS = 17  # generate, 5 row-wise steps over 3 shards, the MinHash reduce


def curate_config(home: Path) -> PipelineConfig:
    """The bundled synthetic data with its planted duplicates and leaks, over 3 shards."""
    return load_config(None, ["name=k", f"home={home}", "data.n_problems=60", "runner.shards=3"])


def complete_results(cache: Path) -> int:
    """Task results in the cache that Prefect can read back (a write cut by the kill is not one)."""
    from prefect.results import ResultRecord

    n = 0
    for f in cache.iterdir() if cache.exists() else []:
        try:
            ResultRecord.deserialize(f.read_bytes())
            n += 1
        except Exception:  # noqa: BLE001 - torn or foreign: not a result the rerun can use
            pass
    return n


def kill_after(after: int, args: list[str], log: Path, env: dict, cache: Path, seed: int) -> int:
    """SIGKILL the run's process group once `after` task results are in the cache; the complete ones."""
    with started(args, log, env) as proc:
        deadline = time.monotonic() + 300
        while (cache.exists() and len(list(cache.iterdir())) >= after) is False:
            assert proc.poll() is None, f"seed {seed}: run ended early:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"seed {seed}: no progress:\n{log.read_text()[-3000:]}"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL, f"seed {seed}: the run finished before the kill"
    return complete_results(cache)


def test_curate_run_killed_mid_flow_resumes_from_cache(prefect_harness, tmp_path):
    from prefect.settings import PREFECT_API_URL

    from flows.curate.flow import curate_flow

    seed = int(os.environ.get("M1_KILL_SEED", random.randrange(1 << 30)))  # failures name it: rerun with it
    after = random.Random(seed).randint(1, 12)  # task results written before the kill
    cfg = curate_config(tmp_path / "home")
    (tmp_path / "cfg.json").write_text(cfg.model_dump_json())
    cache = tmp_path / "home" / "cache"
    args = [*M1, "curate", "run", "--config", str(tmp_path / "cfg.json")]
    env = {"PREFECT_API_URL": PREFECT_API_URL.value(), "PREFECT_HOME": str(tmp_path / "prefect")}
    done = kill_after(after, args, tmp_path / "run.log", os.environ | env, cache, seed)
    while done == TASKS and after > 1:
        # A loaded machine starved the poller while the last tasks finished: nothing was cut, so
        # kill a fresh run earlier rather than call that a resume.
        shutil.rmtree(cfg.home)
        after //= 2
        done = kill_after(after, args, tmp_path / "run.log", os.environ | env, cache, seed)
    assert 1 <= done < TASKS, f"seed {seed}"

    store = DatasetStore(cfg.home)
    for name in os.listdir(store.datasets) if store.datasets.exists() else []:
        for version in store.versions(name):  # every version there is complete; the rest is dot-files
            assert store.manifest(name, version).rows == store.read(name, version).height, (seed, name)
    assert store.latest("k-curated") is None, f"seed {seed}: killed before the commit point"

    res = CliRunner().invoke(
        app, ["curate", "run", "--config", str(tmp_path / "cfg.json")], terminal_width=200
    )
    assert res.exit_code == 0, res.output
    assert f"{done} of {TASKS} tasks resumed from cache" in res.output, (seed, res.output)

    reference = curate_config(tmp_path / "uninterrupted")
    curate_flow(reference)
    want = DatasetStore(reference.home)
    assert store.read("k-curated").equals(want.read("k-curated")), f"seed {seed}"
    assert store.quarantine("k-curated").equals(want.quarantine("k-curated")), f"seed {seed}"
    steps = lambda s: [(c.step, c.rows_in, c.rows_out) for c in s.manifest("k-curated").steps]  # noqa: E731
    assert steps(store) == steps(want)


def _workers(server_pid: int) -> list[psutil.Process]:
    """The scoring pool's worker processes: the forkserver's live children (the server is the `m1`
    supervisor's worker, flows/interrupts.py: the forkserver is a grandchild of the pid started)."""

    def forked(p: psutil.Process) -> bool:
        return "forkserver" in " ".join(p.cmdline())

    tree = psutil.Process(server_pid).children(recursive=True)
    forkserver = [p for p in tree if forked(p) and not forked(p.parent())]  # its children share its cmdline
    assert len(forkserver) == 1
    return [p for p in forkserver[0].children() if p.status() != psutil.STATUS_ZOMBIE]


def _wait_for_workers(server_pid: int, n: int) -> list[psutil.Process]:
    deadline = time.monotonic() + 30
    while len(workers := _workers(server_pid)) != n:
        assert time.monotonic() < deadline, f"pool has {len(workers)} workers, not {n}"
        time.sleep(0.1)
    return workers


def test_reward_service_keeps_serving_when_a_worker_is_killed(reward_service):
    client, pid = reward_service["client"], reward_service["proc"].pid
    math = {"verifier": "math", "items": [{"response": "\\boxed{2}", "reference": "2"}] * 4}
    idle = _wait_for_workers(pid, 2)
    idle[0].kill()  # an idle worker: the pool replaces it
    rewards = [client.post("/score", json=math).json()["rewards"] for _ in range(4)]
    assert all(r["reward"] == 1.0 for batch in rewards for r in batch)
    _wait_for_workers(pid, 2)

    # A busy worker: its item is scored again on a fresh worker; the other worker keeps serving.
    pid_file = reward_service["tmp"] / "busy.pid"
    slow = {"verifier": "slow", "items": [{"response": "abc", "sleep": 1.5, "pid_file": str(pid_file)}]}
    answer: dict = {}
    request = threading.Thread(target=lambda: answer.update(client.post("/score", json=slow).json()))
    request.start()
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the slow item never started"
        time.sleep(0.02)
    busy = int(pid_file.read_text())
    os.kill(busy, signal.SIGKILL)
    other = client.post("/score", json=math).json()["rewards"]
    request.join(60)
    assert [r["reward"] for r in other] == [1.0] * 4
    (reward,) = answer["rewards"]
    assert reward["reward"] == 3.0 and "error" not in reward["details"], reward
    assert reward["details"]["pid"] != busy
    assert httpx.get(f"{reward_service['url']}/health", timeout=10).json()["status"] == "ok"
    assert busy not in {w.pid for w in _wait_for_workers(pid, 2)}


def test_deploy_stops_within_seconds_when_the_server_went_away(tmp_path):
    """SIGTERM (a process manager) and Ctrl-C (SIGINT to the process group) after the Prefect server
    died: `m1 deploy` says the server is unreachable and exits, instead of retrying for minutes."""
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {"PREFECT_HOME": str(tmp_path / "prefect"), "M1_HOME": str(tmp_path / "home")}
    with started([*M1, "ui", "--port", str(port)], tmp_path / "ui.log", os.environ | env) as server:
        wait_until(healthy(f"{api}/health"), "m1 ui", server, tmp_path / "ui.log")
        client_env = os.environ | env | {"PREFECT_API_URL": api}
        logs = [tmp_path / "deploy-term.log", tmp_path / "deploy-int.log"]
        with (
            started([*M1, "deploy"], logs[0], client_env) as term,
            started([*M1, "deploy"], logs[1], client_env) as intr,
        ):
            for proc, log in ((term, logs[0]), (intr, logs[1])):
                wait_until(lambda log=log: "being served" in log.read_text(), "m1 deploy", proc, log)
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
            t0 = time.monotonic()
            term.send_signal(signal.SIGTERM)
            os.killpg(intr.pid, signal.SIGINT)
            for proc, log, signum in ((term, logs[0], signal.SIGTERM), (intr, logs[1], signal.SIGINT)):
                try:
                    proc.wait(timeout=20)
                except Exception:  # noqa: BLE001
                    pytest.fail(f"m1 deploy still running 20 s after the signal:\n{log.read_text()[-3000:]}")
                assert f"the Prefect server at {api} is unreachable" in log.read_text(), log.read_text()
                assert proc.returncode == 128 + signum, log.read_text()  # as every m1 command stopped so
            assert time.monotonic() - t0 < 5
