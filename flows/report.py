"""The run report of `m1 run`: every subflow with its rows in and out and why its dataset was built, every
source with its rows and the columns it was read with, the curriculum's per-stage curves, and the
held-out pass rate before and after training, per domain, as counts with intervals and a sentence saying
whether training helped.

The report is a function of what the run's things are (their versions, records and results), never of
whether this run built or reused them: an unchanged rerun writes the same report. Why each thing was
built is the reason recorded when it was built (flows/lineage.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flows.artifacts import embed_png
from flows.curate.ingest import describe_mapping
from m1model.rl.evaluation import PairedChange, PassRate


def change_sentence(name: str, before: PassRate, after: PassRate) -> str:
    """'gain on math: 12/100 -> 20/100 (+8.0 points, 95% interval +1.2 to +14.6)', or 'loss on ...', or
    'no gain on ...' when the paired interval holds 0 (the same items before and after)."""
    change = PairedChange.of(before, after)
    lo, hi = change.interval()
    verdict = change.verdict()
    if verdict == "no change":
        verdict = "no significant gain" if change.difference > 0 else "no gain"
    return (
        f"{verdict} on {name}: {before.k}/{before.n} -> {after.k}/{after.n} "
        f"({100 * change.difference:+.1f} points, 95% interval {100 * lo:+.1f} to {100 * hi:+.1f}; "
        f"{change.gained} items gained, {change.lost} lost)"
    )


def heldout_rows(before: Mapping[str, PassRate], after: Mapping[str, PassRate]) -> list[dict[str, str]]:
    """One row per evaluation set measured both before and after training (``all`` first)."""
    rows = []
    for name in sorted(set(before) & set(after), key=lambda k: (k != "all", k)):
        b, a = before[name], after[name]
        if b.n != a.n:  # not the same items: no paired comparison
            continue
        change = PairedChange.of(b, a)
        lo, hi = change.interval()
        rows.append(
            {
                "set": name,
                "before": str(b),
                "after": str(a),
                "change (95% interval)": f"{100 * change.difference:+.1f} pts ({100 * lo:+.1f} to {100 * hi:+.1f})",
                "McNemar p": f"{change.p_value():.3g}",
                "verdict": change.verdict(),
            }
        )
    return rows


@dataclass
class RunReport:
    name: str
    subflows: list[dict[str, Any]] = field(default_factory=list)  # {flow, dataset, rows in, rows out, ...}
    curation: dict[str, Any] = field(default_factory=dict)  # the curated dataset's manifest
    planted: dict[str, int] = field(default_factory=dict)  # step -> planted rows it should remove
    notes: list[str] = field(default_factory=list)
    stages: list[dict[str, Any]] = field(default_factory=list)  # train-stage summaries
    before: dict[str, PassRate] = field(default_factory=dict)  # per evaluation set, of the base
    after: dict[str, PassRate] = field(default_factory=dict)  # ... and of the last stage's model
    sections: list[str] = field(default_factory=list)  # markdown from optional subflows (SWE, GenRM)
    base: dict[str, Any] = field(default_factory=dict)  # the SFT warm start's result (flows/train.py)

    def add_table(self, title: str, rows: list[dict[str, Any]], note: str = "") -> None:
        """A section with a markdown table of ``rows`` (dicts with the same keys)."""
        if not rows:
            return
        keys = list(rows[0])
        lines = [f"## {title}", "", *([note, ""] if note else []), "| " + " | ".join(keys) + " |"]
        lines.append("|" + "---|" * len(keys))
        lines += ["| " + " | ".join(str(r.get(k, "")) for k in keys) + " |" for r in rows]
        self.sections.append("\n".join(lines) + "\n")

    def add_dataset(
        self, flow: str, manifest: dict[str, Any], built_because: str = "", reused: bool | None = None
    ) -> None:
        """A subflow's dataset; ``reused``: whether this run reused it (the CLI's table says so; the
        report does not, so that an unchanged rerun writes the same report)."""
        steps = manifest.get("steps") or []
        rows_in = steps[0]["rows_in"] if steps else manifest["rows"]
        self.subflows.append(
            {
                "flow": flow,
                "dataset": f"{manifest['name']}@v{manifest['version']}",
                "rows in": rows_in,
                "rows out": manifest["rows"],
                "quarantined": manifest.get("quarantined", 0),
                "built because": built_because,
                "this run": {None: "", True: "reused", False: "built"}[reused],
            }
        )

    def _sources(self) -> list[str]:
        """Every curation source: rows read, quarantined at ingest, in and out, and its column mapping."""
        params = self.curation.get("params", {})
        counts = params.get("per_source", [])
        if not counts:
            return []
        mappings = {m["path"]: m for m in params.get("source_columns", [])}
        lines = [
            "## Sources",
            "",
            "| source | rows read | quarantined at ingest | rows in | rows out | columns |",
            "|---|---:|---:|---:|---:|---|",
        ]
        for c in counts:
            m = mappings.get(c["source"])
            columns = (
                describe_mapping(m["mapping"], m["inferred"], m.get("preset"), m.get("detected", False))
                if m
                else "generated"
            )
            lines.append(
                f"| {c['source']} | {c['rows read']} | {c['quarantined at ingest']} | {c['rows in']} | "
                f"{c['rows out']} | {columns} |"
            )
        return ["", *lines]

    def to_markdown(self) -> str:
        lines = [f"# m1 run report: {self.name}", "", "## Subflows", ""]
        lines += [
            "| subflow | dataset | rows in | rows out | quarantined | built because |",
            "|---|---|---:|---:|---:|---|",
        ]
        for s in self.subflows:
            lines.append(
                f"| {s['flow']} | {s['dataset']} | {s['rows in']} | {s['rows out']} | {s['quarantined']} | "
                f"{s['built because']} |"
            )
        lines += ["", *[f"- {n}" for n in self.notes]]
        lines += self._sources()
        if self.base:
            overlaps = self.base.get("overlaps", {})
            lines += [
                "",
                "## Training data",
                "",
                f"- base model (tokenizer + SFT warm start) `{self.base['base']}`, built because: "
                f"{self.base.get('built_because') or 'given (train.init_from)'}",
                f"- {overlaps.get('rows', 0)} items left out as duplicates of an earlier dataset's items "
                f"(`{overlaps.get('file', '')}`)",
            ]
        if self.curation:
            lines += [
                "",
                "## Data curation",
                "",
                "| step | rows in | rows out | removed | planted | why |",
                "|---|---:|---:|---:|---:|---|",
            ]
            for s in self.curation.get("steps", []):
                planted = self.planted.get(s["step"])
                lines.append(
                    f"| {s['step']} | {s['rows_in']} | {s['rows_out']} | {s['removed']} | "
                    f"{'' if planted is None else planted} | {s['reason']} |"
                )
        lines += ["", "## Curriculum", ""]
        if self.stages:
            lines += [
                "| stage | steps | reward first | reward last | held-out start | held-out end | warnings | built because |",
                "|---|---:|---:|---:|---:|---:|---|---|",
            ]
            for s in self.stages:
                fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
                pct = lambda v: "-" if v is None else f"{v:.1%}"  # noqa: E731
                lines.append(
                    f"| {s['stage']} | {s['steps']} | {fmt(s['reward_first'])} | {fmt(s['reward_last'])} | "
                    f"{pct(s.get('val_start'))} | {pct(s.get('val_end'))} | {'; '.join(s.get('warnings', [])) or ''} | "
                    f"{s.get('reason', '')} |"
                )
            lines += [
                f"- {s['stage']}: {n}"
                for s in self.stages
                for n in s.get("notes", [])
                if n.startswith("length-bias monitor")
            ]
            for s in self.stages:
                for plot in s.get("plots", []):
                    lines += [
                        "",
                        f"### {s['stage']}: {plot.rsplit('/', 1)[-1]}",
                        "",
                        embed_png(plot, s["stage"]),
                    ]
        lines += ["", "## Evaluation (held-out items training never saw)", ""]
        if rows := heldout_rows(self.before, self.after):
            lines += [
                "Greedy answers, before training (the SFT warm start) and after the last stage, on the same "
                "items; an item counts when its verifier gives reward 1. `all` is every held-out item of the "
                "run's own datasets (benchmark files are listed on their own). The change's interval and "
                "McNemar's test are paired: they use the items that changed.",
                "",
                "| " + " | ".join(rows[0]) + " |",
                "|" + "---|" * len(rows[0]),
                *["| " + " | ".join(r.values()) + " |" for r in rows],
                "",
                *[f"- {change_sentence(n, self.before[n], self.after[n])}" for n in (r["set"] for r in rows)],
            ]
        lines += ["", *self.sections]
        return "\n".join(lines).rstrip() + "\n"
