"""Fuzz contract for every registered logic task: `verify` never raises, and junk never scores 1.

For a few seeded instances per task, the gold answer is dressed up (tolerated: whitespace, case, text
outside the answer block) and broken (stray tokens inside the block, the answer repeated, a second answer,
empty and 1 MB answers, look-alike characters, numbers at the edges, random one-token changes). The task's
own `verify` is called directly. Whatever scores 1 is checked independently of the verifier's parser: for
a task with one right answer the change must not have changed the content; for tasks that accept any
valid answer (`CHECKERS`), the answer is decoded strictly in the gold format and its rules checked here.

reasoning-gym tasks (``rg_*``) are held to the first half only (verify never raises, rewards stay in
[0, 1]): each dataset's own `score_answer` reads their answers, a free-form grammar with partial credit
that this project does not own, so the strict-grammar and soundness checks do not apply to them.
"""

from __future__ import annotations

import ast
import functools
import random
import re
from collections.abc import Callable
from fractions import Fraction

import networkx as nx
import pytest

from verifiers.logic import TASKS, LogicInstance
from verifiers.logic.tasks.arrow_maze import ARROWS, covered, ray_length
from verifiers.logic.tasks.lights_out import apply_presses
from verifiers.logic.tasks.magic_square import violations as magic_violations

NAMES = sorted(TASKS)
# reasoning-gym datasets whose scorers are fuzzed for exceptions (prime_factorization raised on junk such as
# 'zz9' and '-1', as boxnet's did before it was dropped for having no reference answer; graph_color and
# knight_swap parse JSON and move lists); each costs about a second, so not all ~100.
RG_DATASETS = ("basic_arithmetic", "word_sorting", "prime_factorization", "graph_color", "knight_swap")
MUTATIONS = 12  # random one-token changes per instance
STRAY = ("zz9", "maybe", "@", "7", "¿", "x")
# Grammars of variable length: repeating the answer, or a stray token the grammar knows (a number in a
# path, a word in a cipher text), gives a well-formed wrong answer rather than a parse error.
VARIABLE_LENGTH = {
    "caesar_cipher",
    "rail_fence_cipher",
    "substitution_cipher",
    "vigenere_cipher",
    "dyck_language",
    "hamiltonian_path",
    "shortest_path",
    "word_sorting",
}
# Symbols that are content (not separators) in a task's answer, and may be swapped by mutations.
SYMBOLS = {
    "dyck_language": "()[]{}<>",
    "arrow_maze": "".join(ARROWS),
    "game_of_24": "+-*/",
    "mathador": "+-*/",
    "math_path": "+-*/",
    "kakuro": "#",
}
CYRILLIC = dict(zip("aceopxyABCEHKMOPTX", "асеорхуАВСЕНКМОРТХ", strict=True))
FULLWIDTH = {str(d): chr(0xFF10 + d) for d in range(10)}
HUGE = 1_000_000


@functools.cache
def instances(name: str) -> tuple[LogicInstance, ...]:
    task = TASKS[name]
    low, second = task.difficulties[0], task.difficulties[1]
    return (task.generate(low, 0), task.generate(low, 1), task.generate(second, 2))


def wrap(answer: str) -> str:
    return f"<answer>{answer}</answer>"


def verify(name: str, inst: LogicInstance, response: str) -> tuple[float, dict]:
    """The task's own verify; it must return a reward in {0, 1} (these tasks give no partial credit)."""
    reward, details = TASKS[name].verify(inst.puzzle, response)
    assert reward in (0.0, 1.0), (reward, details)
    assert isinstance(details, dict) and details
    return reward, details


def is_parse_error(details: dict) -> bool:
    return str(details.get("error", "")).startswith("parse error")


# --- independent checks for tasks that accept any valid answer ---------------------------------------
# Each decodes the answer strictly in the gold answer's own format (None when it is not in that format)
# and checks the puzzle's rules without the verifier's parser.


def _grid(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


def _arrow_maze(p: dict, text: str) -> bool:
    grid, n = _grid(text), p["n"]
    if [len(row) for row in grid] != [n] * n:
        return False
    for r in range(n):
        for c in range(n):
            if p["maze"][r][c].isdigit():
                if grid[r][c] != p["maze"][r][c]:
                    return False
                if sum(ray_length(grid, r, c, a) for a in ARROWS) != int(grid[r][c]):
                    return False
            elif grid[r][c] not in ARROWS or not covered(grid, r, c):
                return False
    return True


def _boolean_sat(p: dict, text: str) -> bool:
    n = p["n_vars"]
    parts = text.split(", ")
    pairs = [re.fullmatch(r"x(\d+)=(True|False)", part) for part in parts]
    if len(parts) != n or not all(pairs):
        return False
    values = {int(m.group(1)): m.group(2) == "True" for m in pairs}
    if sorted(values) != list(range(1, n + 1)):
        return False
    return all(any(values[abs(x)] == (x > 0) for x in clause) for clause in p["clauses"])


def _exact(text: str) -> tuple[Fraction, list[int], list[Fraction]] | None:
    """Exact value, integer literals and intermediate results of + - * / over integers, else None."""
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    numbers: list[int] = []
    steps: list[Fraction] = []

    def walk(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            numbers.append(node.value)
            return Fraction(node.value)
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div)):
            raise ValueError(node)
        a, b = walk(node.left), walk(node.right)
        ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}
        value = ops[type(node.op)] if type(node.op) in ops else a / b
        steps.append(value)
        return value

    try:
        return walk(tree), numbers, steps
    except (ValueError, ZeroDivisionError):
        return None


def _game_of_24(p: dict, text: str) -> bool:
    got = _exact(text)
    return got is not None and got[0] == p["target"] and sorted(got[1]) == sorted(p["numbers"])


def _mathador(p: dict, text: str) -> bool:
    got = _exact(text)
    return _game_of_24(p, text) and got is not None and all(v > 0 and v.denominator == 1 for v in got[2])


def _math_path(p: dict, text: str) -> bool:
    left, sep, right = text.partition(" = ")
    tokens = left.split(" ")
    operands, operators = tokens[::2], tokens[1::2]
    if not sep or right != str(p["result"]) or operators != p["operators"]:
        return False
    if not all(re.fullmatch(r"[1-9]", t) for t in operands) or len(operands) != len(p["operands"]):
        return False
    if any(given is not None and int(t) != given for t, given in zip(operands, p["operands"], strict=True)):
        return False
    got = _exact(left)
    return got is not None and got[0] == p["result"]


def _graph_coloring(p: dict, text: str) -> bool:
    pairs = [re.fullmatch(r"(\d+):(\d+)", part) for part in text.split(", ")]
    if not all(pairs):
        return False
    colour = {int(m.group(1)): int(m.group(2)) for m in pairs}
    if len(pairs) != p["n"] or sorted(colour) != list(range(1, p["n"] + 1)):
        return False
    return all(1 <= c <= p["colors"] for c in colour.values()) and all(
        colour[a] != colour[b] for a, b in p["edges"]
    )


def _path(text: str) -> list[int] | None:
    parts = text.split(" -> ")
    return [int(v) for v in parts] if all(re.fullmatch(r"\d+", v) for v in parts) else None


def _hamiltonian_path(p: dict, text: str) -> bool:
    path, edges = _path(text), {frozenset(e) for e in p["edges"]}
    return (
        path is not None
        and sorted(path) == list(range(1, p["n"] + 1))
        and all(frozenset(e) in edges for e in zip(path, path[1:], strict=False))
    )


def _shortest_path(p: dict, text: str) -> bool:
    path = _path(text)
    graph = nx.Graph()
    graph.add_weighted_edges_from(p["edges"])
    return (
        path is not None
        and path[0] == p["source"]
        and path[-1] == p["target"]
        and nx.is_path(graph, path)
        and nx.path_weight(graph, path, "weight")
        == nx.shortest_path_length(graph, p["source"], p["target"], "weight")
    )


def _lights_out(p: dict, text: str) -> bool:
    grid, n = _grid(text), p["n"]
    if [len(row) for row in grid] != [n] * n or any(v not in ("0", "1") for row in grid for v in row):
        return False
    return not any(map(any, apply_presses(p["lights"], [[int(v) for v in row] for row in grid])))


def _magic_square(p: dict, text: str) -> bool:
    grid, n = _grid(text), p["n"]
    if [len(row) for row in grid] != [n] * n or not all(re.fullmatch(r"\d+", v) for row in grid for v in row):
        return False
    values = [[int(v) for v in row] for row in grid]
    givens_kept = all(
        not g or g == v
        for grow, row in zip(p["givens"], values, strict=True)
        for g, v in zip(grow, row, strict=True)
    )
    return givens_kept and not magic_violations(values)


def _n_queens(p: dict, text: str) -> bool:
    pairs = [re.fullmatch(r"\((\d+), (\d+)\)", part) for part in re.split(r"(?<=\)), ", text)]
    if not all(pairs):
        return False
    queens = [(int(m.group(1)), int(m.group(2))) for m in pairs]
    n = p["n"]
    if len(queens) != n or any(not (1 <= r <= n and 1 <= c <= n) for r, c in queens):
        return False
    if any((r, c) not in queens for r, c in p["givens"]):
        return False
    return all(
        r1 != r2 and c1 != c2 and abs(r1 - r2) != abs(c1 - c2)
        for i, (r1, c1) in enumerate(queens)
        for r2, c2 in queens[i + 1 :]
    )


CHECKERS: dict[str, Callable[[dict, str], bool]] = {
    "arrow_maze": _arrow_maze,
    "boolean_sat": _boolean_sat,
    "game_of_24": _game_of_24,
    "graph_coloring": _graph_coloring,
    "hamiltonian_path": _hamiltonian_path,
    "lights_out": _lights_out,
    "magic_square": _magic_square,
    "math_path": _math_path,
    "mathador": _mathador,
    "n_queens": _n_queens,
    "shortest_path": _shortest_path,
}


def assert_sound(name: str, inst: LogicInstance, changed: str, how: str) -> None:
    """`changed` (the gold answer with its content altered) must score 0, unless it is a valid answer."""
    reward, details = verify(name, inst, wrap(changed))
    if reward == 0.0:
        return
    if name in CHECKERS:
        assert CHECKERS[name](inst.puzzle, changed), f"{how}: invalid answer {changed!r} accepted: {details}"
    else:
        pytest.fail(f"{how}: the only right answer is {inst.answer!r}, yet {changed!r} scored 1: {details}")


# --- mutations ----------------------------------------------------------------------------------------


def content_tokens(name: str, text: str) -> list[re.Match]:
    symbols = f"|[{re.escape(SYMBOLS[name])}]" if name in SYMBOLS else ""
    return list(re.finditer(rf"[A-Za-z]+|\d+{symbols}", text))


def replacement(name: str, token: str, gold: str, rng: random.Random) -> str:
    """A token of the same kind whose meaning differs (never a case change or a synonym)."""
    if token.isdigit():
        options = [str(int(token) + d) for d in (-3, -2, -1, 1, 2, 3) if int(token) + d >= 0] + ["0"]
    elif token.isalpha():
        options = [w for w in re.findall(r"[A-Za-z]+", gold) + ["zz", "qux"] if w.lower() != token.lower()]
    else:
        options = [*SYMBOLS[name], "5"]
    options = [o for o in options if o != token and o.lstrip("0") != token.lstrip("0")]
    return rng.choice(options)


def one_token_changes(name: str, inst: LogicInstance, rng: random.Random) -> list[str]:
    gold = inst.answer
    spans = content_tokens(name, gold)
    out = []
    for _ in range(MUTATIONS):
        m = rng.choice(spans)
        out.append(gold[: m.start()] + replacement(name, m.group(), gold, rng) + gold[m.end() :])
    return out


def edge_numbers(inst: LogicInstance, rng: random.Random) -> list[str]:
    gold = inst.answer
    spans = list(re.finditer(r"\d+", gold))
    if not spans:
        return [f"{gold} {v}" for v in ("0", "-1", str(10**30))]
    out = []
    for value in ("0", "00", "-1", "-7", str(10**30), f"-{10**30}", "9" * 5000):
        m = rng.choice(spans)
        if value.lstrip("0") != m.group().lstrip("0"):
            out.append(gold[: m.start()] + value + gold[m.end() :])
    return out


def insert_at_space(text: str, junk: str, rng: random.Random) -> str:
    spaces = [m.start() for m in re.finditer(r"\s", text)]
    if not spaces:
        return f"{text} {junk}"
    k = rng.choice(spaces)
    return f"{text[:k]} {junk} {text[k + 1 :]}"


def lookalike(text: str, table: dict[str, str], rng: random.Random) -> str | None:
    where = [i for i, ch in enumerate(text) if ch in table]
    if not where:
        return None
    i = rng.choice(where)
    return text[:i] + table[text[i]] + text[i + 1 :]


# --- the contract --------------------------------------------------------------------------------------


def test_every_task_is_in_the_contract():
    """Tasks that accept several answers need an independent checker here; a new one must add it."""
    assert set(CHECKERS) <= set(TASKS)
    assert set(VARIABLE_LENGTH) <= set(TASKS) and set(SYMBOLS) <= set(TASKS)
    for name in TASKS:
        if name in CHECKERS:
            continue
        for inst in instances(name):
            assert TASKS[name].count_solutions(inst.puzzle) in (None, 1)


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checkers_accept_the_gold_answers(name):
    """The independent checkers are not vacuous: they accept gold and reject the task's near miss."""
    for seed, inst in enumerate(instances(name)):
        assert CHECKERS[name](inst.puzzle, inst.answer)
        assert not CHECKERS[name](inst.puzzle, TASKS[name].corrupt(inst, seed))


@pytest.mark.parametrize("name", NAMES)
def test_tolerated_variations_score_one(name):
    for inst in instances(name):
        for response in (
            wrap(inst.answer),
            wrap(f"\n  {inst.answer}  \n"),
            wrap(re.sub(r"[ \t]+", "   ", inst.answer)),
            wrap(inst.answer.replace("\n", "\n\n")),
            wrap(inst.answer.upper()),
            wrap(inst.answer.lower()),
            f"Junk before <answer>no idea</answer> and more @@ ¿ 7\n{wrap(inst.answer)}\nJunk after: zz9 42",
            f"<think>{wrap('zz9')}</think>{wrap(inst.answer)}",
        ):
            reward, details = verify(name, inst, response)
            assert reward == 1.0, (response, details)


@pytest.mark.parametrize("name", NAMES)
def test_stray_tokens_inside_the_block_are_parse_errors(name):
    rng = random.Random(name)
    for inst in instances(name):
        gold = inst.answer
        for junk in STRAY:
            for text in (
                f"{gold} {junk}",
                f"{gold}\n{junk}",
                f"{junk} {gold}",
                insert_at_space(gold, junk, rng),
            ):
                reward, details = verify(name, inst, wrap(text))
                assert reward == 0.0, (text, details)
                if name not in VARIABLE_LENGTH or not junk.isalnum():  # "7" is a vertex, "maybe" letters
                    assert is_parse_error(details), (text, details)


@pytest.mark.parametrize("name", NAMES)
def test_repeated_and_second_answers_score_zero(name):
    task = TASKS[name]
    for seed, inst in enumerate(instances(name)):
        gold = inst.answer
        for text in (f"{gold}\n{gold}", " ".join([gold] * 20), f"{gold}\n{task.corrupt(inst, seed)}"):
            reward, details = verify(name, inst, wrap(text))
            assert reward == 0.0, (text, details)
            if name not in VARIABLE_LENGTH:
                assert is_parse_error(details), (text, details)


@pytest.mark.parametrize("name", NAMES)
def test_empty_and_huge_answers_score_zero(name):
    rng = random.Random(name)
    inst = instances(name)[0]
    noise = "".join(rng.choice("0123456789 ,;()[]\n#.xX-=>:abc") for _ in range(4096))
    for response in (
        "",
        wrap(""),
        wrap(" \n\t "),
        "<answer>",
        "</answer>",
        wrap(inst.answer)[:-3],
        wrap("1 " * (HUGE // 2)),
        wrap((inst.answer + "\n") * (HUGE // (len(inst.answer) + 1))),
        wrap(noise * (HUGE // len(noise))),
        "<answer>" * (HUGE // 8),
        wrap("9" * HUGE),
        ("<answer>" + inst.answer) * (HUGE // (len(inst.answer) + 8)),  # never closed
    ):
        reward, details = verify(name, inst, response)
        assert reward == 0.0, (response[:200], details)


@pytest.mark.parametrize("name", NAMES)
def test_one_token_changes_never_accept_a_wrong_answer(name):
    rng = random.Random(name)
    for inst in instances(name):
        for changed in one_token_changes(name, inst, rng):
            assert_sound(name, inst, changed, "one-token change")


@pytest.mark.parametrize("name", NAMES)
def test_numbers_at_the_edges(name):
    rng = random.Random(name)
    for inst in instances(name):
        for changed in edge_numbers(inst, rng):
            assert_sound(name, inst, changed, "edge number")


@pytest.mark.parametrize("name", NAMES)
def test_unicode_lookalikes_score_zero(name):
    rng = random.Random(name)
    for inst in instances(name):
        for table in (CYRILLIC, FULLWIDTH):
            for _ in range(4):
                text = lookalike(inst.answer, table, rng)
                if text is None:
                    break
                reward, details = verify(name, inst, wrap(text))
                assert reward == 0.0 and is_parse_error(details), (text, details)


@pytest.mark.parametrize("dataset", RG_DATASETS)
def test_reasoning_gym_verify_never_raises(dataset):
    pytest.importorskip("reasoning_gym")
    from verifiers.logic import get_task

    task = get_task(f"rg_{dataset}")
    inst = task.generate(1, 0)
    for junk in ("", "zz9", "-1", "9" * 5000, "(" * 300, "１２", f"{inst.answer} zz9", "x" * 30_000):
        reward, details = task.verify(inst.puzzle, wrap(junk))
        assert 0.0 <= reward <= 1.0 and details, (junk[:40], details)
