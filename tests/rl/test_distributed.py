"""Data parallel on CPU (gloo, 2 ranks under torchrun): one update on the global batch split over the
ranks equals the single-process update on the same batch, for CISPO, DAPO, FSDP2 and the SFT step."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

WORKER = Path(__file__).with_name("dist_worker.py")


def torchrun(script: Path, *args: str, nproc: int = 2, timeout: int = 600) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
        + [str(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.returncode == 0, out.stderr[-4000:]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, dict]:
    out = tmp_path_factory.mktemp("dist")
    torchrun(WORKER, str(out))
    return {p.stem: torch.load(p, weights_only=False) for p in out.glob("*.pt")}


def assert_same_weights(a: dict, b: dict, atol: float) -> None:
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], atol=atol, rtol=1e-5, msg=key)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["cispo", "dapo", "cispo-fsdp"])
def test_two_rank_update_equals_the_single_process_update(results, case):
    r = results[case]
    single, ranked = r["metrics"]
    assert_same_weights(r["single"], r["ranked"], atol=1e-6)
    # Both optimizer steps changed the weights (so the comparison compares something) ...
    assert single["skipped_updates"] == ranked["skipped_updates"] == 0
    # ... with the same global loss, gradient norm (catches a wrongly normalised loss) and mismatch check.
    for key in ("loss", "grad_norm", "clip_fraction", "logprob_abs_diff", "logprob_corr", "entropy"):
        assert ranked[key] == pytest.approx(single[key], rel=1e-5, abs=1e-7), key
    # The engine holding its own copy (the FSDP replica) received the updated weights.
    assert_same_weights(r["pushed"], r["ranked"], atol=0)


@pytest.mark.slow
def test_two_rank_updates_change_the_weights(results, new_tiny_model):
    start = new_tiny_model(0, num_experts_per_tok=2).state_dict()
    for case in ("cispo", "dapo", "cispo-fsdp"):
        after = results[case]["ranked"]
        assert max(float((after[k] - start[k]).abs().max()) for k in start) > 1e-2, case


@pytest.mark.slow
def test_two_rank_sft_equals_the_single_process_sft(results):
    r = results["sft"]
    assert_same_weights(r["single"], r["ranked"], atol=1e-5)
    single, ranked = r["metrics"]
    assert [round(m["loss"], 5) for m in single] == [round(m["loss"], 5) for m in ranked]
    assert [m["grad_norm"] for m in ranked] == pytest.approx([m["grad_norm"] for m in single], rel=1e-5)


@pytest.mark.slow
def test_two_rank_stages_with_ddp_and_fsdp_agree(tiny_stage):
    """`run_stage` with train.nproc = 2 launches torchrun; DDP and FSDP2 (SFT base and RL) train the same."""
    from safetensors.torch import load_file

    from flows.config import load_config
    from flows.curriculum.stage import run_stage

    finals = {}
    for run, parallel in (("ddp", "ddp"), ("fsdp", "fsdp")):
        path, _, stage = tiny_stage(steps=2, run=run, nproc=2, parallel=parallel)
        seen: list[tuple[str, int]] = []
        result = run_stage(
            load_config(path), "a", on_step=lambda phase, m, seen=seen: seen.append((phase, int(m["step"])))
        )
        assert seen == [("sft", 1), ("sft", 2), ("sft", 3), ("a", 1), ("a", 2)]  # rank 0's progress, relayed
        assert len(result.history) == 2 and (stage / "stage.json").exists()
        finals[run] = load_file(stage / "final" / "model.safetensors")
        base = load_file(stage.parent / "base" / "model.safetensors")
        assert max(float((finals[run][k] - base[k]).abs().max()) for k in base) > 1e-3
    assert_same_weights(finals["ddp"], finals["fsdp"], atol=1e-5)


@pytest.mark.slow
def test_a_user_error_on_the_ranks_is_the_same_one_line_error(tiny_stage, tmp_path):
    from flows.config import load_config
    from flows.curriculum.stage import run_stage
    from flows.errors import ConfigError, InputError

    path, _, _ = tiny_stage(steps=1, nproc=2)
    elsewhere = load_config(path, [f"home={tmp_path / 'empty'}"])  # no datasets there
    with pytest.raises(InputError, match="dataset 'f-curated' does not exist"):
        run_stage(elsewhere, "a")
    with pytest.raises(ConfigError, match="batch_size 1 is smaller than train.nproc 2"):
        run_stage(load_config(path, ["train.batch_size=1"]), "a")


def test_a_crashed_rank_s_own_error_leads_the_failure_message(tmp_path):
    """torchrun ends its log with a summary that names only the signal; the rank's abort comes first."""
    from flows.curriculum.launch import _failure

    log = tmp_path / "a.torchrun.log"
    summary = [f"torchrun summary line {i}" for i in range(30)]
    log.write_text(
        "\n".join(
            [
                "W1203 setting OMP_NUM_THREADS",
                "terminate called after throwing an instance of 'gloo::IoException'",
                "  what():  Connection closed by peer",
                *summary,
            ]
        )
    )
    message = str(_failure(None, 1, log, 2))
    assert message.index("what():  Connection closed by peer") < message.index("summary line 29")
    assert "torchrun exit 1" in message
    log.write_text("\n".join(summary))  # nothing recognisable: the tail alone
    tail_only = str(_failure(None, 1, log, 2))
    assert "summary line 29" in tail_only and "summary line 4\n" not in tail_only
