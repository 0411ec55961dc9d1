"""What a dedup run says about its clusters: the size histogram, the largest clusters with two sample
members each, and the `max_cluster` guard (one false cluster of 859,091 documents, marin #6854, is what
transitive closure does to unverified edges; a cluster this large is a reason to stop and look).

Both engines report the same thing: the one-process engine from its clusters frame, the distributed one
from small per-cluster aggregates its workers compute.

Not a flow: the report half of flows/curate/scale/engine.py and of `m1 curate dedup`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from flows.errors import M1Error

LARGEST = 5  # clusters listed with their samples


class ClusterTooLarge(M1Error):
    """A cluster over `max_cluster`: probably a false cluster (boilerplate, short shingles)."""


@dataclass
class Largest:
    cluster: str  # the kept row's id
    size: int
    members: list[str]  # two sample members: the kept row and the first removed one


@dataclass
class ClusterReport:
    rows: int
    removed: int
    histogram: dict[int, int]  # bin top (1, 2, 4, 8, ...: sizes in (top/2, top]) -> clusters
    largest: list[Largest] = field(default_factory=list)

    @property
    def clusters(self) -> int:
        return sum(self.histogram.values())

    def lines(self) -> list[str]:
        bins = ", ".join(f"{_label(top)}: {n:,}" for top, n in sorted(self.histogram.items()))
        out = [f"clusters by size: {bins or 'none'}"]
        for c in self.largest:
            out.append(f"  cluster {c.cluster}: {c.size:,} rows, e.g. {', '.join(c.members)}")
        return out

    def check(self, max_cluster: int | None, where: str = "minhash-dedup") -> None:
        """Fail naming the largest cluster when it has more than `max_cluster` rows (None: allowed)."""
        if max_cluster is None or not self.largest or self.largest[0].size <= max_cluster:
            return
        c = self.largest[0]
        raise ClusterTooLarge(
            f"{where}: cluster {c.cluster} has {c.size:,} rows, over max_cluster {max_cluster:,} "
            f"(members e.g. {', '.join(c.members)}); look at them: boilerplate or too short shingles make "
            "false clusters. Allow it with --max-cluster 0 (curate.minhash.max_cluster = 0) if it is real"
        )


def _label(top: int) -> str:
    lo = top // 2 + 1
    return str(top) if lo >= top else f"{lo}-{top}"


def bin_tops(sizes: np.ndarray) -> np.ndarray:
    """Each size's bin: the smallest power of two at least as large."""
    return (1 << np.ceil(np.log2(np.maximum(sizes, 1))).astype(np.int64)).astype(np.int64)


def histogram(sizes: np.ndarray) -> dict[int, int]:
    tops, counts = np.unique(bin_tops(sizes), return_counts=True)
    return {int(t): int(c) for t, c in zip(tops, counts, strict=True)}


def from_clusters(clusters: pl.DataFrame) -> ClusterReport:
    """The report of a clusters frame (id, cluster, kept, ...): one process holds it whole."""
    rep = clusters.with_row_index("_pos")
    sizes = rep.group_by("cluster", maintain_order=True).agg(
        pl.len().alias("size"), pl.col("id").head(2).cast(pl.String).alias("members"), pl.col("_pos").min()
    )
    largest = sizes.filter(pl.col("size") > 1).sort(["size", "_pos"], descending=[True, False]).head(LARGEST)
    return ClusterReport(
        rows=clusters.height,
        removed=int((~clusters["kept"]).sum()),
        histogram=histogram(sizes["size"].to_numpy()),
        largest=[
            Largest(str(r["cluster"]), int(r["size"]), list(r["members"]))
            for r in largest.iter_rows(named=True)
        ],
    )
