"""Running responses in the task's instance container: `SWEScorer` (the one implementation behind the
verifier, `m1 swe evaluate` and the validation flow) and the `swe` verifier plugin."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifiers.base import ItemError, Reward
from verifiers.swe.grading import generated_test_path, generated_tests_reward, localize_reward, repair_reward
from verifiers.swe.patch import extract_patch, extract_test_file, patch_files
from verifiers.swe.task import KINDS, SWETask, default_repos_dir


@dataclass
class SWEScorer:
    """Scores responses to tasks; the one implementation behind the verifier, `m1 swe evaluate` and
    the validation flow. Builds a missing instance image from `repos_dir`."""

    repos_dir: Path = field(default_factory=default_repos_dir)
    limits: Any = None  # sandboxes.Limits; default sandboxes.swe_run.SWE_LIMITS
    images: Any = None  # sandboxes.swe_images.SWEImages, created on first use

    def image(self, task: SWETask) -> str:
        from sandboxes.swe_images import SWEImageError, SWEImages

        if self.images is None:
            self.images = SWEImages()
        if task.image and self.images.exists(task.image):
            return task.image
        if not (Path(self.repos_dir) / task.repo / ".git").exists():
            missing = f"instance image {task.image} is not built and " if task.image else ""
            raise ItemError(f"{missing}repository {task.repo} not found under {self.repos_dir}")
        try:
            return self.images.instance(task.instance_spec(self.repos_dir)).tag
        except SWEImageError as exc:
            raise ItemError(str(exc)) from None

    def run(self, task: SWETask, files: Sequence[str], *, patch: str = "", extra=None):
        from sandboxes.swe_run import DEFAULT_TEST_CMD, SWE_LIMITS, run_tests

        return run_tests(
            self.image(task), files, patch=patch, extra=extra, test_cmd=task.test_cmd or DEFAULT_TEST_CMD,
            limits=self.limits or SWE_LIMITS, client=self.images.client,
        )  # fmt: skip

    def repair(self, task: SWETask, patch: str) -> Reward:
        """Reward 1 only if the patch applies and every FAIL_TO_PASS and PASS_TO_PASS test passes."""
        from sandboxes.swe_run import files_of

        try:
            touched = patch_files(patch)
        except ItemError as exc:
            return Reward(0.0, {"reason": str(exc), "resolved": False})
        return repair_reward(task, touched, self.run(task, files_of(task.tests), patch=patch))

    def testgen(self, task: SWETask, test_source: str) -> Reward:
        """Reward 1 if the test file fails on the buggy code and passes with the gold patch."""
        if not test_source.strip():
            return Reward(0.0, {"reason": "empty test file"})
        target = generated_test_path(task)
        runs = {}
        for name, patch in (("before", ""), ("after", task.patch)):
            runs[name] = run = self.run(task, [target], patch=patch, extra={target: test_source})
            if run.limit:
                break
        return generated_tests_reward(runs, target)


class SWEVerifier:
    """Verifier plugin ``swe``: items carry a task (see the module docstring) and ``response``."""

    name = "swe"
    version = "1"

    def __init__(self, repos_dir: str | None = None, workers: int = 2, wall_s: float | None = None) -> None:
        from dataclasses import replace

        from sandboxes.swe_run import SWE_LIMITS

        limits = replace(SWE_LIMITS, wall_s=wall_s) if wall_s else SWE_LIMITS
        self.scorer = SWEScorer(Path(repos_dir) if repos_dir else default_repos_dir(), limits)
        self.workers = workers

    def verify(self, items: Sequence[Mapping[str, Any]]) -> list[Reward]:
        with ThreadPoolExecutor(max(1, self.workers)) as pool:
            return list(pool.map(self.score, items))

    def score(self, item: Mapping[str, Any]) -> Reward:
        try:
            task = SWETask.from_row(item)
            kind = item.get("task") or "repair"
            if kind not in KINDS:
                raise ItemError(f"unknown task {kind!r} (expected one of {', '.join(KINDS)})")
            response = item.get("response")
            if not isinstance(response, str):
                raise ItemError("item needs a `response` string")
            if kind == "localize":
                return localize_reward(task, response)
            if kind == "testgen":
                return self.scorer.testgen(task, extract_test_file(response))
            return self.scorer.repair(task, extract_patch(response))
        except ItemError as exc:
            return Reward.error(str(exc))
