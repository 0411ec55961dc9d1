"""The distributed dedup engine (flows/curate/scale) gives exactly the one-process engine's output, on
real Dask clusters (1 and 2 workers) and several partition sizes, on adversarial shapes: one giant
cluster (buckets past the all-pairs limit), chains A~B~C whose ends are not similar, all singletons,
documents without shingles, and empty shards."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components as scipy_components

from flows.curate.dedup import exact_dedup, minhash_dedup
from flows.curate.minhash import _MAX_ALL_PAIRS_BUCKET, hash_shingles, jaccard
from flows.curate.scale.engine import Engine, Outputs, StageError, configured, dask_client
from flows.curate.scale.report import ClusterTooLarge, from_clusters
from flows.curate.scale.sources import plan

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

VOCAB = [f"w{i}" for i in range(20_000)]


def words(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(VOCAB) for _ in range(n)]


def giant_cluster(rng: random.Random, size: int) -> list[str]:
    """`size` copies of one text, each with one word replaced: every pair is similar (Jaccard ~0.8-0.9)."""
    base = words(rng, 80)
    out = []
    for k in range(size):
        w = list(base)
        w[k % 80] = f"edit{k}"
        out.append(" ".join(w))
    return out


def chain(rng: random.Random, length: int) -> list[str]:
    """Each link replaces 2 fresh words of 100 in the previous one: neighbours have Jaccard ~0.82
    (>= 0.75), links two apart ~0.68 (< 0.75): a cluster only through its middle."""
    w = words(rng, 100)
    out = [" ".join(w)]
    for k in range(1, length):
        w = list(w)
        for pos in (k * 11 % 100, (k * 11 + 50) % 100):
            w[pos] = f"link{k}x{pos}{rng.random()}"
        out.append(" ".join(w))
    return out


def adversarial(seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    docs = [" ".join(words(rng, 60)) for _ in range(80)]  # singletons
    docs += giant_cluster(rng, _MAX_ALL_PAIRS_BUCKET + 40)
    for length in (3, 3, 7, 12):
        links = chain(rng, length)
        rng.shuffle(links)  # the chain's first row is somewhere in its middle
        docs += links
    docs += ["", "  ", "!!!", None, "one", "one", "two words"]  # no shingles, and short texts
    docs += [docs[3], docs[3].upper()]  # exact copies far from their original
    order = list(range(len(docs)))
    rng.shuffle(order)
    return [docs[i] for i in order]


def write_shards(folder: Path, texts: list[str], sizes: list[int]) -> pl.DataFrame:
    """The corpus as Parquet shards of the given sizes (0: an empty shard), row groups of 11 rows."""
    df = pl.DataFrame(
        {"id": [f"doc{i:04d}" for i in range(len(texts))], "prompt": texts, "n": range(len(texts))}
    )
    folder.mkdir(parents=True)
    start = 0
    for k, size in enumerate([*sizes, len(texts)]):
        size = min(size, len(texts) - start) if k < len(sizes) else len(texts) - start
        df.slice(start, size).write_parquet(folder / f"shard-{k:03d}.parquet", row_group_size=11)
        start += size
    return df


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with configured(), dask_client(2, "1GB", local_directory=str(tmp_path_factory.mktemp("dask"))) as c:
        yield c


def run_dask(client, tmp_path: Path, folder: Path, method: str, partition_rows: int, **kw):
    out = Outputs(tmp_path / "kept.parquet", tmp_path / "clusters", tmp_path / "removed.parquet")
    engine = Engine(client, tmp_path / "work")
    source = plan(folder, partition_rows)
    if method == "minhash":
        res = engine.minhash(source, out, **kw)
    else:
        res = engine.exact(source, out, **kw)
    return res, {k: pl.read_parquet(p) for k, p in out.items()}, source


@pytest.mark.parametrize("partition_rows", [25, 10_000])
def test_minhash_on_dask_equals_one_process_on_adversarial_shapes(client, tmp_path, partition_rows):
    check_adversarial(client, tmp_path, partition_rows)


@pytest.mark.slow
@pytest.mark.parametrize("partition_rows", [7, 60])
def test_minhash_on_one_dask_worker_equals_one_process(tmp_path, partition_rows):
    with configured(), dask_client(1, "1GB", local_directory=str(tmp_path / "dask")) as one:
        check_adversarial(one, tmp_path, partition_rows)


def check_adversarial(client, tmp_path: Path, partition_rows: int) -> None:
    texts = adversarial()
    df = write_shards(tmp_path / "in", texts, [0, 50, 0, 1, 120, 0])
    local = minhash_dedup(df, threshold=0.75)
    res, got, source = run_dask(client, tmp_path, tmp_path / "in", "minhash", partition_rows, threshold=0.75)
    assert got["clusters"].equals(local.clusters)
    assert got["kept"].equals(local.kept)
    assert got["removed"].equals(local.removed)
    # the shapes are there: one cluster past the all-pairs limit, chains whose ends are not similar
    sizes = local.clusters.group_by("cluster").len()
    assert sizes["len"].max() == _MAX_ALL_PAIRS_BUCKET + 40
    assert (sizes["len"] == 12).sum() == 1 and (sizes["len"] == 7).sum() == 1
    chain12 = sizes.filter(pl.col("len") == 12)["cluster"][0]
    members = local.clusters.filter(pl.col("cluster") == chain12)["id"].to_list()
    rows = [int(m[3:]) for m in members]
    sh = hash_shingles(df["prompt"])
    sims = jaccard(sh, np.array([(a, b) for a in rows for b in rows if a < b]))
    assert sims.min() < 0.75  # members that are not similar themselves: clustered through others
    assert res.report == from_clusters(local.clusters)
    assert res.rounds >= 2 and len(source.parts) >= (2 if partition_rows < 10_000 else 1)


@pytest.mark.parametrize("shape", ["singletons", "no-shingles", "one-row"])
def test_minhash_on_dask_degenerate_corpora(client, tmp_path, shape):
    rng = random.Random(5)
    texts = {
        "singletons": [" ".join(words(rng, 40)) for _ in range(60)],
        "no-shingles": ["", None, "  ", "?!"] * 5,
        "one-row": ["a lonely document of a few words"],
    }[shape]
    df = write_shards(tmp_path / "in", texts, [0, 3])
    local = minhash_dedup(df, threshold=0.8)
    res, got, _ = run_dask(client, tmp_path, tmp_path / "in", "minhash", 4, threshold=0.8)
    assert got["clusters"].equals(local.clusters)
    assert got["kept"].equals(local.kept) and got["kept"].height == len(texts)
    assert res.removed == 0 and res.report.histogram == {1: len(texts)}


@pytest.mark.parametrize("partition_rows", [9, 10_000])
def test_exact_on_dask_equals_one_process(client, tmp_path, partition_rows):
    texts = adversarial(seed=3)
    texts += [
        texts[10].upper() + "  ",
        "  " + texts[20],
        texts[30],
    ]  # normalised copies, after their originals
    df = write_shards(tmp_path / "in", texts, [0, 33])
    local = exact_dedup(df)
    res, got, _ = run_dask(client, tmp_path, tmp_path / "in", "exact", partition_rows)
    assert got["clusters"].equals(local.clusters)
    assert got["kept"].equals(local.kept)
    assert got["removed"].equals(local.removed)
    assert res.removed == local.count.removed >= 5


def test_a_cluster_over_max_cluster_fails_naming_it(client, tmp_path):
    texts = giant_cluster(random.Random(2), 30) + ["something else entirely, on its own"]
    df = write_shards(tmp_path / "in", texts, [10])
    with pytest.raises(
        ClusterTooLarge, match=r"cluster doc0000 has 30 rows, over max_cluster 20 .*doc0000, doc0001"
    ):
        run_dask(client, tmp_path, tmp_path / "in", "minhash", 8, threshold=0.7, max_cluster=20)
    assert not (tmp_path / "kept.parquet").exists()
    with pytest.raises(ClusterTooLarge, match="cluster doc0000 has 30 rows"):
        from_clusters(minhash_dedup(df, threshold=0.7).clusters).check(20)


def test_a_failing_partition_names_the_stage_and_partition(client, tmp_path):
    folder = tmp_path / "in"
    write_shards(folder, ["some text here"] * 6, [3])
    pl.DataFrame({"id": ["x"], "text": ["no prompt column"]}).write_parquet(folder / "shard-009.parquet")
    with pytest.raises(StageError, match=r"stage sketch, partition 2 \(.*shard-009.parquet.*missing column"):
        run_dask(client, tmp_path, folder, "minhash", 3)


def test_components_equal_scipy_on_random_chains_and_stars(client):
    """Large-star / small-star against scipy on graphs made to need many rounds."""
    # lazy: the module under test, with dask
    import dask.dataframe as dd
    import pandas as pd

    from flows.curate.scale.components import connected_components

    rng = np.random.default_rng(0)
    n = 800
    perm = rng.permutation(n)
    chains = np.stack([perm[:-1], perm[1:]], axis=1)[rng.random(n - 1) < 0.97]  # long paths in random order
    stars = np.stack([np.full(50, 7), rng.integers(0, n, 50)], axis=1)
    edges = np.concatenate([chains, stars])
    edges = edges[edges[:, 0] != edges[:, 1]]
    i, j = np.minimum(edges[:, 0], edges[:, 1]), np.maximum(edges[:, 0], edges[:, 1])
    frame = dd.from_pandas(pd.DataFrame({"i": i, "j": j}), npartitions=5)
    rounds_seen = []

    def persist(name, coll):
        rounds_seen.append(name)
        return client.persist(coll)

    labels, rounds = connected_components(frame, 4, persist, lambda c: client.compute(c).result())
    got = labels.compute()
    _, lab = scipy_components(coo_matrix((np.ones(len(i)), (i, j)), shape=(n, n)), directed=False)
    first = np.full(lab.max() + 1, n)
    np.minimum.at(first, lab, np.arange(n))
    expected = {(v, first[lab[v]]) for v in range(n) if first[lab[v]] != v}
    assert set(zip(got["v"], got["m"], strict=True)) == expected
    assert rounds >= 3 and len(got) == len(expected)


@pytest.mark.parametrize(
    ("method", "source"),
    [
        pytest.param("minhash", "folder", id="minhash-folder"),
        # exact dedup's equality is the engine test's; JSONL ids assigned by row are this one's
        pytest.param("exact", "jsonl", id="exact-jsonl", marks=pytest.mark.slow),
    ],
)
def test_cli_dask_runner_writes_what_the_local_runner_writes(tmp_path, method, source):
    """The issue's contract, as written: `m1 curate dedup ... --runner dask --workers 2 --memory-limit 1GB`."""
    # lazy: the CLI app, only for this test
    from typer.testing import CliRunner

    from flows.cli import app

    texts = adversarial(seed=7)[:150]
    if source == "folder":
        write_shards(tmp_path / "in", texts, [0, 40])
        src = tmp_path / "in"
    else:
        src = tmp_path / "in.jsonl"
        pl.DataFrame({"prompt": texts}).write_ndjson(src)  # no id column: ids are assigned by row
    outputs = {}
    for runner in ("local", "dask"):
        out = tmp_path / runner
        args = ["curate", "dedup", "--input", str(src), "--output", str(out / "kept.parquet")]
        args += ["--clusters", str(out / "clusters"), "--method", method, "--runner", runner]
        args += ["--workers", "2", "--memory-limit", "1GB", "--partition-rows", "30", "--threshold", "0.75"]
        res = CliRunner().invoke(app, args, terminal_width=200)
        assert res.exit_code == 0, res.output
        outputs[runner] = (
            pl.read_parquet(out / "kept.parquet"),
            pl.read_parquet(out / "clusters"),
            res.output,
        )
    (kept_l, clusters_l, _), (kept_d, clusters_d, printed) = outputs["local"], outputs["dask"]
    assert kept_d.equals(kept_l) and clusters_d.equals(clusters_l)
    assert clusters_d.height == len(texts) and any("cluster" in c for c in clusters_d.columns)
    assert "Dask dashboard: http" in printed and "clusters by size: 1: " in printed
    if source == "jsonl":
        assert clusters_d["id"][0] == "in-000000" and "assigned ids to 150 rows" in printed


def test_cli_on_an_existing_cluster_ignores_workers_and_memory_limit(tmp_path, dask_cluster):
    # lazy: the CLI app, only for this test
    from typer.testing import CliRunner

    from flows.cli import app

    texts = giant_cluster(random.Random(4), 12) + adversarial(seed=9)[:40]
    df = write_shards(tmp_path / "in", texts, [20])
    args = ["curate", "dedup", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "kept")]
    args += ["--clusters", str(tmp_path / "clusters.parquet"), "--method", "minhash", "--runner", "dask"]
    args += [
        "--dask-address",
        dask_cluster,
        "--workers",
        "5",
        "--memory-limit",
        "1GB",
        "--partition-rows",
        "16",
    ]
    res = CliRunner().invoke(app, args, terminal_width=200)
    assert res.exit_code == 0, res.output
    assert "--workers and --memory-limit are ignored with --dask-address" in res.output
    local = minhash_dedup(df, threshold=0.8)
    assert pl.read_parquet(tmp_path / "clusters.parquet").equals(local.clusters)
    assert pl.read_parquet(tmp_path / "kept").equals(local.kept)
    # a folder of parts, one per partition: row groups of 11 never split (11, 9 | 11, 11, 10)
    assert len(list((tmp_path / "kept").glob("part-*.parquet"))) == 5
