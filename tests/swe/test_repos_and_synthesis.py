"""SWE repository building and task synthesis without PyPI or Docker: a tiny library's sdist
(tests/swe/minilib.py) becomes a git repository as the real profiles do, and synthesis runs its suite
in this process. What is pinned: the repository's one reproducible commit and its checks, the suite and
source files, the bug commits and their refs, and which mutants become tasks with which fields. The
Docker tests (test_flow.py, conftest.py's isodate tasks) prove the same on real containers."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from flows.errors import InputError
from flows.swe import repos
from flows.swe.repos import GIT_ENV, expected_commit, git, make_repo, profile, source_files, suite_files
from flows.swe.synthesize import TASK_REF, SynthesisParams, commit_bug, restore_commit, synthesize_repo
from tests.swe.minilib import LIBRARY, PROFILE, SUITE, SuiteScorer, no_base_build, sdist
from verifiers.swe import SWETask


def made(tmp_path: Path, **files) -> tuple[Path, dict]:
    cache = tmp_path / "cache"
    sdist(cache, files or None)
    summary = make_repo(PROFILE, tmp_path / "out" / "repos", cache)
    return Path(summary["path"]), summary


def show(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


# -- the repository ---------------------------------------------------------------------------------


def test_an_sdist_becomes_one_fixed_commit_holding_all_of_it(tmp_path):
    repo, summary = made(tmp_path)
    archive = tmp_path / "cache" / "sdists" / "mini-1.0.tar.gz"
    assert summary == {
        "repo": "mini", "requirement": "mini==1.0", "commit": show(repo, "rev-parse", "HEAD").strip(),
        "files": 9, "test_files": 4, "path": str(tmp_path / "out" / "repos" / "mini"), "created": True,
    }  # fmt: skip
    assert show(repo, "log", "--format=%s|%an <%ae>|%cn|%ad", "--date=iso").splitlines() == [
        f"{expected_commit(PROFILE, archive)}|m1 <m1@localhost>|m1|2000-01-01 00:00:00 +0000"
    ]
    assert show(repo, "branch", "--show-current").strip() == "main"
    assert show(repo, "status", "--porcelain", "--ignored") == ""  # every file committed
    assert sorted(p.name for p in repo.parent.iterdir()) == ["mini"]  # the unpacking folder is gone
    # the same sdist anywhere gives the same commit: task commits built on it are reproducible
    other = make_repo(PROFILE, tmp_path / "elsewhere", tmp_path / "cache")
    assert other["commit"] == summary["commit"]


def test_a_repository_in_place_is_kept_and_another_is_refused(tmp_path):
    repo, summary = made(tmp_path)
    assert make_repo(PROFILE, repo.parent, tmp_path / "cache") == {**summary, "created": False}
    # another library into the same (existing) output folder
    p2 = repos.RepoProfile("mini2", "mini2==1.0", PROFILE.sources, PROFILE.tests)
    sdist(tmp_path / "cache", name="mini2-1.0")
    assert make_repo(p2, repo.parent, tmp_path / "cache")["created"] is True
    show(repo, "commit", "-q", "--allow-empty", "-m", "local change")
    with pytest.raises(InputError, match="exists but does not hold mini==1.0"):
        make_repo(PROFILE, repo.parent, tmp_path / "cache")
    broken = repo.parent / "broken"
    (broken / ".git").mkdir(parents=True)  # not a repository git can read
    p3 = repos.RepoProfile("broken", "mini==1.0", PROFILE.sources, PROFILE.tests)
    with pytest.raises(InputError, match="exists but does not hold"):
        make_repo(p3, repo.parent, tmp_path / "cache")


def test_an_sdist_without_the_profiles_folders_is_refused_and_leaves_nothing(tmp_path):
    sdist(tmp_path / "cache", {"tests/test_calc.py": None, "tests/span_test.py": None, "tests/__init__.py": None,
                               "tests/helpers.py": None})  # fmt: skip
    with pytest.raises(InputError, match="mini==1.0: the sdist has no tests"):
        make_repo(PROFILE, tmp_path / "out", tmp_path / "cache")
    assert list((tmp_path / "out").iterdir()) == []


def test_an_sdist_member_linking_outside_is_refused(tmp_path):
    sdist(tmp_path / "cache", links={"src/mini/escape": "../../../../outside"})
    with pytest.raises(tarfile.FilterError):
        make_repo(PROFILE, tmp_path / "out", tmp_path / "cache")


def test_a_missing_sdist_is_downloaded_with_pip_once(tmp_path, monkeypatch):
    calls = []

    def run(cmd, **kw):
        if cmd[0] != sys.executable:
            return subprocess.run(cmd, **kw)
        calls.append(cmd)
        dest = Path(cmd[cmd.index("--dest") + 1])
        sdist(tmp_path / "pypi").rename(dest / "mini-1.0.tar.gz")
        return SimpleNamespace(returncode=0, stderr="")

    monkeypatch.setattr(repos, "subprocess", SimpleNamespace(run=run))
    cache = tmp_path / "cache"
    got = repos.sdist(PROFILE, cache)
    assert got == cache / "sdists" / "mini-1.0.tar.gz" and got.is_file()
    (cmd,) = calls
    assert cmd[:-3] == [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary=:all:"]
    assert cmd[-3] == "--dest" and cmd[-1] == "mini==1.0"
    assert repos.sdist(PROFILE, cache) == got and len(calls) == 1  # cached
    assert [p.name for p in (cache / "sdists").iterdir()] == ["mini-1.0.tar.gz"]  # no download folder left


def test_a_failed_download_says_why(tmp_path, monkeypatch):
    def run(cmd, **kw):
        return SimpleNamespace(returncode=1, stderr="ERROR: No matching distribution found for mini==1.0\n")

    monkeypatch.setattr(repos, "subprocess", SimpleNamespace(run=run))
    with pytest.raises(
        ConnectionError, match=r"pip download mini==1.0 failed: ERROR: No matching distribution"
    ):
        repos.sdist(PROFILE, tmp_path / "cache")


def test_the_cached_sdist_is_found_whatever_its_separators(tmp_path):
    folder = tmp_path / "sdists"
    folder.mkdir()
    (folder / "other_lib-1.0.tar.gz").write_bytes(b"")
    (folder / "Mini-1.0.tar.gz").write_bytes(b"")  # as PyPI spells some names
    assert repos.sdist(PROFILE, tmp_path) == folder / "Mini-1.0.tar.gz"


def test_suite_and_source_files_at_a_commit(tmp_path):
    repo, _ = made(tmp_path)
    first = show(repo, "rev-parse", "HEAD").strip()
    assert suite_files(PROFILE, repo) == SUITE
    assert source_files(PROFILE, repo) == ["src/mini/__init__.py", LIBRARY]
    (repo / "src/mini/extra.py").write_text("X = 1\n")
    (repo / "tests/test_extra.py").write_text("def test_x():\n    pass\n")
    show(repo, "add", "-A")
    show(repo, "commit", "-q", "-m", "more")
    assert source_files(PROFILE, repo) == ["src/mini/__init__.py", LIBRARY, "src/mini/extra.py"]
    assert suite_files(PROFILE, repo) == [*SUITE, "tests/test_extra.py"]
    assert source_files(PROFILE, repo, first) == ["src/mini/__init__.py", LIBRARY]
    assert suite_files(PROFILE, repo, first) == SUITE


def test_git_errors_name_the_command_and_end_with_gits_message(tmp_path):
    repo, _ = made(tmp_path)
    name = "no-such-revision-" + "x" * 600
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(["git", "-C", str(repo), "show", name, "--"], capture_output=True, env=env)
    tail = done.stderr.decode().strip()
    assert len(tail) > 500
    with pytest.raises(RuntimeError) as caught:
        git(repo, "show", name, "--", "ignored")
    assert str(caught.value) == f"git show {name} -- in {repo}: {tail[-500:]}"


def test_unknown_profiles_are_refused():
    assert profile("isodate").version == "0.7.2"
    with pytest.raises(InputError, match=r"unknown repository 'nope' \(known: cachetools, isodate, toolz\)"):
        profile("nope")


# -- bug commits --------------------------------------------------------------------------------------


def test_a_bug_is_committed_on_its_parent_without_touching_the_checkout(tmp_path):
    repo, summary = made(tmp_path)
    base = summary["commit"]
    (repo / "tests/helpers.py").write_text("LOW, HIGH = 1, 4\n")  # a local change, not staged
    staged_before = show(repo, "diff", "--cached", "--name-only")
    bug = show(repo, "show", f"HEAD:{LIBRARY}").replace("high - low", "low - high")
    commit = commit_bug(repo, base, LIBRARY, bug, "mini__boundary__1")
    assert show(repo, "rev-parse", f"{TASK_REF}/mini__boundary__1").strip() == commit
    assert show(repo, "log", "-1", "--format=%P|%s", commit).strip() == f"{base}|m1 task mini__boundary__1"
    assert show(repo, "diff", "--name-only", base, commit).split() == [LIBRARY]
    assert show(repo, "show", f"{commit}:{LIBRARY}") == bug
    assert show(repo, "ls-tree", "-r", "--name-only", commit) == show(
        repo, "ls-tree", "-r", "--name-only", base
    )
    assert show(repo, "rev-parse", "HEAD").strip() == base  # the branch stays where it was
    assert show(repo, "diff", "--cached", "--name-only") == staged_before
    assert show(repo, "status", "--porcelain").split() == ["M", "tests/helpers.py"]
    # the same bug on the same parent is the same commit (fixed dates)
    assert commit_bug(repo, base, LIBRARY, bug, "mini__boundary__1") == commit


def task_of(repo: Path, base: str, commit: str, instance_id: str, *, parent: str | None = None) -> SWETask:
    patch = git(repo, "diff", "--no-color", "--no-ext-diff", commit, base)
    extra = {"created_from": parent} if parent else {}
    return SWETask(
        instance_id, "mini", commit, patch, "", ["tests/span_test.py::test_span"], [], "p", extra=extra
    )


def test_a_missing_task_commit_is_recreated_from_its_gold_patch(tmp_path):
    repo, summary = made(tmp_path)
    base = summary["commit"]
    bug = show(repo, "show", f"HEAD:{LIBRARY}").replace("high - low", "low - high")
    commit = commit_bug(repo, base, LIBRARY, bug, "mini__x")
    task = task_of(repo, base, commit, "mini__x", parent=base)
    fresh = tmp_path / "fresh"
    show(tmp_path, "clone", "-q", "--no-local", str(repo), str(fresh))  # the task's commit is not there
    with pytest.raises(subprocess.CalledProcessError):
        show(fresh, "cat-file", "-e", f"{commit}^{{commit}}")
    restore_commit(fresh, task)
    assert show(fresh, "rev-parse", f"{TASK_REF}/mini__x").strip() == commit
    assert show(fresh, "show", f"{commit}:{LIBRARY}") == bug
    assert show(fresh, "status", "--porcelain") == "" and show(fresh, "diff", "--cached") == ""


def test_a_task_commit_in_place_is_left_alone(tmp_path):
    repo, summary = made(tmp_path)
    base = summary["commit"]
    restore_commit(repo, task_of(repo, base, base, "mini__present"))  # no created_from needed
    assert show(repo, "for-each-ref", TASK_REF) == ""


def test_a_task_commit_that_cannot_be_recreated_says_why(tmp_path):
    repo, summary = made(tmp_path)
    base = summary["commit"]
    bug = show(repo, "show", f"HEAD:{LIBRARY}").replace("high - low", "low - high")
    commit = commit_bug(repo, base, LIBRARY, bug, "mini__y")
    fresh = tmp_path / "fresh"
    show(tmp_path, "clone", "-q", "--no-local", str(repo), str(fresh))
    with pytest.raises(RuntimeError, match=f"^mini__y: commit {commit} is not in {fresh}$"):
        restore_commit(fresh, task_of(repo, base, commit, "mini__y"))
    wrong = task_of(repo, base, commit, "mini__y", parent=base)
    wrong.base_commit = "0" * 40  # not the commit the patch recreates
    with pytest.raises(RuntimeError, match=f"^mini__y: recreated commit {commit} differs from {'0' * 40}$"):
        restore_commit(fresh, wrong)
    assert show(fresh, "for-each-ref", TASK_REF) == ""


# -- synthesis ----------------------------------------------------------------------------------------


@pytest.fixture
def synth(tmp_path, monkeypatch):
    """(repo, base commit, scorer): the library's repository and a scorer running its suite in-process."""
    repo, summary = made(tmp_path)
    return repo, summary["commit"], SuiteScorer(repo.parent, no_base_build(monkeypatch))


def passing_suite() -> list[str]:
    return sorted(
        f"{f}::{t}"
        for f, names in {
            "tests/span_test.py": ["test_scaled", "test_span", "test_unrelated"],
            "tests/test_calc.py": ["test_between_edges", "test_between_outside", "test_clamp_high",
                                   "test_clamp_inside", "test_clamp_low"],
        }.items()
        for t in names
    )  # fmt: skip


def test_synthesis_keeps_mutants_the_suite_catches_as_commits_with_their_gold_patch(synth):
    repo, base, scorer = synth
    out = synthesize_repo(PROFILE, repo, 3, SynthesisParams(seed=0, workers=2), scorer)
    assert (out.repo, out.baseline_tests, len(out.tasks)) == ("mini", 8, 3)
    assert out.tried == 3 + sum(out.rejected.values()) and out.tried <= len(scorer.runs) - 1
    assert sum(out.kinds.values()) == 3
    clean = SWETask("mini__clean", "mini", base, "", "", [], SUITE, "", list(PROFILE.python_packages))
    assert scorer.runs[0] == {}  # the baseline: the clean repository
    for row in out.tasks:
        task = SWETask.from_row(row)
        kind, key = task.instance_id.split("__")[1:]
        assert task.instance_id == f"mini__{kind}__{key}" and task.repo == "mini"
        assert out.kinds[kind] >= 1 and row["mutation"] == kind
        assert show(repo, "rev-parse", f"{TASK_REF}/{task.instance_id}").strip() == task.base_commit
        assert show(repo, "log", "-1", "--format=%P", task.base_commit).strip() == base
        bug = show(repo, "show", f"{task.base_commit}:{LIBRARY}")
        assert {LIBRARY: bug} in scorer.runs
        # the gold patch takes the bug back to the original
        assert task.patch == git(repo, "diff", "--no-color", "--no-ext-diff", task.base_commit, base)
        assert task.patch.startswith(f"diff --git a/{LIBRARY} b/{LIBRARY}")
        # FAIL_TO_PASS: what the bug breaks, by the suite's own run; PASS_TO_PASS: the rest
        broken = scorer.run(clean, SUITE, extra={LIBRARY: bug})
        from verifiers.swe import statuses

        failing = sorted(t for t, s in statuses(broken).items() if s != "PASSED")
        assert task.FAIL_TO_PASS == failing and failing
        assert task.PASS_TO_PASS == [t for t in passing_suite() if t not in failing]
        assert task.python_packages == list(PROFILE.python_packages) and task.test_patch == ""
        assert task.extra["version"] == "1.0" and task.extra["created_from"] == base
        assert task.extra["gold_locations"] == {
            "files": [LIBRARY], "functions": [f"{LIBRARY}::{task.extra['gold_locations']['functions'][0].split('::')[1]}"]
        }  # fmt: skip
        assert task.extra["modifier"] and task.extra["explanation"]
        assert task.problem_statement.startswith("Something is broken in `mini`")
        assert all(f"- `{t}`" in task.problem_statement for t in task.FAIL_TO_PASS)
    # the same seed gives the same tasks
    again = synthesize_repo(PROFILE, repo, 3, SynthesisParams(seed=0, workers=1), scorer)
    assert [t["base_commit"] for t in again.tasks] == [t["base_commit"] for t in out.tasks]


def test_synthesis_rejects_what_teaches_nothing_and_counts_why(synth):
    repo, _, scorer = synth
    params = SynthesisParams(seed=0, candidates_per_task=3, max_fail_fraction=0.0)
    strict = synthesize_repo(PROFILE, repo, 2, params, scorer)
    assert strict.tasks == [] and strict.tried == 2 * 3  # no mutant can be kept: the whole budget is tried
    assert set(strict.rejected) <= {"no test fails", "more than 0% of the tests fail"}
    assert sum(strict.rejected.values()) == 6 and strict.rejected["more than 0% of the tests fail"] >= 1
    assert show(repo, "for-each-ref", TASK_REF) == ""


def test_synthesis_stops_at_the_quota_and_at_the_candidates(synth):
    repo, _, scorer = synth
    one = synthesize_repo(PROFILE, repo, 1, SynthesisParams(seed=0, workers=4), scorer)
    assert len(one.tasks) == 1 and one.tried <= 4
    few = synthesize_repo(PROFILE, repo, 50, SynthesisParams(seed=0, workers=2), scorer)
    assert 0 < len(few.tasks) < 50 and few.tried < 50 * 8  # every candidate of the small library tried


def test_unfinished_mutant_runs_are_rejected_and_an_unfinished_baseline_stops(synth, tmp_path):
    repo, _, scorer = synth
    scorer.incomplete = lambda n: n % 2 == 1  # every other mutant run is cut short
    out = synthesize_repo(PROFILE, repo, 2, SynthesisParams(seed=0, workers=1), scorer)
    assert out.rejected["suite did not complete (timeout)"] == (out.tried + 1) // 2
    scorer.incomplete = lambda n: True  # the baseline too
    with pytest.raises(RuntimeError, match="mini: the clean test suite did not run: stopped by the timeout"):
        synthesize_repo(PROFILE, repo, 1, SynthesisParams(seed=0), scorer)


def test_statements_are_rewritten_only_when_an_endpoint_is_configured(synth):
    repo, _, scorer = synth
    asked = []

    class Endpoint:
        def chat(self, prompts, max_tokens, temperature):
            asked.append(prompts[0])
            return [["  An issue: clamp is wrong.  "]]

    out = synthesize_repo(PROFILE, repo, 1, SynthesisParams(seed=0), scorer, endpoint=Endpoint())
    assert out.tasks[0]["problem_statement"] == "An issue: clamp is wrong."
    assert len(asked) == 1 and "Something is broken in `mini`" in asked[0]
    plain = synthesize_repo(PROFILE, repo, 1, SynthesisParams(seed=0), scorer)
    assert plain.tasks[0]["problem_statement"].startswith("Something is broken")


def test_progress_is_reported_after_each_batch(synth):
    repo, _, scorer = synth
    seen = []
    synthesize_repo(
        PROFILE,
        repo,
        2,
        SynthesisParams(seed=0, workers=1),
        scorer,
        on_progress=lambda s: seen.append(s.tried),
    )
    assert seen == list(range(1, len(seen) + 1)) and seen
