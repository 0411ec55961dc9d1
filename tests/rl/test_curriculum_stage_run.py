"""One stage run end to end on the tiny stage (tests/rl/conftest.py: 24 items, a 2-layer model, 3 SFT steps),
in this process and in a few seconds: the base it builds first, what it discards on --restart, the
checkpoints it leaves, the length-bias monitor on its domain, validation at start and end, the
overfitting check's verdict in its warnings, and everything it writes (final model and its record,
stage.json, samples, plots), against what the plan expected. The slow tests in test_train_flow.py chain,
resume and rerun stages; this one checks what a single run produces."""

from __future__ import annotations

import json
import logging

from flows.config import load_config
from flows.curriculum import stage as stage_module
from flows.curriculum.plan import stage_table
from flows.curriculum.step_log import SampleLog
from m1model.policy import recorded


class Lines(logging.Handler):
    """The messages a logger emits (Prefect reconfigures logging when a stage imports it: caplog misses them)."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def test_a_stage_run_builds_its_base_trains_validates_and_writes_what_the_plan_expects(
    tiny_stage, monkeypatch
):
    path, home, folder = tiny_stage(steps=3, checkpoint_every=2, length_bias={"domains": ["math"]})
    config = load_config(path)
    verdicts = []

    def overfitting(history, val_start, val_end, tolerance):  # the check itself: tests/rl/test_evaluation.py
        verdicts.append((len(history), val_start, val_end, tolerance))
        return "possible overfitting (the check's verdict)"

    monkeypatch.setattr(stage_module, "overfitting", overfitting)
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "checkpoints" / "left-over").write_text("from an earlier run")
    steps = []
    logger, lines = logging.getLogger("tests.curriculum.stage"), Lines()
    logger.setLevel(logging.INFO)
    logger.addHandler(lines)
    try:
        result = stage_module.run_stage(
            config,
            "a",
            restart=True,
            on_step=lambda phase, m: steps.append((phase, m["step"])),
            logger=logger,
        )
    finally:
        logger.removeHandler(lines)

    base = home / "runs" / "f" / "train" / "base"
    assert lines.messages == [
        f"built the base model (tokenizer, fresh model, SFT warm start) in {base}",
        "stage a: discarding its checkpoints (--restart)",
        "stage a: possible overfitting (the check's verdict)",
    ]
    assert [s for s in steps if s[0] == "a"] == [("a", 1.0), ("a", 2.0), ("a", 3.0)]
    assert [s[1] for s in steps if s[0] == "sft"] == [1, 2, 3]
    assert recorded(base)["data"] == ["f-curated@v1"] and len(recorded(base)["sft"]) == 3

    # checkpoints: the left-over discarded, step 2 (every 2 steps) and the stage's last step, the marker
    expected = stage_table(config)[0]
    assert expected["state"] == "done" and expected["done"]
    marker = (folder / "checkpoints" / "FINGERPRINT").read_text()
    fingerprint = recorded(folder / "final")["fingerprint"]
    assert marker == fingerprint + "\n"
    assert sorted(p.name for p in (folder / "checkpoints").iterdir()) == [
        "FINGERPRINT",
        "step-000002",
        "step-000003",
        "validation-start.json",
    ]

    history = result.history
    assert [h["step"] for h in history] == [1.0, 2.0, 3.0]
    assert all("length_bias/math/length" in h for h in history)  # the monitor ran on the stage's domain
    assert {"weight/math/add", "weight/math/mul"} <= set(history[-1])
    val = result.validation
    assert set(val["start"]) == set(val["end"]) == {"val/math", "val/all"}
    assert json.loads((folder / "checkpoints" / "validation-start.json").read_text()) == val["start"]
    assert verdicts == [(3, val["start"]["val/all"], val["end"]["val/all"], config.eval.overfit_tolerance)]
    assert result.warnings == ["possible overfitting (the check's verdict)"]

    record = recorded(folder / "final")
    assert (record["stage"], record["start_from"], record["data"]) == ("a", str(base), ["f-curated@v1"])
    assert record["history"] == history and record["validation"] == val
    summary = json.loads((folder / "stage.json").read_text())
    assert summary == json.loads(json.dumps(result.summary()))
    assert (summary["stage"], summary["steps"], summary["final"]) == ("a", 3, str(folder / "final"))
    assert summary["plots"] == [
        str(folder / name) for name in ("curves.png", "weights.png", "length_bias.png")
    ]
    assert all(
        (folder / name).stat().st_size > 0 for name in ("curves.png", "weights.png", "length_bias.png")
    )
    samples = SampleLog.read(result.samples)
    assert result.samples == str(folder / "samples.jsonl")
    assert [s["step"] for s in samples] == [1, 1, 2, 2, 3, 3]  # samples_per_step = 2
    assert {s["domain"] for s in samples} == {"math"} and all(0 <= s["reward"] <= 1 for s in samples)
