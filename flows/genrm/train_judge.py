"""`m1 genrm train-judge`: a judge that exists here, SFT-trained from the project's own verifiable tasks.

Design, so that a tiny CPU model can learn it in minutes:

- The judge sees exactly the prompts the `genrm-grade` and `genrm-pair` verifiers send
  (verifiers/genrm/prompts.py) through the tokenizer's chat template, the way `m1 serve model` applies it,
  and answers ``Grade: N`` or ``Verdict: [[X]]`` then EOS.
- Labels are the rule verifiers' verdicts (flows/genrm/labels.py), and the signal that decides them is
  local: does the response's final answer (its ``\\boxed{}``, its ``<answer>`` block, the fact a general
  prompt gives) match the reference or the question, is it in the asked format, is there one at all.
  Length carries no signal: padded responses are as often wrong as right.
- Pairwise examples (``pair_training``) put the reference against one of its perturbations (in a random
  order, in both, or every two responses of a prompt in both orders), the verdict from the two true grades
  (a tie when equal); or, ``pointwise``, each response is graded alone against its question, which is how
  the pairwise judge then asks about each text of a pair (verifiers/genrm/pair.py): a small judge learns
  one text against a fact far sooner than two texts at once, and one text has no position to prefer.
- Classes are balanced by resampling, so the judge cannot do well by always answering the commonest grade;
  the held-out set (other prompts) keeps its natural mix, and the report compares with always answering its
  commonest grade (the majority-class baseline).

The tokenizer is trained on the judging texts (frequent numbers and the fixed instructions become single
tokens: shorter sequences, and exact-match lookups a small attention layer can do).

Not a flow itself: the judge's training, which the general-task flow and `m1 genrm train-judge` run.
"""

from __future__ import annotations

import random
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from flows.config import GenRMConfig, TrainConfig
from flows.errors import InputError
from flows.genrm.labels import Labelled, heldout_seed, labelled_set, stated_fact, write_labels
from flows.model_settings import fresh_model, sft_config
from verifiers.endpoint import EndpointError
from verifiers.genrm.prompts import grade_answer, grade_prompt, pair_answer, pair_prompt, point_prompt

HELDOUT = "heldout_labels.jsonl"  # beside the checkpoint: the labels `m1 genrm eval` can replay
DOMAINS = ("math", "logic", "general")  # what labels.labelled_set writes, in its order


@dataclass
class JudgeExample:
    kind: str  # "grade" | "pair" | "point"
    domain: str
    message: str  # the judge's user message
    answer: str  # what the judge should reply
    label: int | str  # grade 1-5, or verdict A/B/C


def grade_examples(labs: Sequence[Labelled], rationale: bool = False) -> list[JudgeExample]:
    """Each response's grade prompt and its true grade; with ``rationale`` (where the domain has a fact to
    quote) the reply first quotes the response's fact and the reference's."""
    out = []
    for x in labs:
        stated = stated_fact(x.item, x.response) if rationale else None
        ref = stated_fact(x.item, str(x.item["reference"])) if stated is not None else None
        answer = grade_answer(x.grade, stated, ref)
        out.append(
            JudgeExample(
                "grade", x.domain, grade_prompt(x.question, x.reference, x.response)[0], answer, x.grade
            )
        )
    return out


def pair_reference(lab: Labelled) -> str:
    """The reference as the pairwise judge sees it: the item's full reference text (a worked solution)."""
    if lab.domain == "logic":
        return f"<answer>{lab.reference}</answer>"
    return str(lab.item["reference"])


def pair_example(
    a: Labelled,
    b: Labelled,
    texts: tuple[str, str] | None = None,
    rationale: bool = False,
    grades: bool = False,
) -> JudgeExample:
    """``a`` shown as A and ``b`` as B (their responses, or ``texts``), the verdict from their true grades;
    with ``rationale`` (general items) the reply first quotes the fact the question gives and the one each
    text states; with ``grades``, first each text's true grade."""
    text_a, text_b = texts or (a.response, b.response)
    verdict = "A" if a.grade > b.grade else "B" if b.grade > a.grade else "C"
    asked = facts = None
    if rationale and a.domain == "general":
        asked = stated_fact(a.item, str(a.item["reference"]))
        facts = (stated_fact(a.item, text_a), stated_fact(b.item, text_b))
    message = pair_prompt(a.question, text_a, text_b)[0]
    answer = pair_answer(verdict, asked, facts, (a.grade, b.grade) if grades else None)
    return JudgeExample("pair", a.domain, message, answer, verdict)


def pair_examples(
    labs: Sequence[Labelled],
    rng: random.Random,
    both_orders: bool = False,
    rationale: bool = False,
    grades: bool = False,
) -> list[JudgeExample]:
    """The reference against each other response of its prompt, in a random order (``both_orders``:
    in both)."""
    by_prompt: dict[str, list[Labelled]] = defaultdict(list)
    for x in labs:
        by_prompt[x.prompt_id].append(x)
    out = []
    for group in by_prompt.values():
        ref = next((x for x in group if x.perturbation == "reference"), None)
        if ref is None:
            continue
        for x in group:
            if x is ref:
                continue
            orders = [True, False] if both_orders else [rng.random() < 0.5]
            for ref_first in orders:
                a, b = (ref, x) if ref_first else (x, ref)
                texts = (
                    pair_reference(a) if a is ref else a.response,
                    pair_reference(b) if b is ref else b.response,
                )
                out.append(pair_example(a, b, texts, rationale, grades))
    return out


def swapped_pair_examples(
    labs: Sequence[Labelled],
    domains: Sequence[str] | None = None,
    rationale: bool = False,
    grades: bool = False,
) -> list[JudgeExample]:
    """Every two distinct responses of a prompt (of ``domains``; None: all), in both orders (JudgeLM's swap
    augmentation), the verdict from their true grades: the first shown wins as often as the second, and
    the better text is the reference, a perturbation of it, or neither. With ``rationale``: see
    `pair_example`."""
    by_prompt: dict[str, dict[str, Labelled]] = defaultdict(dict)
    for x in labs:
        if domains is None or x.domain in domains:
            by_prompt[x.prompt_id].setdefault(x.response, x)
    return [
        pair_example(a, b, rationale=rationale, grades=grades)
        for group in by_prompt.values()
        for x, y in combinations(group.values(), 2)
        for a, b in ((x, y), (y, x))
    ]


def point_examples(labs: Sequence[Labelled], domains: Sequence[str] | None = None) -> list[JudgeExample]:
    """Each response (of ``domains``; None: all) graded alone against its question, as the pointwise
    pairwise judge asks (verifiers/genrm/pair.py): no reference, no second text."""
    return [
        JudgeExample(
            "point", x.domain, point_prompt(x.question, x.response)[0], grade_answer(x.grade), x.grade
        )
        for x in labs
        if domains is None or x.domain in domains
    ]


def judge_examples(labs: Sequence[Labelled], cfg: GenRMConfig, rng: random.Random) -> list[JudgeExample]:
    """The judge's training examples under ``cfg.pair_training``, classes balanced per kind."""
    if cfg.pair_training == "pointwise":
        pairs = point_examples(labs, cfg.pair_domains or None)
    elif cfg.pair_training == "all-swapped":
        pairs = swapped_pair_examples(labs, cfg.pair_domains or None, cfg.rationale, cfg.pair_grades)
    else:  # "reference" (before issue 34: one random order), "reference-swapped": both orders
        both = cfg.pair_training == "reference-swapped"
        pairs = pair_examples(labs, rng, both_orders=both, rationale=cfg.rationale, grades=cfg.pair_grades)
    return balanced(grade_examples(labs, cfg.rationale) + pairs, rng)


def balanced(examples: Sequence[JudgeExample], rng: random.Random) -> list[JudgeExample]:
    """Resample so every (kind, label) class is as frequent as the largest one of its kind."""
    classes: dict[tuple[str, Any], list[JudgeExample]] = defaultdict(list)
    for e in examples:
        classes[(e.kind, e.label)].append(e)
    largest: Counter[str] = Counter()
    for (kind, _), members in classes.items():
        largest[kind] = max(largest[kind], len(members))
    out = []
    for (kind, _), members in classes.items():
        out += members + [rng.choice(members) for _ in range(largest[kind] - len(members))]
    rng.shuffle(out)
    return out


def chat_ids(tokenizer, message: str) -> list[int]:
    """The user message as `m1 serve model` encodes a chat request (its template writes the BOS)."""
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": message}], add_generation_prompt=True, tokenize=False
    )
    return list(tokenizer.encode(text, add_special_tokens=False))


def datasets(cfg: GenRMConfig) -> tuple[list[Labelled], list[Labelled]]:
    """(training responses, held-out responses): the held-out prompts are disjoint from the training ones."""

    def counts(n: int) -> tuple[int, int, int]:  # prompts of math, logic (half as many), general
        return tuple(k if d in cfg.judge_domains else 0 for d, k in zip(DOMAINS, (n, n // 2, n), strict=True))

    train = labelled_set(*counts(cfg.train_prompts), cfg.seed)
    seen = {x.question for x in train}
    test = [
        x for x in labelled_set(*counts(cfg.eval_prompts), heldout_seed(cfg.seed)) if x.question not in seen
    ]
    return train, test


def train_judge(
    output: str | Path,
    cfg: GenRMConfig,
    on_step: Callable[[dict[str, float]], None] | None = None,
    *,
    inputs_hash: str | None = None,
) -> dict[str, Any]:
    """Build the judging data, SFT a fresh judge on it, evaluate it on held-out prompts through the real
    server (`m1 genrm eval`'s code against this model, served on loopback), and save it as an HF checkpoint
    that `m1 serve model` serves, with the summary in its training.json and the held-out labelled responses
    beside it (``heldout_labels.jsonl``, a labels file for `m1 genrm eval`)."""
    # heavy: torch, transformers, fastapi
    from m1model.policy import CheckpointError, load_policy, save_policy
    from m1model.rl.sft import sft_warm_start
    from m1model.serving import ServerSettings, background, create_app
    from m1model.tokenizer import train_tokenizer
    from verifiers.genrm.evaluate import evaluate_judge

    t0 = time.perf_counter()
    rng = random.Random(f"judge/{cfg.seed}")
    train, test = datasets(cfg)
    train_examples = judge_examples(train, cfg, rng)

    if cfg.judge_init:  # another model's weights and tokenizer (the run's SFT policy, say) to start from
        try:
            model, tokenizer = load_policy(cfg.judge_init)
        except CheckpointError as exc:
            raise InputError(f"genrm.judge_init: {exc}") from None
        model.train()
    else:
        corpus = [e.message + "\n" + e.answer for e in train_examples[:2000]]
        tokenizer = train_tokenizer(corpus, vocab_size=cfg.judge_model.vocab_size)
        model = fresh_model(cfg.judge_model, tokenizer)
    eos = [tokenizer.eos_token_id]
    pairs = [
        (chat_ids(tokenizer, e.message), list(tokenizer.encode(e.answer, add_special_tokens=False)) + eos)
        for e in train_examples
    ]
    tc = TrainConfig(
        sft_steps=cfg.judge_steps, sft_lr=cfg.judge_lr, batch_size=cfg.judge_batch_size, seed=cfg.seed
    )
    history = sft_warm_start(model, pairs, sft_config(tc, tokenizer), on_step=on_step)
    train_s = time.perf_counter() - t0

    model.eval()
    rows = [x.as_row() for x in test]
    with background(create_app(model, tokenizer, ServerSettings(model_name="judge"))) as url:
        try:
            result = evaluate_judge(
                f"{url}/v1",
                rows,
                model="judge",
                k=cfg.k,
                seed=cfg.seed,
                max_tokens=cfg.judge_max_tokens,
                pair_method=cfg.pair_method,
                grade_views=cfg.grade_views,
            )
        except EndpointError as exc:  # every judgment failed: one line, as the CLI reports input errors
            raise InputError(str(exc)) from None
    summary = {
        "inputs_hash": inputs_hash,
        "train_examples": len(train_examples),
        "train_responses": len(train),
        "heldout_responses": len(test),
        "heldout_grades": dict(Counter(x.grade for x in test)),
        "eval": asdict(result),
        "final_loss": history[-1]["loss"] if history else None,
        "train_seconds": train_s,
        "seconds": time.perf_counter() - t0,
        "config": cfg.model_dump(),
        "pair_method": cfg.pair_method,
        "grade_views": cfg.grade_views,
    }
    folder = save_policy(model, tokenizer, output, extra={"judge": summary, "sft": history})
    write_labels(folder / HELDOUT, test)
    return summary
