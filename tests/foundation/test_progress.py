"""flows/progress.py: the one progress callback, as a Prefect artifact and as a CLI bar."""

from __future__ import annotations

import io

import prefect.artifacts
from rich.console import Console

from flows.progress import bars, prefect_progress, rich_progress


def test_prefect_progress_reports_percent_capped_every_nth_unit_and_the_last(monkeypatch):
    calls = []
    monkeypatch.setattr(prefect.artifacts, "create_progress_artifact", lambda p, key=None, description=None: calls.append(("new", p, key, description)) or "id")  # fmt: skip
    monkeypatch.setattr(prefect.artifacts, "update_progress_artifact", lambda a, p, description=None: calls.append((a, p, description)))  # fmt: skip
    report = prefect_progress("steps done", key="k", every=3)
    for done in range(1, 8):
        report(done, 7)
    report(9, 7, "over")
    assert calls == [
        ("new", 0.0, "k", "steps done"),
        ("id", 100.0 * 3 / 7, None),
        ("id", 100.0 * 6 / 7, None),
        ("id", 100.0, None),
        ("id", 100.0, "over"),  # past the total: capped
    ]


def test_rich_progress_moves_its_task_and_keeps_the_description_unless_given():
    with bars(Console(file=io.StringIO()), transient=True) as bar:
        report = rich_progress(bar, "judge SFT", 10)
        report(4, 10)
        (task,) = bar.tasks
        assert (task.completed, task.total, task.description) == (4, 10, "judge SFT")
        report(6, None, "judge SFT  loss 0.5")
        assert (task.completed, task.total, task.description) == (6, 10, "judge SFT  loss 0.5")
