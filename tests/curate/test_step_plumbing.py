"""The plumbing between curation steps, checked without a Prefect server: content cache keys, merging
shard results, concatenating MinHash sketches, benchmark reading, the flow's plain helpers (sources,
benchmarks, sharded steps, writing outputs, the stage report) and nearest-neighbour search."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import polars as pl
import pytest

from flows.cache import content_key
from flows.config import (
    BenchmarkConfig,
    CurateConfig,
    DataConfig,
    MinhashConfig,
    PipelineConfig,
    SourceConfig,
)
from flows.curate import flow
from flows.curate.dedup import exact_dedup, minhash_dedup
from flows.curate.ingest import Ingested, describe_mapping, load_items, read_benchmark
from flows.curate.minhash import Sketch
from flows.curate.result import StepResult, merge_results, split_by_reason
from flows.curate.step_tasks import mapped
from flows.curate.steps import Decontaminate, ExactDedup
from flows.curate.text import normalized
from flows.data.synthetic_math import load_benchmark
from flows.errors import InputError
from flows.runner import ROW
from flows.schema import ITEM_COLUMNS, QUARANTINE_REASON
from flows.store import DatasetStore, StepCount
from tests.curate.helpers import write_jsonl


def key(**parameters) -> str:
    return content_key(None, parameters)


def items(prompts: list[str], prefix: str = "i") -> pl.DataFrame:
    n = len(prompts)
    return pl.DataFrame(
        {
            "id": [f"{prefix}{i}" for i in range(n)],
            "source": ["src"] * n,
            "domain": ["math"] * n,
            "task": [""] * n,
            "prompt": prompts,
            "reference": [str(i) for i in range(n)],
            "metadata": ["{}"] * n,
        }
    )


# --- cache keys ---------------------------------------------------------------------------------------


def test_equal_frames_with_different_chunk_layouts_share_a_cache_key():
    a = pl.DataFrame({"x": [1, 2], "s": ["a", "b"]})
    b = pl.DataFrame({"x": [3], "s": ["c"]})
    chunked = pl.concat([a, b], rechunk=False)
    whole = pl.DataFrame({"x": [1, 2, 3], "s": ["a", "b", "c"]})
    assert chunked.n_chunks() == 2 and whole.n_chunks() == 1
    assert key(shard=chunked) == key(shard=whole)
    assert len(key(shard=whole)) == 64  # a sha256 hex digest


def test_frame_cache_key_changes_with_any_value_row_order_name_or_dtype():
    df = pl.DataFrame({"x": [1, 2, 3], "s": ["a", "b", "c"]})
    base = key(shard=df)
    assert key(shard=df.with_columns(pl.col("s").replace("b", "B"))) != base
    assert key(shard=df.reverse()) != base
    assert key(shard=df.head(2)) != base
    assert key(shard=df.rename({"x": "y"})) != base  # same row hashes, other schema
    assert key(shard=df.with_columns(pl.col("x").cast(pl.Int32))) != base
    assert key(shard=df.clone()) == base


def test_array_cache_key_covers_values_dtype_and_shape():
    a = np.arange(6, dtype=np.int64)
    base = key(v=a)
    assert key(v=a.copy()) == base
    assert key(v=a + 1) != base
    assert key(v=a.reshape(2, 3)) != base
    assert key(v=a.reshape(2, 3)) != key(v=a.reshape(3, 2))
    assert key(v=a.view(np.float64)) != base  # the same bytes read as another dtype
    matrix = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert key(v=matrix.T) == key(v=np.ascontiguousarray(matrix.T))  # a strided view keys by its values
    assert key(v=matrix.T) != key(v=matrix.reshape(4, 3))


def test_config_models_key_by_their_field_values():
    c = MinhashConfig()
    assert key(c=c) == key(c=MinhashConfig())
    assert key(c=c) != key(c=MinhashConfig(threshold=0.8))
    assert key(c=CurateConfig()) != key(c=CurateConfig(minhash=MinhashConfig(num_perm=64)))


@dataclass
class Pair:
    left: object
    right: object


@dataclass
class OtherPair:
    left: object
    right: object


def test_dataclasses_key_by_type_and_every_field():
    assert key(p=Pair(1, 2)) == key(p=Pair(1, 2))
    assert key(p=Pair(1, 2)) != key(p=OtherPair(1, 2))
    assert key(p=Pair(1, 2)) != key(p=Pair(1, 3))
    assert key(p=Pair(1, 2)) != key(p=Pair(2, 2))
    # A frame inside a dataclass is keyed by content, not by its (truncated) repr: a change in the
    # middle of a long frame, invisible in repr, still gives a new key.
    df = pl.DataFrame({"x": list(range(200))})
    changed = df.with_columns(pl.when(pl.col("x") == 100).then(-1).otherwise(pl.col("x")).alias("x"))
    assert repr(df) == repr(changed)
    assert key(p=Pair(df, None)) != key(p=Pair(changed, None))
    count = StepCount("exact-dedup", 10, 8, "dups")
    assert key(c=count) != key(c=StepCount("exact-dedup", 10, 7, "dups"))


def test_dict_keys_ignore_insertion_order_but_not_keys_or_values():
    assert key(d={"a": 1, "b": 2}) == key(d={"b": 2, "a": 1})
    assert key(d={"a": 1, "b": 2}) != key(d={"a": 1, "c": 2})
    assert key(d={"a": 1, "b": 2}) != key(d={"a": 1, "b": 3})
    # keys of mixed types are sortable by repr, and 1 is not "1"
    assert key(d={1: "x", "1": "y"}) == key(d={"1": "y", 1: "x"})
    assert key(d={1: "x"}) != key(d={"1": "x"})
    assert key(a=1, b=2) != key(a=1, b=2, c=3)


def test_sequences_key_by_type_length_and_order():
    assert key(v=[1, 2]) == key(v=[1, 2])
    assert key(v=[1, 2]) != key(v=[2, 1])
    assert key(v=[1, 2]) != key(v=(1, 2))
    assert key(v=[[1], [2]]) != key(v=[[1, 2]])
    assert key(v=["a", "b"]) != key(v=["a", "b", "c"])
    assert key(v=[pl.DataFrame({"x": [1]})]) != key(v=[pl.DataFrame({"x": [2]})])


def test_scalars_key_by_repr():
    assert key(v=1) != key(v="1")
    assert key(v=None) != key(v="None")
    assert key(v=0.5) == key(v=0.5)


# --- merging shard results ----------------------------------------------------------------------------


def shard_result(rows: list[int], removed: list[int], reason: str = "too short", **evidence) -> StepResult:
    df = pl.DataFrame({ROW: rows, "id": [f"r{r}" for r in rows]})
    why = pl.Series([reason if r in removed else None for r in rows], dtype=pl.String)
    return split_by_reason(df, why, "clean", reason, **evidence)


def test_merged_shards_sum_counts_and_come_back_in_row_order():
    parts = [
        shard_result([4, 0, 2], removed=[2]),
        shard_result([1, 5, 3], removed=[5, 1], reason="other wording"),
    ]
    merged = merge_results(parts, order_by=ROW)
    assert merged.count == StepCount("clean", 6, 3, "too short")
    assert merged.kept[ROW].to_list() == [0, 3, 4]
    assert merged.removed[ROW].to_list() == [1, 2, 5]
    assert merged.removed[QUARANTINE_REASON].to_list() == ["other wording", "too short", "other wording"]
    assert merged.clusters is None and merged.matches is None and merged.rates is None


def test_a_single_shard_merges_to_itself():
    part = shard_result([0, 1, 2], removed=[1])
    merged = merge_results([part], order_by=ROW)
    assert merged.count == part.count
    assert merged.kept.equals(part.kept) and merged.removed.equals(part.removed)


def test_evidence_present_in_some_shards_is_concatenated_and_sorted():
    clusters = pl.DataFrame({ROW: [3, 1], "cluster": ["a", "b"]})
    rates = pl.DataFrame({ROW: [2, 0], "pass_rate": [0.5, 0.25]})
    parts = [
        shard_result([3, 1], removed=[], clusters=clusters, rates=rates.head(1)),
        shard_result([2, 0], removed=[], rates=rates.tail(1)),
    ]
    merged = merge_results(parts, order_by=ROW)
    assert merged.clusters.to_dicts() == [{ROW: 1, "cluster": "b"}, {ROW: 3, "cluster": "a"}]
    assert merged.rates.to_dicts() == [{ROW: 0, "pass_rate": 0.25}, {ROW: 2, "pass_rate": 0.5}]
    assert merged.matches is None


def test_without_the_order_column_shards_stay_in_concatenation_order():
    parts = [
        split_by_reason(pl.DataFrame({"id": ["b", "a"]}), pl.Series([None, None], dtype=pl.String), "s", ""),
        split_by_reason(pl.DataFrame({"id": ["d", "c"]}), pl.Series([None, "x"]), "s", ""),
    ]
    for order_by in (None, ROW):
        merged = merge_results(parts, order_by=order_by)
        assert merged.kept["id"].to_list() == ["b", "a", "d"]
        assert merged.removed["id"].to_list() == ["c"]


def test_shards_whose_columns_differ_in_numeric_type_merge_to_the_wider_type():
    # e.g. a score inferred as Int64 in a shard of whole numbers and Float64 elsewhere
    a = split_by_reason(
        pl.DataFrame({ROW: [1], "score": [1]}), pl.Series(["low"]), "s", "", matches=pl.DataFrame({"s": [1]})
    )
    b = split_by_reason(
        pl.DataFrame({ROW: [0], "score": [0.5]}),
        pl.Series(["low"]),
        "s",
        "",
        matches=pl.DataFrame({"s": [0.5]}),
    )
    merged = merge_results([a, b], order_by=ROW)
    assert merged.removed["score"].to_list() == [0.5, 1.0]
    assert merged.matches["s"].to_list() == [1.0, 0.5]


# --- MinHash sketches of shards -----------------------------------------------------------------------

DOCS = [
    "the quick brown fox jumps over the lazy dog today",
    "the quick brown fox jumps over the lazy dog tonight",
    "",
    "a completely different sentence about prime numbers and sums",
    "short one",
    "the quick brown fox jumps over the lazy dog today",
    "another unrelated text on geometry circles and their radii",
]


def test_concatenated_shard_sketches_equal_the_sketch_of_the_whole():
    texts = pl.Series(DOCS)
    whole = Sketch.of(texts, num_perm=32, shingle_size=3)
    cuts = [(0, 3), (3, 4), (4, 7)]  # shards of unequal sizes
    cat = Sketch.concat([Sketch.of(texts[a:b], num_perm=32, shingle_size=3) for a, b in cuts])
    assert cat.shingles.offsets.dtype == whole.shingles.offsets.dtype == np.int64
    np.testing.assert_array_equal(cat.shingles.offsets, whole.shingles.offsets)
    np.testing.assert_array_equal(cat.shingles.hashes, whole.shingles.hashes)
    assert cat.sig_t.shape == whole.sig_t.shape == (32, len(DOCS))
    np.testing.assert_array_equal(cat.sig_t, whole.sig_t)
    assert cat.shingles.n_docs == len(DOCS)


def test_minhash_dedup_with_a_concatenated_sketch_matches_hashing_the_rows():
    df = items(DOCS)
    sketch = Sketch.concat([Sketch.of(df["prompt"][a:b], num_perm=64) for a, b in [(0, 2), (2, 7)]])
    direct = minhash_dedup(df, 0.7, num_perm=64)
    via = minhash_dedup(df, 0.7, num_perm=64, sketch=sketch)
    assert via.removed["id"].to_list() == direct.removed["id"].to_list() == ["i1", "i5"]
    assert via.kept.equals(direct.kept)
    assert via.clusters.equals(direct.clusters)


# --- ingest: mapping description and benchmarks -------------------------------------------------------


def test_describe_mapping_marks_inferred_columns():
    text = describe_mapping({"prompt": "question", "metadata.difficulty": "level"}, ["prompt"])
    assert text == "prompt <- question (inferred), metadata.difficulty <- level"
    assert describe_mapping({}, []) == ""


def test_ingested_describes_the_columns_it_read(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps({"question": "1+1?", "answer": "2", "level": 3}) + "\n")
    got = load_items(path, mapping={"metadata.difficulty": "level"})
    assert got.describe_mapping() == (
        "metadata.difficulty <- level, prompt <- question (inferred), reference <- answer (inferred)"
    )
    assert Ingested(pl.DataFrame(), pl.DataFrame(), 0, 0).describe_mapping() == ""


def test_benchmark_columns_are_found_by_their_usual_names(tmp_path):
    path = write_jsonl(tmp_path / "bench.jsonl", [{"uid": "b1", "question": "What is 2+2?", "answer": "4"}])
    df = read_benchmark(path)
    assert df.columns == ["uid", "prompt", "reference"]
    assert df.row(0) == ("b1", "What is 2+2?", "4")


def test_benchmark_with_canonical_columns_is_read_as_is(tmp_path):
    rows = [{"prompt": "p", "reference": "r", "question": "q", "answer": "a"}]
    df = read_benchmark(write_jsonl(tmp_path / "b.jsonl", rows))
    assert df.to_dicts() == rows


def test_benchmark_mapping_wins_over_usual_names(tmp_path):
    rows = [{"text": "mapped prompt", "question": "alias prompt", "gold": "7", "answer": "alias"}]
    path = write_jsonl(tmp_path / "b.jsonl", rows)
    df = read_benchmark(path, {"prompt": "text", "reference": "gold"})
    assert df.select("prompt", "reference").row(0) == ("mapped prompt", "7")
    assert df["question"].to_list() == ["alias prompt"] and df["answer"].to_list() == ["alias"]
    only_reference = read_benchmark(path, {"reference": "gold"})
    assert only_reference.select("prompt", "reference").row(0) == ("alias prompt", "7")


def test_benchmark_prompts_are_text(tmp_path):
    df = read_benchmark(write_jsonl(tmp_path / "b.jsonl", [{"problem": 12}, {"problem": 7}]))
    assert df.schema["prompt"] == pl.String
    assert df["prompt"].to_list() == ["12", "7"]


def test_benchmark_mapping_to_a_missing_column_names_the_benchmark_and_its_columns(tmp_path):
    path = write_jsonl(tmp_path / "bench.jsonl", [{"question": "q", "answer": "a"}])
    with pytest.raises(InputError) as err:
        read_benchmark(path, {"prompt": "text"}, label="mine")
    assert (
        str(err.value)
        == f"benchmark mine ({path}): mapping prompt=text: no column 'text' (has: question, answer)"
    )
    with pytest.raises(InputError, match=r"^benchmark bench \("):
        read_benchmark(path, {"prompt": "text"})


def test_benchmark_without_a_prompt_column_says_how_to_map_one(tmp_path):
    path = write_jsonl(tmp_path / "bench.jsonl", [{"text": "q", "gold": "a"}])
    with pytest.raises(InputError) as err:
        read_benchmark(path)
    assert str(err.value) == (
        f"benchmark bench ({path}): no prompt column (has: text, gold); "
        'map one, e.g. data.benchmarks = [{path = "...", mapping = {prompt = "question"}}]'
    )
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(InputError, match=r"^benchmark named \(.*\): no prompt column \(has: none\)"):
        read_benchmark(empty, label="named")


def test_benchmark_with_a_broken_line_is_an_error(tmp_path):
    path = tmp_path / "bench.jsonl"
    path.write_text('{"prompt": "a"}\nnot json\n')
    with pytest.raises(InputError, match=r"bench.jsonl: line 2: invalid JSON"):
        read_benchmark(path)


# --- flow helpers -------------------------------------------------------------------------------------


def test_sources_come_from_curate_sources_then_input_path_else_none():
    listed = [SourceConfig(path="a.jsonl"), SourceConfig(path="b.parquet", name="b")]
    assert flow.sources(PipelineConfig(curate={"sources": listed}, data={"input_path": "x.jsonl"})) == listed
    assert flow.sources(PipelineConfig(data={"input_path": "x.jsonl"})) == [SourceConfig(path="x.jsonl")]
    assert flow.sources(PipelineConfig()) == []


def test_benchmarks_are_the_bundled_one_plus_the_configured_ones(tmp_path):
    path = write_jsonl(tmp_path / "file.jsonl", [{"text": "Q1", "gold": "1"}, {"text": "Q2", "gold": "2"}])
    cfg = DataConfig(benchmarks=[BenchmarkConfig(path=str(path), name="mine", mapping={"prompt": "text"})])
    got = flow.benchmarks(cfg)
    assert list(got) == ["tiny_benchmark", "mine"]
    assert got["tiny_benchmark"].equals(load_benchmark())
    assert got["mine"].columns == ["prompt", "reference"]  # `gold` is a reference by its usual name
    assert got["mine"]["prompt"].to_list() == ["Q1", "Q2"]
    assert got["mine"]["reference"].to_list() == ["1", "2"]
    assert list(flow.benchmarks(DataConfig())) == ["tiny_benchmark"]
    bad = DataConfig(benchmarks=[BenchmarkConfig(path=str(path), name="mine", mapping={"prompt": "nope"})])
    with pytest.raises(InputError, match=r"^benchmark mine \(.*\): mapping prompt=nope: no column 'nope'"):
        flow.benchmarks(bad)


class InProcessTasks:
    """flows.runner.Tasks without a task runner: runs each Prefect task's function on each item here
    (a step's task takes the batch, then the step)."""

    def __init__(self) -> None:
        self.shards: list[pl.DataFrame] = []

    def map(self, step, items: list, *args) -> list:
        self.shards += items
        return [step.fn(item, *args) for item in items]


def test_sharded_exact_dedup_meets_equal_texts_and_merges_in_input_order():
    prompts = ["Alpha one", "beta two", "ALPHA   one", "gamma three", "delta four", "Beta Two", "eps five"]
    df = items(prompts).with_row_index(ROW)
    tasks = InProcessTasks()
    res = mapped(tasks, ExactDedup(), df, 3, by=normalized(pl.col("prompt")))
    assert len(tasks.shards) == 3
    assert sorted(pl.concat(tasks.shards)[ROW].to_list()) == list(range(7))
    assert res.kept["id"].to_list() == ["i0", "i1", "i3", "i4", "i6"]
    assert res.kept[ROW].to_list() == [0, 1, 3, 4, 6]
    assert res.removed["id"].to_list() == ["i2", "i5"]
    clusters = dict(res.clusters.select("id", "cluster").rows())
    assert clusters == {"i0": "i0", "i1": "i1", "i2": "i0", "i3": "i3", "i4": "i4", "i5": "i1", "i6": "i6"}
    assert res.count == StepCount("exact-dedup", 7, 5, res.count.reason)


def test_sharded_step_gets_its_extra_arguments_and_row_range_shards():
    bench = load_benchmark()
    prompts = ["What is 3 + 4?", bench["prompt"][0], "Name a prime above 10.", bench["prompt"][1]]
    df = items(prompts).with_row_index(ROW)
    tasks = InProcessTasks()
    res = mapped(tasks, Decontaminate({"tiny_benchmark": bench}, CurateConfig()), df, 2)
    assert [s[ROW].to_list() for s in tasks.shards] == [[0, 1], [2, 3]]
    assert res.kept["id"].to_list() == ["i0", "i2"]
    assert res.removed["id"].to_list() == ["i1", "i3"]
    assert res.matches.select("id", "benchmark_id").rows() == [
        ("i1", bench["id"][0]),
        ("i3", bench["id"][1]),
    ]


def test_write_outputs_writes_evidence_first_then_the_curated_dataset(tmp_path):
    store = DatasetStore(tmp_path / "store")
    config = PipelineConfig(name="demo")
    df = items(["p0", "p1", "P0", "p3"]).with_row_index(ROW)
    dedup = exact_dedup(df)
    scored = df.filter(pl.col("id") != "i2")
    rates = pl.DataFrame({"id": scored["id"], "pass_rate": [0.5, 0.5, 1.0]})
    passrate = split_by_reason(
        scored,
        pl.Series([None, None, "too easy: pass rate 1.0"]),
        "pass-rate",
        "outside (0, 0.9)",
        rates=rates,
    )
    matches = pl.DataFrame({"id": ["x9"], "benchmark": ["tiny"], "benchmark_id": ["b"], "score": [1]})
    decon = split_by_reason(
        passrate.kept.head(0), pl.Series([], dtype=pl.String), "decontaminate", "overlap", matches=matches
    )
    more_matches = matches.with_columns(pl.lit("x8").alias("id"), pl.lit(0.5).alias("score"))
    decon2 = split_by_reason(
        passrate.kept.head(0),
        pl.Series([], dtype=pl.String),
        "decontaminate",
        "overlap",
        matches=more_matches,
    )
    results = [dedup, passrate, decon, decon2]
    quarantine = (
        items(["", "bad"], prefix="q")
        .with_columns(pl.lit("empty prompt").alias(QUARANTINE_REASON), pl.lit("ingest").alias("step"))
        .with_columns(pl.lit("extra").alias("junk"))
    )
    mappings = [{"path": "a.jsonl", "mapping": {"prompt": "question"}, "inferred": ["prompt"]}]

    manifest = flow.write_outputs(store, config, df, passrate.kept, quarantine, results, mappings)

    params = config.data.model_dump() | config.curate.model_dump(mode="json") | {"source_columns": mappings}
    assert manifest.ref == "demo-curated@v1"
    assert store.names() == [
        "demo-curated",
        "demo-curated-clusters",
        "demo-curated-matches",
        "demo-curated-pass-rates",
    ]
    assert manifest.parents == [
        "demo-curated-clusters@v1",
        "demo-curated-matches@v1",
        "demo-curated-pass-rates@v1",
    ]
    for name in ["demo-curated", *(p.split("@")[0] for p in manifest.parents)]:
        assert store.manifest(name).params == params
    assert store.manifest("demo-curated").steps == [r.count for r in results]

    curated = store.read("demo-curated")
    assert curated.columns == list(ITEM_COLUMNS)
    assert curated["id"].to_list() == ["i0", "i1"]
    clusters = store.read("demo-curated-clusters")
    assert clusters["step"].to_list() == ["exact-dedup"] * 4
    assert clusters.filter(pl.col("id") == "i2")["cluster"].to_list() == ["i0"]
    assert store.read("demo-curated-matches").select("id", "score").rows() == [("x9", 1.0), ("x8", 0.5)]
    assert store.read("demo-curated-pass-rates").equals(rates)

    rejected = store.quarantine("demo-curated")
    assert rejected.columns == [*ITEM_COLUMNS, QUARANTINE_REASON, "step"]
    assert rejected.select("id", "step", QUARANTINE_REASON).rows() == [
        ("q0", "ingest", "empty prompt"),
        ("q1", "ingest", "empty prompt"),
        ("i2", "exact-dedup", "exact duplicate of i0 (normalised 1.0)"),
        ("i3", "pass-rate", "too easy: pass rate 1.0"),
    ]
    assert store.manifest("demo-curated").quarantined == 4


def test_write_outputs_without_evidence_or_mappings_writes_the_curated_dataset_alone(tmp_path):
    store = DatasetStore(tmp_path / "store")
    config = PipelineConfig(name="solo")
    df = items(["a", "b"]).with_row_index(ROW)
    nothing = split_by_reason(df, pl.Series([None, None], dtype=pl.String), "answer-check", "all parse")
    quarantine = pl.DataFrame(schema={**ITEM_COLUMNS, QUARANTINE_REASON: pl.String, "step": pl.String})
    manifest = flow.write_outputs(store, config, df, nothing.kept, quarantine, [nothing])
    assert store.names() == ["solo-curated"]
    assert manifest.parents == [] and manifest.rows == 2
    assert "source_columns" not in manifest.params
    assert store.quarantine("solo-curated") is None


def reasons_frame(reasons: list[str]) -> pl.DataFrame:
    return items([f"p{i}" for i in range(len(reasons))]).with_columns(pl.Series(QUARANTINE_REASON, reasons))


def test_report_shows_counts_cache_use_and_the_top_five_reasons(monkeypatch):
    tables, markdowns = [], []

    def fake_table(table, key=None, description=None):
        tables.append((table, key, description))

    def fake_markdown(markdown, key=None, description=None):
        markdowns.append((markdown, key, description))

    monkeypatch.setattr(flow, "create_table_artifact", fake_table)
    monkeypatch.setattr(flow, "create_markdown_artifact", fake_markdown)
    # Least common first: the report orders by count, whatever the rows' order.
    reasons = (
        ["too long"]
        + ["empty prompt"] * 2
        + [f"unparseable answer (got {i!r})" for i in range(3)]
        + [f"benchmark overlap with tiny#{i}" for i in range(4)]
        + [f"near-duplicate of i{i} (jaccard 0.9)" for i in range(5)]
        + [f"exact duplicate of i{i} (normalised 1.0)" for i in range(6)]
    )
    removed = reasons_frame(reasons)
    mixed = StepResult(removed.head(0), removed, StepCount("mixed", 30, 9, "several checks"))
    quiet = StepResult(removed.head(0), removed.head(0), StepCount("answer-check", 9, 9, "all parse"))
    states = [("clean", "Cached"), ("clean", "Completed"), ("exact-dedup", "Cached")]

    flow.report("demo-curated@v3", [mixed, quiet], reasons_frame(["x"] * 3), states)

    assert tables == [
        (
            [
                {"step": "mixed", "rows in": 30, "rows out": 9, "removed": 21, "why": "several checks"},
                {"step": "answer-check", "rows in": 9, "rows out": 9, "removed": 0, "why": "all parse"},
            ],
            "curation-steps",
            "Curation steps of demo-curated@v3",
        )
    ]
    assert markdowns == [
        (
            "# Curation report: demo-curated@v3\n"
            "\n"
            "Quarantined at ingest: 3. Tasks resumed from cache: 2 of 3.\n"
            "\n"
            "## mixed: 30 -> 9 (several checks)\n"
            "- exact duplicate: 6\n"
            "- near-duplicate: 5\n"
            "- benchmark overlap: 4\n"
            "- unparseable answer: 3\n"
            "- empty prompt: 2\n"
            "\n"
            "## answer-check: 9 -> 9 (all parse)\n",
            "curation-report",
            "Curation of demo-curated@v3",
        )
    ]


# --- nearest neighbours -------------------------------------------------------------------------------


def test_nearest_finds_each_querys_most_similar_corpus_row():
    from flows.curate.embed import nearest

    corpus = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.6, 0.8]])  # float64 in
    queries = np.array([[0.0, 0.8, 0.6], [1.0, 0.0, 0.0], [0.6, 0.8, 0.0]])
    idx, cos = nearest(queries, corpus)
    assert idx.dtype == np.int64 and cos.dtype == np.float64
    assert idx.tolist() == [2, 0, 1]
    np.testing.assert_allclose(cos, [0.96, 1.0, 0.8], rtol=1e-6)
    labels = np.array(["x", "y", "z"])
    assert labels[idx].tolist() == ["z", "x", "y"]
    one = nearest(queries[:1].astype(np.float32), corpus[1:2])
    assert one[0].tolist() == [0] and one[1] == pytest.approx([0.8])
