"""Cleaning (M1 paper, section 4.1): drop items RL cannot use, reformulate multiple choice as open-ended.

Dropped, each with its reason: empty prompt or reference; encoding garbage (U+FFFD, mojibake, control
characters); broken LaTeX delimiters ($, \\( \\), \\[ \\], braces, \\begin/\\end); multi-sub-problem
questions; proof questions; binary (true/false, yes/no) questions, whose rewards a guess earns half
the time. Multiple-choice questions lose their options and their answer becomes the chosen option's
text, by rule; with a model endpoint, the model rewrites the stem as an open-ended question too.

These are rules for math items. Items of another domain (a ``domain`` column other than math: code,
SWE, logic, general) are checked by their own verifiers' data (tests, patches): here they only lose
an empty or garbled prompt, and their references (programs, diffs) are not read as math.

Not a flow: a curation step, kept beside the flow that runs it (flows/curate/flow.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import polars as pl

from flows.curate.answers import extract_answer, is_math
from flows.curate.result import StepResult, split_by_reason
from flows.schema import require_columns
from verifiers.endpoint import Endpoint

_MOJIBAKE = re.compile(r"Ã[\x80-\xbf]|â€|Â[\xa0-\xbf]|ï¿½")
_MONEY = re.compile(r"(?:^|(?<=\s))\$\d+(?:,\d{3})*(?:\.\d+)?(?=[\s.,;:!?)]|$)")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_PROOF = re.compile(r"\b(prove|proof|show that|demonstrate that|justify (?:that|why|your))\b", re.IGNORECASE)
_BINARY_PROMPT = re.compile(r"\b(true or false|yes or no|true/false|yes/no)\b", re.IGNORECASE)
_BINARY_ANSWERS = {"yes", "no", "true", "false", "correct", "incorrect"}
_PARTS = [
    re.compile(r"\(a\).*\(b\)", re.DOTALL),
    re.compile(r"\(i\).*\(ii\)", re.DOTALL),
    re.compile(r"(?:^|\s)a\)\s.*(?:^|\s)b\)\s", re.DOTALL),
    re.compile(r"\bpart\s*\(?a\)?\b.*\bpart\s*\(?b\)?\b", re.DOTALL | re.IGNORECASE),
    re.compile(r"(?m)^\s*1[.)]\s.*^\s*2[.)]\s", re.DOTALL),
]
# An option marker: "(A)", "\textbf{(A)}", or "A." / "A)" / "A:" standing alone before a space.
_OPTION = re.compile(r"(?:\\(?:textbf|mathrm|text)\{)?\(([A-E])\)\}?|(?<![\w\\$(])([A-E])[.):](?=\s)")
_LETTER = re.compile(r"^\W*(?:\\text(?:bf|rm)?\{)?\(?([A-E])\)?\}?\W*$")
_OPTION_JUNK = re.compile(r"\\qquad|\\quad|\\ |\$|~")

REWRITE_PROMPT = (
    "Rewrite this multiple-choice math question as an open-ended question with the same meaning, "
    "whose answer is {answer}. Do not list options and do not reveal the answer. Reply with the "
    "question only.\n\nQuestion:\n{question}"
)


def encoding_problem(text: str) -> str | None:
    if "\ufffd" in text:
        return "encoding garbage (U+FFFD replacement characters)"
    if _MOJIBAKE.search(text):
        return "encoding garbage (mojibake: UTF-8 read as Latin-1)"
    if _CONTROL.search(text):
        return "encoding garbage (control characters)"
    return None


def latex_problem(text: str) -> str | None:
    """Why the LaTeX delimiters of `text` are broken, or None."""
    # an escaped dollar or brace becomes a space, not nothing: "$\\$$" and "$\\{\\}$" must not read as "$$"
    body = text.replace("\\$", " ").replace("\\{", " ").replace("\\}", " ")
    if body.count("$$") % 2:
        return "broken LaTeX: unbalanced $$"
    singles = body.replace("$$", "")
    # "$5 each" is money, not math; but "$2 + 3$" is math: broken only if neither reading balances
    if singles.count("$") % 2 and _MONEY.sub("", singles).count("$") % 2:
        return "broken LaTeX: unbalanced $"
    for left, right in (("\\(", "\\)"), ("\\[", "\\]")):
        if body.count(left) != body.count(right):
            return f"broken LaTeX: unbalanced {left} {right}"
    depth = 0
    for ch in body:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return "broken LaTeX: '}' without '{'"
    if depth:
        return "broken LaTeX: unbalanced braces"
    begins = re.findall(r"\\begin\{(\w+\*?)\}", body)
    ends = re.findall(r"\\end\{(\w+\*?)\}", body)
    if sorted(begins) != sorted(ends):
        return "broken LaTeX: \\begin/\\end mismatch"
    return None


@dataclass
class MultipleChoice:
    stem: str
    options: dict[str, str]


def parse_multiple_choice(prompt: str) -> MultipleChoice | None:
    """The stem and options A, B, C... (at least three, in order), or None if not multiple choice."""
    marks = [(m.start(), m.end(), m.group(1) or m.group(2)) for m in _OPTION.finditer(prompt)]
    for k, (_, _, letter) in enumerate(marks):
        if letter != "A":
            continue
        run = [marks[k]]
        for m in marks[k + 1 :]:
            if m[2] == chr(ord(run[-1][2]) + 1):
                run.append(m)
        if len(run) < 3:
            continue
        options = {}
        for (_, e, letter), nxt in zip(run, [*run[1:], (len(prompt), 0, "")], strict=True):
            options[letter] = _OPTION_JUNK.sub(" ", prompt[e : nxt[0]]).strip(" \n\t;,.")
            options[letter] = re.sub(r"\s+", " ", options[letter])
        stem = prompt[: run[0][0]].rstrip(" $\n\t")
        if stem and all(options.values()):
            return MultipleChoice(stem, options)
    return None


def open_ended(stem: str) -> str:
    """Rule-based rewrite of a stem that refers to its options."""
    text = re.sub(
        r"\bwhich of the following( numbers| values| expressions)?( is| are)?\b",
        lambda m: "what" + (m.group(2) or ""),
        stem,
        flags=re.IGNORECASE,
    )
    text = re.sub(r"^what", "What", text)
    return re.sub(r"\s*\((?:choose|select|pick)[^)]*\)", "", text, flags=re.IGNORECASE).strip()


def _chosen_option(reference: str | None, mc: MultipleChoice) -> str | None:
    answer, _ = extract_answer(reference)
    if answer is None:
        return None
    if m := _LETTER.match(answer):
        return mc.options.get(m.group(1))
    return answer if answer in mc.options.values() else None


def clean(
    df: pl.DataFrame,
    endpoint: Endpoint | None = None,
    prompt_column: str = "prompt",
    reference_column: str = "reference",
) -> StepResult:
    """Drop unusable items (each with a reason) and reformulate multiple-choice ones as open-ended."""
    require_columns(df, [prompt_column, reference_column], where="clean input")
    prompts = df[prompt_column].cast(pl.String).to_list()
    refs = df[reference_column].cast(pl.String).to_list()
    metas = df["metadata"].to_list() if "metadata" in df.columns else [None] * df.height
    math = is_math(df)
    reasons: list[str | None] = []
    rewrites: dict[int, tuple[str, str, MultipleChoice]] = {}  # row -> (rule prompt, answer, mc)
    for i, (prompt, ref) in enumerate(zip(prompts, refs, strict=True)):
        if not math[i]:
            reasons.append(_reject_other(prompt))
            continue
        reason = _reject(prompt, ref)
        if reason is None and (mc := parse_multiple_choice(prompt)) is not None:
            option = _chosen_option(ref, mc)
            if option is None:
                reason = "multiple choice whose answer option cannot be resolved"
            else:
                rewrites[i] = (open_ended(mc.stem), option, mc)
        reasons.append(reason)
    how = "rule"
    if endpoint is not None and rewrites:
        rows = list(rewrites)
        replies = endpoint.chat(
            [REWRITE_PROMPT.format(question=prompts[i], answer=rewrites[i][1]) for i in rows],
            temperature=0.0,
            max_tokens=512,
        )
        for i, reply in zip(rows, replies, strict=True):
            text = (reply[0] if reply else "").strip()
            if text and parse_multiple_choice(text) is None:
                rewrites[i] = (text, *rewrites[i][1:])
        how = f"llm:{endpoint.model}"
    new_prompts, new_refs, new_metas = list(prompts), list(refs), list(metas)
    for i, (question, option, mc) in rewrites.items():
        new_prompts[i], new_refs[i] = question, f"\\boxed{{{option}}}"
        meta = json.loads(metas[i]) if metas[i] else {}
        meta["reformulated"] = {
            "from": "multiple-choice",
            "by": how,
            "prompt": prompts[i],
            "reference": refs[i],
            "options": mc.options,
        }
        new_metas[i] = json.dumps(meta, ensure_ascii=False, sort_keys=True)
    out = df.with_columns(
        pl.Series(prompt_column, new_prompts, dtype=pl.String),
        pl.Series(reference_column, new_refs, dtype=pl.String),
    )
    if "metadata" in df.columns:
        out = out.with_columns(pl.Series("metadata", new_metas, dtype=pl.String))
    res = split_by_reason(
        out,
        pl.Series(reasons, dtype=pl.String),
        "clean",
        "empty, garbled, broken LaTeX, multi-part, proof or binary items; "
        f"{len(rewrites)} multiple-choice reformulated",
    )
    return res


def _reject_other(prompt: str | None) -> str | None:
    if not prompt or not prompt.strip():
        return "empty prompt"
    if problem := encoding_problem(prompt):
        return f"{problem} in prompt"
    return None


def _reject(prompt: str | None, ref: str | None) -> str | None:
    if not prompt or not prompt.strip():
        return "empty prompt"
    if not ref or not ref.strip():
        return "empty reference"
    for field, text in (("prompt", prompt), ("reference", ref)):
        if problem := encoding_problem(text) or latex_problem(text):
            return f"{problem} in {field}"
    if _PROOF.search(prompt):
        return "proof question"
    if any(p.search(prompt) for p in _PARTS):
        return "multiple sub-problems"
    answer, _ = extract_answer(ref)
    normal = re.sub(r"\\text\{([^}]*)\}", r"\1", answer or "").strip(" .$").lower()
    if _BINARY_PROMPT.search(prompt) or normal in _BINARY_ANSWERS:
        return "binary question (true/false, yes/no)"
    return None
