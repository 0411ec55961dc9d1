"""What a stage leaves to read, checked without training: its plots (what each figure shows: data, titles,
axes, scales, colours; captured as save_png writes them), its markdown report, stage.json's summary and
validation rows, the sampled-responses log, the TensorBoard scalars, and how stale checkpoints are
discarded before a stage starts over."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from flows.curriculum import load_curriculum, report
from flows.curriculum.layout import StagePaths
from flows.curriculum.stage import StageResult, StageRun, _reset_if_changed, validation_rows
from flows.curriculum.step_log import SampleLog, write_scalars


def describe(fig) -> dict:
    """What a figure shows, axes by axes."""
    import matplotlib.colors

    def line(ln) -> dict:
        return {
            "x": [float(v) for v in ln.get_xdata()],
            "y": [float(v) for v in ln.get_ydata()],
            "marker": ln.get_marker(),
            "markersize": ln.get_markersize(),
            "color": matplotlib.colors.to_hex(ln.get_color()),
            "label": ln.get_label(),
        }

    def axes(ax) -> dict:
        legend = ax.get_legend()
        return {
            "title": ax.get_title(),
            "title_size": ax.title.get_fontsize(),
            "xlabel": ax.get_xlabel(),
            "ylabel": ax.get_ylabel(),
            "ylabel_color": matplotlib.colors.to_hex(ax.yaxis.label.get_color()),
            "yscale": ax.get_yscale(),
            "xlim": tuple(float(v) for v in ax.get_xlim()),
            "ylim": tuple(float(v) for v in ax.get_ylim()),
            "lines": [line(ln) for ln in ax.get_lines()],
            "legend": [t.get_text() for t in legend.get_texts()] if legend else None,
            "texts": [t.get_text() for t in ax.texts],
            "images": [
                {
                    "cmap": im.get_cmap().name,
                    "clim": im.get_clim(),
                    "array": im.get_array().tolist(),
                    "bar": im.colorbar,
                }
                for im in ax.get_images()
            ],
            "yticklabels": [t.get_text() for t in ax.get_yticklabels()],
            "xticklabels": [t.get_text() for t in ax.get_xticklabels()],
        }

    return {
        "suptitle": fig._suptitle.get_text() if fig._suptitle else None,
        "size": tuple(round(float(v), 3) for v in fig.get_size_inches()),
        "axes": [axes(ax) for ax in fig.axes],
    }


@pytest.fixture
def figures(monkeypatch):
    """Every figure the report module writes, described before it is saved (and then saved)."""
    seen: list[dict] = []
    real = report.save_png

    def capture(fig, path, dpi=110):
        seen.append(describe(fig) | {"path": Path(path), "dpi": dpi})
        return real(fig, path, dpi)

    monkeypatch.setattr(report, "save_png", capture)
    return seen


def test_the_sft_plot_shows_the_loss_per_step_on_a_log_scale(tmp_path, figures):
    out = report.plot_sft([{"step": 1, "loss": 4.0}, {"step": 2, "loss": 2.0}], tmp_path / "sft.png", "base")
    assert out == tmp_path / "sft.png" and out.stat().st_size > 0
    (ax,) = figures[0]["axes"]
    assert ax["lines"][0]["x"] == [1, 2] and ax["lines"][0]["y"] == [4.0, 2.0]
    assert (ax["title"], ax["xlabel"], ax["ylabel"], ax["yscale"]) == (
        "base",
        "SFT step",
        "answer-token loss",
        "log",
    )
    assert figures[0]["dpi"] == 90


HISTORY = [
    {
        "step": 1.0,
        "reward_mean": 0.1,
        "loss": 0.5,
        "weight/math": 0.7,
        "weight/logic": 0.3,
        "pass/math": 0.25,
    },
    {"step": 2.0, "reward_mean": 0.3, "weight/math": 0.6, "weight/logic": 0.4, "pass/logic": 1.0},
]


def test_the_weights_plot_shows_each_keys_weight_and_a_pass_rate_heat_map(tmp_path, figures):
    import matplotlib

    with matplotlib.rc_context({"image.cmap": "magma"}):  # a user's own style: the heat map stays viridis
        report.plot_weights(HISTORY, tmp_path / "weights.png", "tiny / a")
    fig = figures[0]
    assert fig["suptitle"] == "tiny / a" and fig["size"] == (11.0, 1.6 + 0.35 * 4)
    left, right, bar = fig["axes"]
    assert [(ln["label"], ln["x"], ln["y"], ln["marker"], ln["markersize"]) for ln in left["lines"]] == [
        ("logic", [1.0, 2.0], [0.3, 0.4], "o", 3.0),
        ("math", [1.0, 2.0], [0.7, 0.6], "o", 3.0),
    ]
    assert left["legend"] == ["logic", "math"]
    assert (left["title"], left["title_size"], left["xlabel"]) == (
        "mixture weight (share of prompts)",
        10.0,
        "RL step",
    )
    (image,) = right["images"]
    assert image["cmap"] == "viridis" and image["clim"] == (0, 1) and image["bar"] is not None
    assert image["array"] == [[None, 1.0], [0.25, None]]  # rows logic, math; blank (masked): not sampled
    assert right["yticklabels"] == ["logic", "math"] and right["xticklabels"] == ["1", "2"]
    assert right["title"] == "pass rate per key (blank: not sampled)" and right["xlabel"] == "RL step"
    assert bar["ylim"] == (0.0, 1.0)  # the colour bar of the heat map


def test_the_curves_plot_has_four_panels_and_says_when_no_step_updated(tmp_path, figures):
    report.plot_curves(HISTORY, tmp_path / "curves.png", "tiny / a")
    axes = figures[0]["axes"]
    assert [ax["title"] for ax in axes] == [label for _, label in report.PANELS]
    reward, loss, length, clip = axes
    assert reward["lines"][0]["x"] == [1.0, 2.0] and reward["lines"][0]["y"] == [0.1, 0.3]
    assert reward["lines"][0]["marker"] == "o" and reward["lines"][0]["markersize"] == 3.0
    assert loss["lines"][0]["x"] == [1.0] and loss["lines"][0]["y"] == [0.5]
    assert length["lines"] == [] and length["texts"] == ["no updates"]
    assert clip["xlim"] == (0.5, 2.5) and clip["xlabel"] == "RL step"
    assert figures[0]["suptitle"] == "tiny / a" and figures[0]["size"] == (16.0, 3.2)


def test_the_length_bias_plot_shows_length_success_reward_and_correlation_per_domain(tmp_path, figures):
    history = [
        {"step": 1, "length_bias/general/length": 10.0, "length_bias/general/corr": 0.2,
         "length_bias/general/corr_raw": 0.3, "length_bias/general/reward_raw": 0.4,
         "length_bias/general/reward": 0.1},
        {"step": 2, "length_bias/general/length": 14.0, "length_bias/general/corr": 0.5,
         "length_bias/general/success": 0.5, "length_bias/general/alarm": 1.0},
        {"step": 3, "reward_mean": 0.0},
    ]  # fmt: skip
    report.plot_length_bias(history, tmp_path / "lb.png", "tiny / general")
    fig = figures[0]
    assert fig["suptitle"] == "tiny / general" and fig["size"] == (15.0, 3.2) and fig["dpi"] == 100
    length, reward, corr, success = fig["axes"]  # the twin axis comes last
    assert length["lines"][0]["x"] == [1.0, 2.0] and length["lines"][0]["y"] == [10.0, 14.0]
    assert length["lines"][0]["color"] == "#1f77b4" and length["ylabel"] == "mean length (tokens)"
    assert length["ylabel_color"] == "#1f77b4"
    alarm = length["lines"][1]  # a red line at the alarm step
    assert alarm["x"] == [2.0, 2.0] and alarm["color"] == "#d62728"
    assert len(length["lines"]) == 2
    assert (
        length["title"] == "general: length vs success (1 alarm steps, red)" and length["xlabel"] == "RL step"
    )
    y = success["lines"][0]["y"]
    assert y[0] != y[0] and y[1] == 0.5  # no success measured at step 1
    assert success["lines"][0]["marker"] == "s" and success["ylim"] == (-0.05, 1.05)
    assert success["ylabel"] == "success (rule-verified)" and success["ylabel_color"] == "#2ca02c"
    judged, trained = reward["lines"]
    assert (judged["label"], judged["y"][0]) == ("judge's reward", 0.4)
    assert (trained["label"], trained["y"][0]) == ("trained on", 0.1)
    assert reward["title"] == "general: mean reward (shaped when mitigation acts)"
    raw, shaped = corr["lines"][:2]
    assert raw["y"][0] == 0.3 and shaped["y"] == [0.2, 0.5] and corr["ylim"] == (-1.05, 1.05)
    assert corr["title"] == "general: Spearman(reward, length)" and corr["xlabel"] == "RL step"
    assert corr["legend"] == ["judge's reward", "trained on"]


def test_length_bias_notes_say_what_the_monitor_saw_in_each_judged_domain():
    history = [
        {"step": 1, "length_bias/general/length": 10.0, "length_bias/general/length_ratio": 0.8,
         "length_bias/general/success": 0.3, "length_bias/general/corr_raw": 0.2,
         "length_bias/math/length": 3.0},
        {"step": 2, "length_bias/general/length": 14.0, "length_bias/general/length_ratio": 1.6,
         "length_bias/general/success": 0.3, "length_bias/general/corr_raw": 0.4,
         "length_bias/general/alarm": 1.0},
    ]  # fmt: skip
    assert report.length_bias_notes(history, ["general"]) == [
        "length-bias monitor (general): mean length 10.0 (0.80x the reference's) -> 14.0 (1.60x the "
        "reference's) tokens, the judge's reward - and rule-verified success 0.30 -> 0.30 (first and last "
        "third of the steps), the judge's reward-length Spearman +0.30 on average; 1 alarm steps (first at "
        "step 2)"
    ]
    assert report.length_bias_notes(history, ["code"]) == []  # not watched: no line


def test_the_note_says_when_the_judges_reward_rises_and_rule_verified_success_does_not():
    """The general stage of issue 34's 48-step run: the judge's reward 0.46 -> 0.58 while success stayed
    at 0.2. Means over thirds, so one noisy step (success 0.9 at step 1) does not decide it."""

    def run(rewards, successes):
        history = [
            {"step": i + 1, "length_bias/general/length": 20.0, "length_bias/general/reward_raw": r,
             "length_bias/general/success": s}
            for i, (r, s) in enumerate(zip(rewards, successes, strict=True))
        ]  # fmt: skip
        (note,) = report.length_bias_notes(history, ["general"])
        return note

    hacked = run([0.45, 0.46, 0.5, 0.55, 0.58, 0.6], [0.9, 0.2, 0.2, 0.2, 0.2, 0.19])
    assert "the judge's reward 0.46 -> 0.59 and rule-verified success 0.55 -> 0.20" in hacked
    assert hacked.endswith("the policy is learning what the judge rewards, not what the rule checks")
    learning = run([0.45, 0.46, 0.5, 0.55, 0.58, 0.6], [0.2, 0.2, 0.25, 0.3, 0.3, 0.32])
    assert "0.20 -> 0.31" in learning and "not what the rule checks" not in learning
    flat = run([0.45, 0.46, 0.47, 0.45, 0.46, 0.47], [0.2] * 6)
    assert "not what the rule checks" not in flat and "tells apart" not in flat  # no pairs counted: no clause


def test_the_note_says_how_the_judge_ordered_the_rollouts_the_rule_tells_apart():
    history = [
        {"step": i + 1, "length_bias/general/length": 20.0, "length_bias/general/pairs_right": r,
         "length_bias/general/pairs_wrong": w, "length_bias/general/pairs_tied": t}
        for i, (r, w, t) in enumerate([(3, 1, 4), (2, 0, 6)])
    ]  # fmt: skip
    (note,) = report.length_bias_notes(history, ["general"])
    assert (
        "of its rollouts' pairs that the rule tells apart the judge orders 5 as the rule does, 1 the other "
        "way and ties 10 (0.62, ties as half; 0.5 is no signal)" in note
    )


def test_the_stage_report_lists_validation_warnings_notes_and_plots(tmp_path):
    plot = report.plot_sft([{"step": 1, "loss": 1.0}], tmp_path / "curves.png", "x")
    history = [
        {"step": 1.0, "reward_mean": 0.125, "finite": 1.0, "repetition_truncated": 1.0},
        {"step": 2.0, "reward_mean": 0.5, "finite": 1.0, "repetition_truncated": 2.0},
    ]
    summary = {
        "stage": "a",
        "start_from": "base",
        "final": "/f",
        "validation": {"start": {"val/all": 0.25, "val/math": 0.5}, "end": {"val/all": 0.75}},
        "warnings": ["possible overfitting"],
        "notes": ["stage a: difficulty band"],
        "plots": [str(plot)],
    }
    text = report.stage_markdown(summary, history)
    assert text.startswith(
        "# Training stage `a`\n\n- started from: `base`\n- final model: `/f`\n- RL steps: 2\n"
    )
    assert "- mean reward: 0.125 (step 1) -> 0.500 (step 2)\n- all steps finite: True\n" in text
    assert "- responses stopped by repetition: 3\n" in text
    assert "| all | 25.0% | 75.0% |\n| math | 50.0% | - |\n" in text
    assert "\n**Warning:** possible overfitting\n" in text and "\n- stage a: difficulty band\n" in text
    assert "![curves](data:image/png;base64," in text and f"Plot file: `{plot}`" in text
    bare = report.stage_markdown({k: summary[k] for k in ("stage", "start_from", "final")}, [])
    assert bare == "# Training stage `a`\n\n- started from: `base`\n- final model: `/f`\n- RL steps: 0\n"


def test_the_stage_summary_and_its_validation_rows():
    result = StageResult(
        "a",
        "base",
        "/f",
        [{"reward_mean": 0.1}, {"reward_mean": 0.4}],
        validation={"start": {"val/all": 0.2, "val/math": 0.2}, "end": {"val/all": 0.6}},
        samples="/s.jsonl",
        reason="train.rl_lr 0.0001 -> 0.0002",
    )
    summary = result.summary()
    assert summary == {
        "stage": "a",
        "start_from": "base",
        "final": "/f",
        "steps": 2,
        "reward_first": 0.1,
        "reward_last": 0.4,
        "val_start": 0.2,
        "val_end": 0.6,
        "validation": result.validation,
        "warnings": [],
        "notes": [],
        "plots": [],
        "samples": "/s.jsonl",
        "reason": "train.rl_lr 0.0001 -> 0.0002",
        "reused": False,
    }
    assert validation_rows(summary) == [
        {"set": "all", "start": 0.2, "end": 0.6},
        {"set": "math", "start": 0.2, "end": None},
    ]
    assert validation_rows({}) == []
    empty = StageResult("a", "base", "/f", []).summary()
    assert (empty["steps"], empty["reward_first"], empty["reward_last"], empty["val_end"]) == (
        0,
        None,
        None,
        None,
    )


def plots_of(tmp_path) -> StageRun:
    """A StageRun with only what its plots read: the curriculum's and stage's names, the stage folder."""
    cur = load_curriculum("tiny")
    paths = StagePaths(tmp_path / "reasoning")
    paths.root.mkdir()
    none = dict(config=None, tc=None, model=None, tokenizer=None, judge_options={}, sets={}, ctx=None)
    return StageRun(curriculum=cur, stage=cur.stages[0], paths=paths, start=tmp_path, **none)


def test_a_stage_plots_its_curves_weights_and_the_length_bias_when_the_last_step_has_it(tmp_path, figures):
    run = plots_of(tmp_path)
    root = run.paths.root
    assert run.plots([]) == []
    assert run.plots(HISTORY[:1]) == [str(root / "curves.png"), str(root / "weights.png")]
    assert [f["suptitle"] for f in figures] == ["tiny / reasoning"] * 2
    history = [HISTORY[0], {"step": 2.0, "length_bias/math/length": 3.0, "length_bias/math/corr": 0.1}]
    written = run.plots(history)
    assert written[2] == str(root / "length_bias.png") and all(Path(p).stat().st_size > 0 for p in written)
    assert [f["path"].name for f in figures[2:]] == ["curves.png", "weights.png", "length_bias.png"]


def test_the_sample_log_keeps_the_first_responses_of_each_step_and_drops_replayed_steps(tmp_path):
    path = tmp_path / "stage" / "samples.jsonl"
    tokenizer = SimpleNamespace(decode=lambda ids, skip_special_tokens: "ans " + " ".join(map(str, ids)))
    item = {"id": "x1", "domain": "math", "task": "add", "prompt": "p" * 400}
    trainer = SimpleNamespace(pool=SimpleNamespace(items=[{}, item]), step=1)
    group = SimpleNamespace(index=1, responses=[[5, 6], [7], [8]], rewards=[0.123456, 1, 0.0],
                            finish_reasons=["stop", "length", "stop"])  # fmt: skip
    SampleLog(path, tokenizer, per_step=2)(trainer, SimpleNamespace(sampled_groups=[group]))
    rows = SampleLog.read(path)
    assert rows == [
        {"step": 2, "id": "x1", "domain": "math", "task": "add", "prompt": "p" * 300, "response": "ans 5 6",
         "reward": 0.1235, "finish": "stop"},
        {"step": 2, "id": "x1", "domain": "math", "task": "add", "prompt": "p" * 300, "response": "ans 7",
         "reward": 1.0, "finish": "length"},
    ]  # fmt: skip
    assert path.read_text().count("\n") == 2
    trainer.step = 2
    SampleLog(path, tokenizer, per_step=1, resumed_step=2)(trainer, SimpleNamespace(sampled_groups=[group]))
    assert [(r["step"], r["response"]) for r in SampleLog.read(path)] == [
        (2, "ans 5 6"),
        (2, "ans 7"),
        (3, "ans 5 6"),
    ]
    SampleLog(path, tokenizer, per_step=1, resumed_step=2)  # resumed at step 2: step 3 is replayed
    assert [r["step"] for r in SampleLog.read(path)] == [2, 2]
    SampleLog(path, tokenizer, per_step=1)  # a fresh start: nothing kept
    assert path.read_text() == ""
    assert SampleLog.read(tmp_path / "missing.jsonl") == []


def test_tensorboard_gets_every_numeric_metric_but_the_step(tmp_path):
    calls = []
    writer = SimpleNamespace(add_scalar=lambda *a: calls.append(a), flush=lambda: calls.append("flush"))
    write_scalars(writer, {"step": 3.0, "reward_mean": 0.5, "pass/math": 1, "note": "text"})
    assert calls == [("reward_mean", 0.5, 3), ("pass/math", 1, 3), "flush"]


def stage_folder(tmp_path) -> StagePaths:
    paths = StagePaths(tmp_path / "a")
    (paths.checkpoints / "step-000001").mkdir(parents=True)
    paths.final.mkdir()
    (paths.final / "config.json").write_text("{}")
    (paths.checkpoints / "FINGERPRINT").write_text("old\n")
    return paths


def test_checkpoints_are_kept_only_when_trained_from_the_same_fingerprint(tmp_path, caplog):
    logger = logging.getLogger("tests.curriculum.reset")
    paths = stage_folder(tmp_path)

    def planned(fingerprint: str, reason: str = "") -> SimpleNamespace:  # what reset reads of a StagePlan
        return SimpleNamespace(fingerprint=fingerprint, reason=reason)

    with caplog.at_level(logging.INFO, logger=logger.name):
        _reset_if_changed(paths, planned("old"), False, logger)
        assert (paths.checkpoints / "step-000001").is_dir() and paths.final.is_dir()
        assert caplog.messages == []
        _reset_if_changed(paths, planned("new", "train.rl_lr 0.0001 -> 0.0002"), False, logger)
    assert not paths.final.exists() and not (paths.checkpoints / "step-000001").exists()
    assert (paths.checkpoints / "FINGERPRINT").read_text() == "new\n"
    assert caplog.messages == ["stage a: discarding its checkpoints (train.rl_lr 0.0001 -> 0.0002)"]
    assert sorted(p.name for p in tmp_path.joinpath("a").iterdir()) == [
        "checkpoints"
    ]  # nothing left discarded
    caplog.clear()
    paths = stage_folder(tmp_path / "again")
    with caplog.at_level(logging.INFO, logger=logger.name):
        _reset_if_changed(paths, planned("old"), True, logger)
    assert not paths.final.exists() and not (paths.checkpoints / "step-000001").exists()
    assert caplog.messages == ["stage a: discarding its checkpoints (--restart)"]
    fresh = StagePaths(tmp_path / "fresh")
    _reset_if_changed(fresh, planned("fp"), False, logger)  # a first run: only the marker
    assert json.dumps(sorted(p.name for p in fresh.checkpoints.iterdir())) == '["FINGERPRINT"]'
