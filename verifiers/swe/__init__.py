"""SWE verifier: rewards for repair, localisation and test synthesis on SWE-bench-style tasks.

A task has SWE-bench's instance fields (``instance_id, repo, base_commit, patch, test_patch,
FAIL_TO_PASS, PASS_TO_PASS, problem_statement``) plus ``python_packages`` (pip requirements of its
tests), at the top level of an item or inside its ``metadata``; the item's ``task`` says which reward:

- ``repair``: the response's unified diff (fenced or bare) is applied in the task's instance
  container and FAIL_TO_PASS + PASS_TO_PASS run; reward 1 only if all pass (SWE-bench's rules via
  `swebench.harness.grading`: a skipped test keeps a PASS_TO_PASS but does not fix a FAIL_TO_PASS;
  a log whose test command failed while reporting no failure is rejected). An empty, malformed,
  non-applying or out-of-repository diff scores 0 with the reason.
- ``localize``: the response names files and functions (``path.py::name``); reward is the F1 of those
  with the locations the gold patch touches, the mean of file F1 and function F1.
- ``testgen``: the response is a pytest file; reward 1 if it fails on the buggy code and passes once
  the gold patch is applied (SWT-bench's fail-to-pass criterion), with both runs in the details.

A run stopped by a limit scores 0 and names the limit (``details["limit"]``). Images come from
sandboxes/swe_images.py: the item's ``image`` when the engine has it, else built from the repository
under ``repos_dir`` (option; default ``$M1_SWE_REPOS`` or ``$M1_HOME/swe/repos``).

The package: task.py (the task record), patch.py (the diff or test file in a response), grading.py (the
rewards from a run's log: SWE-bench's grading, localisation F1, SWT-bench's fail-to-pass), scorer.py
(`SWEScorer`, which runs responses in the instance container, and the `swe` plugin), mutate.py (the bug
injection that synthesises tasks: swesmith's LibCST modifiers plus this project's one-site ones; it needs
the `swe` extra and is imported only by the task synthesis).
"""

from verifiers.swe.grading import (
    f1,
    generated_test_path,
    generated_tests_reward,
    gold_locations,
    grade,
    localize_reward,
    locations_in,
    repair_reward,
    run_outcome,
    statuses,
)
from verifiers.swe.patch import extract_patch, extract_test_file, patch_files
from verifiers.swe.scorer import SWEScorer, SWEVerifier
from verifiers.swe.task import (
    DEFAULT_PACKAGES,
    GENERATED_TEST,
    KINDS,
    SWE_BENCH_FIELDS,
    SWETask,
    default_repos_dir,
)

__all__ = [
    "DEFAULT_PACKAGES",
    "GENERATED_TEST",
    "KINDS",
    "SWE_BENCH_FIELDS",
    "SWEScorer",
    "SWETask",
    "SWEVerifier",
    "default_repos_dir",
    "extract_patch",
    "extract_test_file",
    "f1",
    "generated_test_path",
    "generated_tests_reward",
    "gold_locations",
    "grade",
    "localize_reward",
    "locations_in",
    "patch_files",
    "repair_reward",
    "run_outcome",
    "statuses",
]
