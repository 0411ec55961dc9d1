"""Mutation testing with mutmut 3, one package at a time, each against only the fast tests that cover it.

    python scripts/mutation.py [PACKAGE ...] [--minutes N] [--sample N] [--recheck-only] [--report-only]

mutmut reads one [tool.mutmut] from the pyproject.toml of its working directory and mutates into
./mutants. To give each package its own source paths and tests, every package runs in its own copy of
the tree, mutants/<package>/, whose pyproject.toml gets the shared [tool.mutmut] settings plus that
package's `source_paths` and test selection. Runs are incremental (mutmut keeps results next to the
mutated files), so a package stopped by --minutes continues where it stopped on the next run.

The table counts mutmut's verdicts per package: killed (a test failed; a timeout counts as killed, since
the mutant made a test hang), survived, no tests (no selected test reaches the function) and not checked
(not run yet), other (suspicious, segfault). Survivors judged by hand are in
scripts/mutation_equivalent.txt, each with a reason: "equivalent" (no test could kill it: same
behaviour) or "survives" (a real change the fast CPU-only tests cannot see). Rates: killed / total,
killed / (total - equivalent), and killed / checked (total - not checked - other: for a partial run).
The table and the survivors not judged equivalent go to scripts/MUTATION_RESULTS.md.

--sample N runs a seeded uniform sample of N of the mutants not checked yet instead of all of them (the
logic tasks have 12K mutants, hours on 2 cores): the sample is kept in mutants/<package>/sample.txt and
the report states its own kill rate, an unbiased estimate for the package's unchecked mutants.

Why one file over 400 lines: over a third of it is data (each package's source paths, test selection and
note, in PACKAGES), and the rest is one command-line tool a developer runs by path; split, its parts
would only ever be imported by each other.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "mutants"
EQUIVALENT = ROOT / "scripts" / "mutation_equivalent.txt"
RESULTS = ROOT / "scripts" / "MUTATION_RESULTS.md"
TREE = ["flows", "m1model", "verifiers", "sandboxes", "kernels", "examples", "tests", "pyproject.toml"]


@dataclass(frozen=True)
class Package:
    name: str
    source: list[str]  # what mutmut mutates
    tests: list[str]  # the fast tests that cover it
    note: str = ""


# Fast tests that take 20-50 s each: deselected, since every mutant that survives them would run them again.
# They still run in CI; leaving them out only makes the measured kill rates lower bounds.
SLOW_FAST_TESTS = [
    "--deselect",
    "tests/rl/test_evaluation.py::test_the_run_the_stages_and_the_experiments_evaluate_through_one_function",
    "--deselect",
    "tests/rl/test_train_flow.py::test_cli_list_stages_json",
    "--deselect",
    "tests/rl/test_train_flow.py::test_cli_list_stages_and_bad_stage",
]

PACKAGES = [
    Package(
        "store",
        ["flows/store.py"],
        ["tests/foundation/test_store.py", "tests/foundation/test_store_versions.py"],
    ),
    Package(
        "rl",
        ["m1model/rl"],
        [
            "tests/rl/test_window.py",
            "tests/rl/test_losses.py",
            "tests/rl/test_advantages.py",
            "tests/rl/test_trainer.py",
            "tests/rl/test_plausible_bugs.py",
            "tests/rl/test_sft_and_pool.py",
            "tests/rl/test_curriculum_weighting.py",
            "tests/rl/test_collate.py",
            "tests/rl/test_rollout_sampling.py",
            "tests/rl/test_step_details.py",
            "tests/rl/test_loss_boundaries.py",
            "tests/rl/test_faults.py",  # its fast tests: checkpoints written, found and resumed
            "tests/rl/test_checkpoint_contract.py",
            "tests/rl/test_update_contract.py",
            "tests/rl/test_loss_values.py",
            "tests/rl/test_rl_wiring.py",
            "tests/rl/test_two_ranks_in_process.py",  # the multi-rank paths, rank 0 in the pytest process
            # the greedy evaluation, the length-bias monitor and the mixture weights (moved into m1model/rl)
            "tests/rl/test_evaluation.py",
            "tests/rl/test_length_growth.py",
            "tests/rl/test_mixture_edges.py",
            "tests/rl/test_length_bias_units.py",
            "tests/rl/test_rl_sample_survivors.py",  # from the seeded sample's survivors
            "tests/genrm/test_length_bias.py",
            "tests/experiments/test_algorithms.py",
            *SLOW_FAST_TESTS,
        ],
        "the whole of m1model/rl: trainer hooks (length_bias.py, mixture_weights.py) and the greedy evaluation"
        " (evaluation.py) included",
    ),
    Package(
        "curriculum",
        [
            f"flows/curriculum/{name}.py"
            for name in "__init__ base evaluation fingerprint layout mixture plan prompts report rewards settings"
            " stage step_log".split()
        ],
        [
            "tests/rl/test_stage_plan.py",
            "tests/rl/test_heldout_split.py",
            "tests/rl/test_evaluation.py",
            "tests/rl/test_curriculum_weighting.py",
            "tests/rl/test_mixture_edges.py",
            "tests/rl/test_train_flow.py",
            "tests/rl/test_faults.py",
            "tests/rl/test_curriculum_units.py",
            # from the seeded sample's untested mutants: a stage run in-process, its reports, its pieces
            "tests/rl/test_curriculum_stage_run.py",
            "tests/rl/test_curriculum_reports.py",
            "tests/rl/test_curriculum_pieces.py",
            "tests/verifiers/test_scoring.py",
            "tests/genrm/test_length_bias.py",
            "tests/genrm/test_judge_gate.py",
            "tests/curate/test_preset_benchmarks_evaluate.py",
            *SLOW_FAST_TESTS,
        ],
        "launch.py and worker.py (starting torchrun and its workers) are left out: only the distributed tests,"
        " slow, run them; the fast tests that take 20-50 s each (the stage CLI in a subprocess, the evaluation"
        " through a tiny trained run, the learning ladder's rung 1) are deselected: each survivor would run them",
    ),
    Package(
        "genrm",
        ["flows/genrm"],
        ["tests/genrm"],
        "the judges, Swiss rounds and judge evaluation (verifiers/genrm) are in the verifiers package;"
        " flow.py's Prefect flow is a decorated function, which mutmut does not mutate",
    ),
    Package(
        "swe",
        ["flows/swe"],
        ["tests/swe"],
        "SWE grading and bug mutation (verifiers/swe) are in the verifiers package; flow.py's Prefect flow and"
        " tasks are decorated functions; synthesis and validation against real repositories run in the docker"
        " tests, their outcome handling in tests/swe/test_outcomes.py on recorded test logs, repository building"
        " and bug synthesis on a tiny sdist in tests/swe/test_repos_and_synthesis.py",
    ),
    Package(
        "tasks",
        ["flows/tasks"],
        [
            "tests/tasks",
            # the flow and CLI round trips (50-90 s each) run every step; the units' tests cover the steps
            "--deselect",
            "tests/tasks/test_code.py::test_flow_writes_every_family_with_references_the_code_verifier_accepts",
            "--deselect",
            "tests/tasks/test_cli.py::test_round_trip_on_a_fresh_home",
        ],
        "the Prefect flows and tasks are decorated functions, which mutmut does not mutate; the tests that run"
        " a flow fail with RecursionError in mutmut's forked workers whatever the mutant, so this package's"
        " kills are checked again outside the fork (MUTANT_UNDER_TEST=<name> pytest from mutants/tasks/mutants;"
        " README, Development)",
    ),
    Package(
        "experiments",
        ["flows/experiments/summary.py", "flows/experiments/estimates.py"],
        ["tests/experiments"],
        "the experiment's own arithmetic (estimates over seeds, the summary table and checks); the runs"
        " themselves train models (slow)",
    ),
    Package(
        "serving",
        ["m1model/serving"],
        [
            "tests/genrm/test_server.py",
            "tests/genrm/test_serving_limits.py",
            "tests/genrm/test_server_app_contract.py",
            "tests/genrm/test_server_service.py",
        ],
        "mutmut credits what a session fixture runs to the first test that uses it: the shared server's"
        " construction is tested again by tests that build their own app (test_server_app_contract.py)",
    ),
    Package(
        "curate",
        ["flows/curate"],
        [
            "tests/curate/test_answers.py",
            "tests/curate/test_clean.py",
            "tests/curate/test_contamination.py",
            "tests/curate/test_dedup.py",
            "tests/curate/test_embedding.py",
            "tests/curate/test_ingest.py",
            "tests/curate/test_ingest_edges.py",
            "tests/curate/test_minhash.py",
            "tests/curate/test_thresholds.py",
            "tests/curate/test_passrate.py",
            "tests/curate/test_step_plumbing.py",
            "tests/curate/test_contamination_contract.py",
            "tests/curate/test_dedup_contract.py",
            "tests/curate/test_ingest_contract.py",
            "tests/curate/test_clean_contract.py",
            "tests/curate/test_embed_search.py",
            "tests/curate/test_answers_contract.py",
            "tests/curate/test_passrate_contract.py",
            "tests/curate/test_minhash_contract.py",
            "tests/curate/test_latex_escapes_and_minhash_defaults.py",
        ],
        "flow.py's helpers are covered by fast tests; its Prefect flows and tasks are decorated functions,"
        " which mutmut does not mutate (the flow tests cover them)",
    ),
    Package(
        "verifiers",
        [
            *(
                f"verifiers/{name}.py"
                for name in "base code constraints deadline endpoint format math math_fast pool scoring service"
                " testgen".split()
            ),
            "verifiers/genrm",
            "verifiers/swe",
        ],
        [
            "tests/verifiers",
            "tests/genrm/test_judges.py",
            "tests/genrm/test_judge_edges.py",
            "tests/genrm/test_pairwise_eval.py",  # judge evaluation and Swiss rounds (verifiers/genrm)
            "tests/genrm/test_swiss_eval.py",
            "tests/genrm/test_swiss_rounds.py",
            "tests/swe/test_units.py",
            "tests/swe/test_grading.py",
            "tests/swe/test_outcomes.py",  # bug mutation and grading outcomes (verifiers/swe)
            "tests/scale/test_serve_auth.py",
        ],
        "the SWE verifier's container runs and the code verifier's Docker backend run only in the docker tests",
    ),
    Package(
        "logic",
        ["verifiers/logic"],
        [
            *(
                f"tests/logic/{name}.py"
                for name in "test_tasks test_fuzz_contract test_pinned_outputs test_strict_answers test_solvers"
                " test_calibration test_reasoning_gym".split()
            ),
            "tests/logic_b",
        ],
        "the CLI and flow tests (tests/logic/test_cli.py, tests/tasks/test_logic.py: 15-30 s each) are left"
        " out of the selection: a surviving mutant runs every test that reaches it, and the task contract,"
        " fuzz and pinned-output tests cover the same task code",
    ),
    Package(
        "sandboxes",
        ["sandboxes"],
        [
            "tests/sandboxes/test_units.py",
            "tests/sandboxes/test_runs.py",
            "tests/sandboxes/test_adversarial.py",  # containment: network, fork bombs, escapes
            "tests/sandboxes/test_cpu_limit.py",
            "tests/sandboxes/test_container_args.py",  # the Docker backend against a recording SDK double
            "tests/sandboxes/test_swe_image_specs.py",
            "tests/sandboxes/test_swe_run_script.py",
            "tests/sandboxes/test_process_pieces.py",
            "tests/swe/test_grading.py",  # the SWE run script's logs, parsed
        ],
        "the Docker backend and SWE images (container.py, swe_images.py, swe_run.py, images.py) are covered by"
        " fast tests against a client that records the docker SDK calls, and by bash running the SWE script;"
        " the real engine runs in the docker tests",
    ),
]
BY_NAME = {p.name: p for p in PACKAGES}
FAST = "not slow and not docker and not gpu and not postgres and not browser"


def toml_value(v) -> str:
    """TOML for the value types [tool.mutmut] uses (JSON's strings, numbers and arrays are TOML's)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return json.dumps(v)


def prepare(pkg: Package) -> Path:
    """Refresh mutants/<package>/ from the checkout (mtimes kept, so mutmut re-mutates only what changed)."""
    work = WORK / pkg.name
    work.mkdir(parents=True, exist_ok=True)
    for name in TREE[:-1]:
        src = ROOT / name
        if src.exists():
            shutil.copytree(
                src, work / name, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
    text = (ROOT / "pyproject.toml").read_text()
    settings = tomllib.loads(text).get("tool", {}).get("mutmut", {})
    head, sep, tail = text.partition("\n[tool.mutmut]\n")
    if sep:  # drop the shared section (up to the next table) and write the merged one
        rest = tail.split("\n[", 1)
        text = head + ("\n[" + rest[1] if len(rest) > 1 else "\n")
    settings |= {
        "source_paths": pkg.source,
        "pytest_add_cli_args_test_selection": pkg.tests,
        # whole packages beside the mutated files: a package missing its __init__ would import the original
        "also_copy": TREE[:-2],
        "pytest_add_cli_args": [*settings.get("pytest_add_cli_args", []), "-m", FAST],
    }
    body = "".join(f"{k} = {toml_value(v)}\n" for k, v in settings.items())
    (work / "pyproject.toml").write_text(text.rstrip("\n") + "\n\n[tool.mutmut]\n" + body)
    return work


def mutmut(work: Path, *args: str, timeout: float | None = None, log: Path | None = None) -> int:
    """Run mutmut in a package's copy; output to `log` (its progress line is long), or to stdout."""
    exe = Path(sys.executable).with_name("mutmut")
    env = os.environ | {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": ""}
    with open(log, "a") if log else open(os.devnull, "w") as sink:
        proc = subprocess.Popen(
            [str(exe), *args],
            cwd=work,
            env=env,
            stdout=sink if log else None,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)  # mutmut stops its workers and keeps finished results
            try:
                return proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                return proc.wait()


def verdicts(work: Path) -> dict[str, str]:
    """mutant name -> status, from `mutmut results --all true`."""
    exe = Path(sys.executable).with_name("mutmut")
    out = subprocess.run(
        [str(exe), "results", "--all", "true"], cwd=work, capture_output=True, text=True, check=True
    ).stdout
    found = {}
    for line in out.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and "__mutmut_" in name:
            found[name] = status
    return found


NO_MUTANT = "x__no_such_mutant__"


def generate(work: Path, log: Path) -> None:
    """Mutate a package's copy and collect its test stats without running a mutant, so that a first
    --sample has mutants to draw from: mutmut generates the mutants and runs the stats, then stops, its
    filter matching nothing (its exit status says so; the stats are kept for the run that follows)."""
    mutmut(work, "run", NO_MUTANT, log=log)


def sample(work: Path, n: int, seed: int = 0) -> list[str]:
    """A seeded uniform sample of the mutants not checked yet, recorded in <work>/sample.txt."""
    unchecked = sorted(name for name, status in verdicts(work).items() if status == "not checked")
    chosen = sorted(random.Random(seed).sample(unchecked, min(n, len(unchecked))))
    (work / "sample.txt").write_text("".join(f"{name}\n" for name in chosen))
    print(f"   a sample of {len(chosen)} of the {len(unchecked)} mutants not checked yet", flush=True)
    return chosen


def sample_names(work: Path) -> list[str]:
    """The mutants of the package's sample (empty when it has none)."""
    path = work / "sample.txt"
    return path.read_text().split() if path.exists() else []


def unfinished_sample(work: Path, found: dict[str, str]) -> list[str]:
    """The mutants of an earlier sample that its run did not reach (stopped by --minutes)."""
    return [name for name in sample_names(work) if found.get(name) == "not checked"]


def sample_note(pkg: Package, found: dict[str, str], notes: dict[str, str]) -> str | None:
    """The sample's own verdicts and kill rate (with a 95% Wilson interval), when the package has one."""
    names = sample_names(WORK / pkg.name)
    if not names:
        return None
    status = [found.get(name, "not checked") for name in names]
    killed = sum(s in ("killed", "timeout") for s in status)
    equivalent = sum(
        s == "survived" and is_equivalent(notes.get(n)) for n, s in zip(names, status, strict=True)
    )
    checked = sum(s in ("killed", "timeout", "survived", "no tests") for s in status) - equivalent
    if not checked:
        return f"{pkg.name}: a sample of {len(names)} unchecked mutants, none run yet"
    p, z = killed / checked, 1.96
    centre = (p + z * z / (2 * checked)) / (1 + z * z / checked)
    half = z * math.sqrt(p * (1 - p) / checked + z * z / (4 * checked**2)) / (1 + z * z / checked)
    return (
        f"{pkg.name}: a uniform sample of {len(names)} mutants that were not checked yet (sample.txt, seed 0):"
        f" {checked} run and not equivalent, {killed} killed = {pct(p)} (95% interval"
        f" {pct(centre - half)}-{pct(centre + half)})"
    )


def judged() -> dict[str, str]:
    """Survivors judged by hand: `mutant_name  # equivalent: reason` or `mutant_name  # survives: reason`."""
    if not EQUIVALENT.exists():
        return {}
    out = {}
    for line in EQUIVALENT.read_text().splitlines():
        name, _, reason = line.partition("#")
        if name.strip():
            out[name.strip()] = reason.strip()
    return out


def is_equivalent(reason: str | None) -> bool:
    return bool(reason and reason.startswith("equivalent:"))


def row(pkg: Package, found: dict[str, str], notes: dict[str, str]) -> dict:
    count = {s: 0 for s in ("killed", "survived", "no tests", "not checked", "other")}
    for status in found.values():
        status = "killed" if status in ("killed", "timeout") else status
        count[status if status in count else "other"] += 1
    total = len(found)
    checked = total - count["not checked"] - count["other"]
    eq = sum(1 for n, s in found.items() if s == "survived" and is_equivalent(notes.get(n)))
    return {
        "package": pkg.name,
        "total": total,
        **count,
        "equivalent": eq,
        "kill_rate": count["killed"] / total if total else None,
        "kill_rate_checked": count["killed"] / checked if checked else None,
        "kill_rate_non_equivalent": count["killed"] / (total - eq) if total - eq else None,
    }


def pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


TABLE_HEAD = [
    "| package | mutants | killed | survived | equivalent | no tests | other | not checked"
    " | killed/total | killed/non-equivalent | killed/checked |",
    "|" + "---|" * 11,
]


def table_row(r: dict) -> str:
    """One package's markdown row of the kill-rate table."""
    counts = [r[k] for k in ("total", "killed", "survived", "equivalent", "no tests", "other", "not checked")]
    shares = [pct(r[k]) for k in ("kill_rate", "kill_rate_non_equivalent", "kill_rate_checked")]
    return "| " + " | ".join([r["package"], *map(str, counts), *shares]) + " |"


def modules_of(pkg: Package) -> tuple[str, ...]:
    """The dotted prefixes of the package's mutant names: flows/store.py -> flows.store."""
    return tuple(f"`{path.removesuffix('.py').replace('/', '.')}." for path in pkg.source)


def earlier_report() -> tuple[dict[str, str], list[str]]:
    """The previous RESULTS file's table rows (package -> markdown row) and survivor lines."""
    if not RESULTS.exists():
        return {}, []
    rows, survivors = {}, []
    for line in RESULTS.read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and cells[0] in BY_NAME:
            rows[cells[0]] = line
        elif line.startswith("- `"):
            survivors.append(line[2:])
    return rows, survivors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("packages", nargs="*", help=f"some of {', '.join(BY_NAME)} (default: all)")
    ap.add_argument("--minutes", type=float, default=None, help="stop each package's run after this long")
    ap.add_argument("--sample", type=int, default=None, help="run a seeded random N of the unchecked mutants")
    ap.add_argument(
        "--recheck-only", action="store_true", help="rerun only earlier survivors (after new tests)"
    )
    ap.add_argument("--report-only", action="store_true", help="tabulate the results of earlier runs")
    args = ap.parse_args()
    unknown = set(args.packages) - set(BY_NAME)
    if unknown:
        ap.error(f"unknown package(s) {', '.join(sorted(unknown))}; known: {', '.join(BY_NAME)}")
    run = [] if args.report_only else args.packages or list(BY_NAME)
    for pkg in [BY_NAME[n] for n in run]:
        work = prepare(pkg)
        log = WORK / f"{pkg.name}.log"
        print(
            f"== mutmut run: {pkg.name} ({', '.join(pkg.source)}), log: {log.relative_to(ROOT)}", flush=True
        )
        t0 = time.time()
        limit = args.minutes * 60 if args.minutes else None
        recheck, rc = [], 0
        if (work / "mutants").exists():  # tests may have changed since: check old survivors first
            notes, found = judged(), verdicts(work)  # survivors judged equivalent cannot be killed: not rerun
            recheck = [
                n
                for n, s in found.items()
                if s in ("survived", "no tests") and not is_equivalent(notes.get(n))
            ]
            recheck += unfinished_sample(work, found)
        if recheck:
            print(
                f"   rechecking {len(recheck)} earlier survivors, untested mutants and unfinished sample",
                flush=True,
            )
            rc = mutmut(work, "run", *recheck, timeout=limit, log=log)
        if args.sample and not args.recheck_only and not (work / "mutants" / "mutmut-stats.json").exists():
            generate(work, log)  # a fresh copy: no mutants to draw a sample from yet
        left = limit - (time.time() - t0) if limit else None
        chosen = sample(work, args.sample) if args.sample and not args.recheck_only else []
        if rc == 0 and not args.recheck_only and (left is None or left > 0):
            children = ["--max-children", str(os.cpu_count() or 2)]
            rc = mutmut(work, "run", *children, *chosen, timeout=left, log=log)
        print(f"   {pkg.name}: {time.time() - t0:.0f}s, exit {rc}", flush=True)
    # The table covers every package measured so far, whichever this invocation ran.
    notes_by_mutant = judged()
    rows, survivors, notes = [], [], []  # rows: markdown, this machine's or carried over
    earlier_rows, earlier_survivors = earlier_report()
    for pkg in PACKAGES:
        work = WORK / pkg.name
        if not (work / "mutants").exists():
            if pkg.name in earlier_rows:  # measured on another machine: its row and survivors carry over
                rows.append(earlier_rows[pkg.name])
                survivors += [line for line in earlier_survivors if line.startswith(modules_of(pkg))]
                notes.append(f"{pkg.name}: as in the previous report (its mutants/ is not on this machine)")
                notes += [f"{pkg.name}: {pkg.note}"] if pkg.note else []
            else:
                notes.append(f"{pkg.name}: not run")
            continue
        found = verdicts(work)
        rows.append(table_row(row(pkg, found, notes_by_mutant)))
        if note := sample_note(pkg, found, notes_by_mutant):
            notes.append(note)
        survivors += [
            f"`{n}`" + (f": {notes_by_mutant[n]}" if n in notes_by_mutant else "")
            for n, s in sorted(found.items())
            if s == "survived" and not is_equivalent(notes_by_mutant.get(n))
        ]
        if pkg.note:
            notes.append(f"{pkg.name}: {pkg.note}")
    text = "\n".join(TABLE_HEAD + rows)
    print(text)
    report = [
        "# Mutation testing (mutmut 3), measured by `make mutation`",
        "",
        "Each package against only its fast tests (`-m '" + FAST + "'`); a timeout counts as killed.",
        "Equivalent survivors and their reasons: scripts/mutation_equivalent.txt.",
        "",
        text,
        "",
        *(f"- {n}" for n in notes),
        "",
        f"## Survivors not judged equivalent ({len(survivors)}; reasons where judged)",
        "",
        *(f"- {n}" for n in survivors),
        "",
    ]
    RESULTS.write_text("\n".join(report + handwritten()))
    print(f"written: {RESULTS.relative_to(ROOT)}")


HANDWRITTEN = "## Hand-written bugs"


def handwritten() -> list[str]:
    """The report's sections of hand-written bugs (headed `## Hand-written bugs...`), carried over as they
    are: mutmut does not measure them, the engineers who wrote the bugs did."""
    if not RESULTS.exists():
        return []
    lines, keep, out = RESULTS.read_text().splitlines(), False, []
    for line in lines:
        if line.startswith("## "):
            keep = line.startswith(HANDWRITTEN)
        if keep:
            out.append(line)
    return out + ([""] if out else [])


if __name__ == "__main__":
    main()
