"""Asking a judge model for verdicts: k samples per prompt, re-asked while a reply holds no verdict.

A reply the parser cannot read is not a verdict. Each such sample is asked again (at a temperature of
at least 0.7, since a greedy judge would repeat itself) up to ``attempts`` times in all; what is still
unread after that is reported as a failed judgment, never as a low score.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from verifiers.genrm.options import JudgeOptions


@dataclass
class Judged:
    """The parsed verdicts of one prompt (None where every attempt failed) and the raw replies."""

    verdicts: list[Any] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    attempts: int = 0

    @property
    def parsed(self) -> list[Any]:
        return [v for v in self.verdicts if v is not None]


def ask(
    opts: JudgeOptions,
    prompts: Sequence[str],
    parse: Callable[[str], Any],
) -> list[Judged]:
    """k parsed verdicts per prompt. Raises `EndpointError` (for the whole batch) when the endpoint fails."""
    endpoint = opts.client()
    out = [Judged([None] * opts.k, [""] * opts.k) for _ in prompts]
    todo = [(i, j) for i in range(len(prompts)) for j in range(opts.k)]
    for attempt in range(opts.attempts):
        if not todo:
            break
        temperature = opts.sampling_temperature if attempt == 0 else max(opts.sampling_temperature, 0.7)
        params = {"max_tokens": opts.max_tokens, "temperature": temperature}
        # one request per prompt with n = the samples it still needs
        need: dict[int, list[int]] = {}
        for i, j in todo:
            need.setdefault(i, []).append(j)
        order = list(need)
        texts = [prompts[i] for i in order]
        if opts.api == "chat":
            replies = _by_count(endpoint.chat, texts, [len(need[i]) for i in order], params)
        else:
            replies = _by_count(endpoint.complete, texts, [len(need[i]) for i in order], params)
        todo = []
        for i, got in zip(order, replies, strict=True):
            out[i].attempts += 1
            for j, reply in zip(need[i], got, strict=True):
                verdict = parse(reply)
                out[i].replies[j] = reply
                out[i].verdicts[j] = verdict
                if verdict is None:
                    todo.append((i, j))
    return out


def _by_count(call, texts: list[str], counts: list[int], params: dict) -> list[list[str]]:
    """``call(texts, n=...)`` for prompts that need different numbers of samples (grouped by n)."""
    out: list[list[str]] = [[] for _ in texts]
    for n in sorted(set(counts)):
        idx = [i for i, c in enumerate(counts) if c == n]
        for i, replies in zip(idx, call([texts[i] for i in idx], n=n, **params), strict=True):
            out[i] = list(replies)
    return out
