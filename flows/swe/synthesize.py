"""Task synthesis in the manner of SWE-smith: mutate a library, keep the mutants its own tests catch.

For each repository: build the clean instance image (the sdist commit), run the whole suite once for
the baseline, then run the suite on candidate mutants (verifiers/swe/mutate.py), `workers` containers at
a time, in the seeded candidate order. A mutant is kept when at least one baseline-passing test fails
(FAIL_TO_PASS) and the rest still pass (PASS_TO_PASS), and fewer than `max_fail_fraction` of the suite
fails (an import-breaking mutant teaches nothing about where the bug is). A kept mutant becomes a
commit on top of the sdist commit (ref ``refs/m1/tasks/<instance_id>``, fixed dates, so the same
seed gives the same commits); the gold patch is the reverse diff, from the bug back to the original,
and the problem statement is written from the failing tests' output (an OpenAI-compatible endpoint
may rewrite it as an issue when configured).

Not a flow: a step of the SWE flow (flows/swe/flow.py) and of `m1 swe synthesize`, kept beside it.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from flows.swe.repos import RepoProfile, git, head, source_files, suite_files
from verifiers.swe import SWEScorer, SWETask, statuses
from verifiers.swe.mutate import Mutant, mutants

TASK_REF = "refs/m1/tasks"


@dataclass(frozen=True)
class SynthesisParams:
    seed: int = 0
    workers: int = 2
    candidates_per_task: int = 8  # give up on a repository after quota * this many candidates
    max_fail_fraction: float = 0.5


@dataclass
class Synthesis:
    """One repository's kept tasks and what happened to every candidate."""

    repo: str
    tasks: list[dict] = field(default_factory=list)  # SWETask rows
    tried: int = 0
    rejected: Counter = field(default_factory=Counter)  # reason -> count
    kinds: Counter = field(default_factory=Counter)  # mutation kind -> kept
    baseline_tests: int = 0


def split(n: int, parts: int) -> list[int]:
    """n tasks over `parts` repositories, as evenly as possible, the first ones taking the rest."""
    return [n // parts + (i < n % parts) for i in range(parts)]


def commit_bug(repo_dir: Path, parent: str, path: str, source: str, instance_id: str) -> str:
    """Commit the mutated file on top of `parent` without touching the work tree (a private index),
    and keep it reachable under refs/m1/tasks/<instance_id>."""
    blob = git(repo_dir, "hash-object", "-w", "--stdin", input=source.encode()).strip()
    mode = git(repo_dir, "ls-tree", parent, "--", path).split()[0]
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        git(repo_dir, "read-tree", parent, env=env)
        git(repo_dir, "update-index", "--cacheinfo", f"{mode},{blob},{path}", env=env)
        tree = git(repo_dir, "write-tree", env=env).strip()
    commit = git(repo_dir, "commit-tree", tree, "-p", parent, "-m", f"m1 task {instance_id}").strip()
    git(repo_dir, "update-ref", f"{TASK_REF}/{instance_id}", commit)
    return commit


def restore_commit(repo_dir: Path, task: SWETask) -> None:
    """Recreate a synthesised task's commit when the repository lacks it (a fresh repositories folder
    with cached synthesis results): the gold patch reversed on its parent gives the same commit."""
    try:
        git(repo_dir, "cat-file", "-e", f"{task.base_commit}^{{commit}}")
        return
    except RuntimeError:
        pass
    parent = task.extra.get("created_from")
    if not parent:
        raise RuntimeError(f"{task.instance_id}: commit {task.base_commit} is not in {repo_dir}")
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        git(repo_dir, "read-tree", parent, env=env)
        git(repo_dir, "apply", "--cached", "-R", "-", input=task.patch.encode(), env=env)
        tree = git(repo_dir, "write-tree", env=env).strip()
    commit = git(repo_dir, "commit-tree", tree, "-p", parent, "-m", f"m1 task {task.instance_id}").strip()
    if commit != task.base_commit:
        raise RuntimeError(f"{task.instance_id}: recreated commit {commit} differs from {task.base_commit}")
    git(repo_dir, "update-ref", f"{TASK_REF}/{task.instance_id}", commit)


_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")


def failure_messages(test_output: str) -> dict[str, str]:
    """test id -> pytest's one-line reason, from the ``FAILED id - reason`` summary lines."""
    out = {}
    for line in test_output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            test, _, reason = line.split(" ", 1)[1].partition(" - ")
            out[test] = _ADDRESS.sub("0x…", reason.strip())
    return out


def first_failure(test_output: str, limit: int = 12) -> list[str]:
    """The ``E`` lines (assertion and exception) of the first failure in pytest's report."""
    lines = []
    for line in test_output.split("= FAILURES =", 1)[-1].splitlines():
        if line.startswith("E "):
            lines.append(_ADDRESS.sub("0x…", line.rstrip()))
        elif lines and line.startswith("_____"):
            break
    return lines[:limit]


def statement(repo: str, f2p: list[str], test_output: str) -> str:
    """A problem statement from the failing tests' output: what fails and how, never why."""
    reasons = failure_messages(test_output)
    listed = "\n".join(f"- `{t}`" + (f": {reasons[t]}" if reasons.get(t) else "") for t in f2p[:10])
    more = f"\n- ... and {len(f2p) - 10} more" if len(f2p) > 10 else ""
    excerpt = "\n".join(first_failure(test_output))
    text = (
        f"Something is broken in `{repo}`: {len(f2p)} test{'s' if len(f2p) > 1 else ''} of its own suite "
        f"fail{'' if len(f2p) > 1 else 's'}, while the rest of the suite passes.\n\nFailing:\n{listed}{more}\n"
    )
    if excerpt:
        text += f"\nThe first failure reports:\n```\n{excerpt}\n```\n"
    return text + "\nFix the library so that these tests pass again, without changing the tests."


REWRITE_PROMPT = (
    "Rewrite this test-failure report about the Python library {repo} as a short GitHub issue from a "
    "user who ran into the bug: describe the wrong behaviour and how to see it. Do not guess the cause "
    "and do not propose a fix. Keep the names of the failing tests.\n\n{report}"
)


def rewrite(endpoint, repo: str, text: str) -> str:
    """The statement as an issue, by the configured endpoint (verifiers.endpoint.Endpoint)."""
    answer = endpoint.chat([REWRITE_PROMPT.format(repo=repo, report=text)], max_tokens=700, temperature=0.2)[
        0
    ][0]
    return answer.strip() or text


def baseline_passing(baseline: Mapping[str, str]) -> list[str]:
    """The tests that pass on the clean repository (sorted), from its per-test statuses; ids with
    whitespace (pytest's parametrised ids with spaces) are left out, as a task's test lists cannot hold
    them."""
    return sorted(t for t, s in baseline.items() if s == "PASSED" and not re.search(r"\s", t))


def mutant_outcome(
    passing: Sequence[str], found: Mapping[str, str], max_fail_fraction: float
) -> tuple[list[str], str | None]:
    """(FAIL_TO_PASS, why the mutant is rejected or None) of a mutant's run: FAIL_TO_PASS are the
    baseline-passing tests that do not pass now (failed, errored, skipped or missing from the log). A
    mutant is rejected when none fails, or when more than ``max_fail_fraction`` of the baseline-passing
    tests fail (exactly that fraction is kept); PASS_TO_PASS is the rest of ``passing``."""
    f2p = [t for t in passing if found.get(t) != "PASSED"]
    if not f2p:
        return f2p, "no test fails"
    if len(f2p) > max_fail_fraction * len(passing):
        return f2p, f"more than {max_fail_fraction:.0%} of the tests fail"
    return f2p, None


def gold_locations(mutant: Mutant) -> dict:
    return {"files": [mutant.file], "functions": [f"{mutant.file}::{mutant.entity}"]}


def synthesize_repo(
    p: RepoProfile,
    repo_dir: Path,
    quota: int,
    params: SynthesisParams,
    scorer: SWEScorer,
    *,
    endpoint=None,
    on_progress: Callable[[Synthesis], None] | None = None,
) -> Synthesis:
    """Up to `quota` validated-by-construction tasks from one repository (see the module docstring)."""
    out = Synthesis(p.name)
    base = head(repo_dir)
    tests = suite_files(p, repo_dir, base)
    clean = SWETask(
        f"{p.name}__clean", p.name, base, "", "", [], tests, "", list(p.python_packages), p.test_cmd
    )
    clean.image = scorer.image(clean)  # built (or found) once, not looked up per candidate
    baseline_run = scorer.run(clean, tests)
    if not baseline_run.completed:
        raise RuntimeError(f"{p.name}: the clean test suite did not run: {baseline_run.describe()}")
    passing = baseline_passing(statuses(baseline_run))
    out.baseline_tests = len(passing)
    if not passing:
        raise RuntimeError(f"{p.name}: no test passes on the clean repository")

    def run(m: Mutant):
        return scorer.run(clean, tests, extra={m.file: m.source})

    candidates = mutants(repo_dir, source_files(p, repo_dir, base), params.seed)
    budget = quota * params.candidates_per_task
    with ThreadPoolExecutor(params.workers) as pool:
        while len(out.tasks) < quota and out.tried < budget:
            batch = [m for _, m in zip(range(params.workers), candidates, strict=False)]
            if not batch:
                break
            for m, result in zip(batch, pool.map(run, batch), strict=True):
                if len(out.tasks) >= quota:
                    break
                out.tried += 1
                if not result.completed:
                    out.rejected[f"suite did not complete ({result.limit or result.result.status})"] += 1
                    continue
                f2p, rejected = mutant_outcome(passing, statuses(result), params.max_fail_fraction)
                if rejected:
                    out.rejected[rejected] += 1
                    continue
                instance_id = f"{p.name}__{m.kind}__{m.key}"
                commit = commit_bug(repo_dir, base, m.file, m.source, instance_id)
                task = SWETask(
                    instance_id=instance_id,
                    repo=p.name,
                    base_commit=commit,
                    patch=git(repo_dir, "diff", "--no-color", "--no-ext-diff", commit, base),
                    test_patch="",
                    FAIL_TO_PASS=f2p,
                    PASS_TO_PASS=[t for t in passing if t not in set(f2p)],
                    problem_statement=statement(p.name, f2p, result.test_output),
                    python_packages=list(p.python_packages),
                    test_cmd=p.test_cmd,
                    extra={
                        "version": p.version, "created_from": base, "mutation": m.kind, "modifier": m.modifier,
                        "explanation": m.explanation, "gold_locations": gold_locations(m),
                    },
                )  # fmt: skip
                if endpoint is not None:
                    task.problem_statement = rewrite(endpoint, p.name, task.problem_statement)
                out.tasks.append(task.to_row())
                out.kinds[m.kind] += 1
            if on_progress:
                on_progress(out)
    return out
