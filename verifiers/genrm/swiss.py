"""Swiss-round reference selection (M1 section 4.2.1): rank a prompt's candidate answers with the
pairwise judge and keep the winner as the reference the `genrm` judge compares responses with.

A round-robin over G candidates costs G(G-1)/2 judgments; a Swiss tournament ranks well in about
ceil(log2 G) rounds of G/2 (shared/ANCHORS.md). Each round pairs candidates by running score (then
Buchholz, then input order), never twice the same two; an odd one out gets a bye (one point, at most
once each). A match is the blind pairwise judgment in both orders, s in [-1, 1] for the first
candidate: it scores (1 + s) / 2 and its opponent (1 - s) / 2, so a tie (including a position-inconsistent
verdict) splits the point. The final order: score, then Buchholz (the sum of the opponents' scores:
beating strong candidates counts more), then input order.

Every round of every prompt is one batch of judgments, so the endpoint sees them concurrently.
`m1 genrm swiss` reads the prompts and candidates (flows/genrm/files.py) and writes the rankings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from verifiers.genrm.options import JudgeOptions
from verifiers.genrm.pair import compare

# (question, first, second) triples -> the first's score in [-1, 1] (None: the judge failed)
CompareFn = Callable[[Sequence[tuple[str, str, str]]], list[float | None]]


@dataclass
class Player:
    index: int
    text: str
    score: float = 0.0
    opponents: list[int] = field(default_factory=list)
    bye: bool = False
    failed: int = 0  # matches the judge could not decide (scored as ties)


@dataclass
class Tournament:
    id: str
    prompt: str
    players: list[Player]

    def buchholz(self, p: Player) -> float:
        return sum(self.players[o].score for o in p.opponents)

    def standings(self) -> list[Player]:
        return sorted(self.players, key=lambda p: (-p.score, -self.buchholz(p), p.index))

    def pairings(self) -> list[tuple[Player, Player | None]]:
        """Next round: the best unpaired candidate meets the best one it has not met yet."""
        order, paired, out = self.standings(), set(), []
        for p in order:
            if p.index in paired:
                continue
            rival = next(
                (
                    q
                    for q in order
                    if q.index not in paired and q.index != p.index and q.index not in p.opponents
                ),
                None,
            )
            if rival is None:
                continue  # nobody left it has not met: sits out (a bye, if it never had one)
            paired |= {p.index, rival.index}
            out.append((p, rival))
        for p in order:
            if p.index not in paired and not p.bye:
                out.append((p, None))
                break
        return out

    def result(self) -> dict[str, Any]:
        ranking = [
            {
                "candidate": p.index,
                "text": p.text,
                "score": p.score,
                "buchholz": self.buchholz(p),
                "opponents": p.opponents,
                "undecided": p.failed,
            }
            for p in self.standings()
        ]
        return {"id": self.id, "prompt": self.prompt, "reference": ranking[0]["text"], "ranking": ranking}


def default_rounds(n_candidates: int) -> int:
    return max(1, math.ceil(math.log2(n_candidates)))


def run_swiss(
    tournaments: list[Tournament],
    compare: CompareFn,
    rounds: int | None = None,
    on_round: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Play ``rounds`` Swiss rounds (default ceil(log2 G) per prompt) and return each prompt's result."""
    total = rounds or max(default_rounds(len(t.players)) for t in tournaments)
    for rnd in range(total):
        matches: list[tuple[Tournament, Player, Player]] = []
        for t in tournaments:
            if rounds is None and rnd >= default_rounds(len(t.players)):
                continue
            for p, q in t.pairings():
                if q is None:
                    p.bye, p.score = True, p.score + 1.0
                else:
                    matches.append((t, p, q))
        scores = compare([(t.prompt, p.text, q.text) for t, p, q in matches]) if matches else []
        for (_, p, q), s in zip(matches, scores, strict=True):
            if s is None:
                p.failed, q.failed, s = p.failed + 1, q.failed + 1, 0.0
            p.score += (1 + s) / 2
            q.score += (1 - s) / 2
            p.opponents.append(q.index)
            q.opponents.append(p.index)
        if on_round is not None:
            on_round(rnd + 1, total)
    return [t.result() for t in tournaments]


def judge_compare(url: str, model: str = "default", **options: Any) -> CompareFn:
    """The pairwise judge at ``url`` as a CompareFn (blind, both orders)."""
    opts = JudgeOptions.resolve(url=url, model=model, **options)
    return lambda triples: [c.score for c in compare(opts, triples)]
