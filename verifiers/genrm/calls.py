"""Asking a judge model for verdicts: k samples per prompt, re-asked while a reply holds no verdict.

A reply the parser cannot read is not a verdict. Each such sample is asked again (at a temperature of
at least 0.7, since a greedy judge would repeat itself) up to ``attempts`` times in all; what is still
unread after that is reported as a failed judgment, never as a low score.

With ``grade_score = "expected"`` a grade is weighted by the judge's own probabilities at the token that
wrote it (`parse.expected_grade`): the replies carry their tokens' top logprobs, which vLLM and
`m1 serve model` send on both APIs; an endpoint that sends none fails the batch with that message.

With several endpoints (``url`` a comma-separated list: an ensemble of judges) every prompt is asked of
each, k samples apiece, and a prompt's verdicts are theirs in that order (endpoint-major), so a grade's
mean is the ensemble's mean grade (reward-model ensembles, Coste et al. 2023).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from verifiers.endpoint import Endpoint, EndpointError, choice_text
from verifiers.genrm.options import JudgeOptions
from verifiers.genrm.parse import expected_grade

TOP_LOGPROBS = 20  # the grade token's alternatives: every grade a judge gives any mass is among them


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
    expected: bool = False,
) -> list[Judged]:
    """k parsed verdicts per prompt from each endpoint of ``opts.url`` (one, or a comma-separated ensemble,
    in that order); with ``expected``, grades weighted by each judge's probabilities. Raises
    `EndpointError` (for the whole batch) when an endpoint fails."""
    clients = opts.clients()
    if len(clients) == 1:
        return _ask_one(clients[0], opts, prompts, parse, expected)
    out = [Judged(attempts=0) for _ in prompts]
    with ThreadPoolExecutor(len(clients)) as pool:  # each judge is its own server: ask them at once
        answers = list(pool.map(lambda e: _ask_one(e, opts, prompts, parse, expected), clients))
    for answer in answers:
        for mine, theirs in zip(out, answer, strict=True):
            mine.verdicts += theirs.verdicts
            mine.replies += theirs.replies
            mine.attempts = max(mine.attempts, theirs.attempts)
    return out


def _ask_one(
    endpoint: Endpoint,
    opts: JudgeOptions,
    prompts: Sequence[str],
    parse: Callable[[str], Any],
    expected: bool,
) -> list[Judged]:
    out = [Judged([None] * opts.k, [""] * opts.k) for _ in prompts]
    todo = [(i, j) for i in range(len(prompts)) for j in range(opts.k)]
    chat = opts.api == "chat"
    for attempt in range(opts.attempts):
        if not todo:
            break
        temperature = opts.sampling_temperature if attempt == 0 else max(opts.sampling_temperature, 0.7)
        params: dict[str, Any] = {"max_tokens": opts.max_tokens, "temperature": temperature}
        if expected:
            params |= {"logprobs": True, "top_logprobs": TOP_LOGPROBS} if chat else {"logprobs": TOP_LOGPROBS}
        # one request per prompt with n = the samples it still needs
        need: dict[int, list[int]] = {}
        for i, j in todo:
            need.setdefault(i, []).append(j)
        order = list(need)
        texts = [prompts[i] for i in order]
        call = endpoint.chat_choices if chat else endpoint.complete_choices
        replies = _by_count(call, texts, [len(need[i]) for i in order], params)
        todo = []
        for i, got in zip(order, replies, strict=True):
            out[i].attempts += 1
            for j, choice in zip(need[i], got, strict=True):
                reply = choice_text(choice)
                verdict = parse(reply)
                if verdict is not None and expected:
                    verdict = _weighed(choice, chat, verdict, endpoint.url)
                out[i].replies[j] = reply
                out[i].verdicts[j] = verdict
                if verdict is None:
                    todo.append((i, j))
    return out


def _weighed(choice: dict, chat: bool, grade: int, url: str) -> float:
    """``grade`` weighted by the reply's own logprobs (`parse.expected_grade`)."""
    logprobs = choice.get("logprobs") or {}
    try:
        if chat:  # OpenAI chat: content = [{token, logprob, top_logprobs: [{token, logprob}]}]
            tokens = [
                (
                    t["token"],
                    {t["token"]: t["logprob"]} | {a["token"]: a["logprob"] for a in t["top_logprobs"]},
                )
                for t in logprobs.get("content") or []
            ]
        else:  # OpenAI completions: tokens, token_logprobs, top_logprobs = [{token: logprob}]
            tokens = [
                (t, {t: lp} | dict(top or {}))
                for t, lp, top in zip(
                    logprobs.get("tokens") or [],
                    logprobs.get("token_logprobs") or [],
                    logprobs.get("top_logprobs") or [],
                    strict=True,
                )
            ]
    except (KeyError, TypeError, ValueError):
        raise EndpointError(f"{url}: the reply's logprobs are not OpenAI's") from None
    if not tokens:
        raise EndpointError(
            f"{url}: grade_score = expected needs each reply's token logprobs (logprobs, top_logprobs), "
            f"and the reply {choice!s:.200} has none"
        )
    weighed = expected_grade(tokens, grade)
    # a grade the tokenizer wrote inside a larger token ("4." or "**4"): it has no alternatives to weigh
    return float(grade) if weighed is None else weighed


def _by_count(call, texts: list[str], counts: list[int], params: dict) -> list[list[dict]]:
    """``call(texts, n=...)`` for prompts that need different numbers of samples (grouped by n)."""
    out: list[list[dict]] = [[] for _ in texts]
    for n in sorted(set(counts)):
        idx = [i for i, c in enumerate(counts) if c == n]
        for i, replies in zip(idx, call([texts[i] for i in idx], n=n, **params), strict=True):
            out[i] = list(replies)
    return out
