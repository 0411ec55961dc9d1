"""Swiss rounds and `m1 genrm eval` against scripted loopback judges whose behaviour is known."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from flows.genrm.files import read_labels
from flows.genrm.labels import labelled_set, write_labels
from tests.genrm.scripted import blocks, prefers_longer, scripted_judge
from verifiers.genrm.evaluate import best_of_n, evaluate_judge
from verifiers.genrm.prompts import defuse
from verifiers.genrm.swiss import Player, Tournament, default_rounds, judge_compare, run_swiss

M1 = [sys.executable, "-c", "from flows.cli import main; main()"]


def test_swiss_finds_the_best_candidate_without_rematches(tmp_path):
    rng = random.Random(0)
    texts = ["x" * n for n in rng.sample(range(5, 200), 8)]
    candidates = tmp_path / "candidates.jsonl"
    candidates.write_text(
        json.dumps({"id": "p1", "prompt": "write", "candidates": texts})
        + "\n"
        + json.dumps({"prompt": "again", "candidates": texts[:5]})
        + "\n"
    )
    out = tmp_path / "ranked.jsonl"
    with scripted_judge(prefers_longer) as (url, script):
        proc = subprocess.run(
            [*M1, "genrm", "swiss", "--input", str(candidates), "--output", str(out), "--endpoint", url],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert proc.returncode == 0, proc.stderr
    first, second = (json.loads(line) for line in out.read_text().splitlines())
    assert first["reference"] == max(texts, key=len) and second["reference"] == max(texts[:5], key=len)
    ranking = first["ranking"]
    assert ranking[0]["score"] == default_rounds(8) == 3  # won every round
    for r in ranking:
        assert len(r["opponents"]) == len(set(r["opponents"]))  # no rematches
    # 8 candidates: 3 rounds of 4 matches, 5 candidates: 3 rounds of 2 (+ a bye); 2 orders per match
    assert len(script.messages) == 2 * (3 * 4 + 3 * 2)


def test_buchholz_breaks_ties_by_opponent_strength():
    t = Tournament("t", "q", [Player(i, str(i)) for i in range(4)])
    t.players[0].score, t.players[1].score = 1.0, 1.0
    t.players[2].score, t.players[3].score = 2.0, 0.0
    t.players[0].opponents, t.players[1].opponents = [2], [3]
    assert [p.index for p in t.standings()][:3] == [2, 0, 1]


def test_swiss_counts_undecided_matches_as_ties():
    t = Tournament("t", "q", [Player(i, str(i)) for i in range(4)])
    (result,) = run_swiss([t], lambda triples: [None] * len(triples), rounds=2)
    assert all(r["score"] == 1.0 and r["undecided"] == 2 for r in result["ranking"])


def test_best_of_n_against_its_bounds():
    pools = {"p": [(5, 1.0), (2, 0.0), (1, 0.0), (2, 0.0), (4, 0.5), (1, 0.0), (2, 0.0), (2, 0.0)]}
    (one, eight) = best_of_n(pools, [1, 8], draws=200, seed=0)
    assert eight["judge"] == eight["pass"] == 1.0 and eight["random"] == pytest.approx(0.25)
    assert one["judge"] == pytest.approx(one["pass"]) == pytest.approx(one["random"], abs=0.08)


def test_eval_of_an_oracle_and_a_constant_judge(tmp_path):
    labs = labelled_set(6, 3, 6, seed=5)
    path = tmp_path / "labels.jsonl"
    write_labels(path, labs)
    with path.open("a") as f:
        f.write("not json\n" + json.dumps({"prompt_id": "x"}) + "\n")
    rows, bad = read_labels(path)
    assert len(rows) == len(labs) and [b["line"] for b in bad] == [len(labs) + 1, len(labs) + 2]

    truth = {(defuse(x.question).strip(), defuse(x.response).strip()): x.grade for x in labs}

    def oracle(message: str) -> str:
        b = blocks(message)
        return f"Grade: {truth[b['question'].strip(), b['response'].strip()]}"

    with scripted_judge(oracle) as (url, _):
        good = evaluate_judge(url, rows, pairwise=False)
    assert good.accuracy == 1.0 and good.spearman == pytest.approx(1.0) and good.failed == 0
    assert good.accuracy > good.majority_baseline
    for b in good.best_of_n:
        assert b["judge"] == pytest.approx(b["pass"]) and b["pass"] >= b["random"]

    with scripted_judge(lambda m: "Grade: 3") as (url, _):
        flat = evaluate_judge(url, rows, pairwise=False)
    assert flat.accuracy == pytest.approx(flat.confusion.get(3, {}).get("3", 0) / len(rows))
    eight = flat.best_of_n[-1]
    assert eight["judge"] == pytest.approx(eight["random"], abs=0.1) and eight["judge"] < eight["pass"]


def test_eval_cli_table_and_plot(tmp_path):
    labs = labelled_set(4, 2, 4, seed=6)
    path = tmp_path / "labels.jsonl"
    write_labels(path, labs)
    with scripted_judge(lambda m: "Grade: 5" if "[[" not in m else "Verdict: [[C]]") as (url, _):
        proc = subprocess.run(
            [*M1, "genrm", "eval", "--endpoint", url, "--labels", str(path)],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert proc.returncode == 0, proc.stderr
    assert "Best-of-8 accuracy" in proc.stdout and "position consistency" in proc.stdout
    assert (tmp_path / "labels.eval.png").stat().st_size > 10_000


def test_eval_cli_with_the_endpoint_down_is_one_line(tmp_path):
    path = tmp_path / "labels.jsonl"
    write_labels(path, labelled_set(2, 0, 0, seed=1))
    proc = subprocess.run(
        [*M1, "genrm", "eval", "--endpoint", "http://127.0.0.1:9/v1", "--labels", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and "judge endpoint failed" in proc.stderr and "Traceback" not in proc.stderr


def test_judge_compare_is_blind_and_symmetric():
    with scripted_judge(prefers_longer) as (url, _):
        compare = judge_compare(url)
        assert compare([("q", "long answer", "short"), ("q", "short", "long answer")]) == [1.0, -1.0]
