"""Bug injection by AST mutation, in the manner of SWE-smith's procedural modifiers.

The functions and classes of a library's modules are found with swesmith's Python adapter, and
mutated with swesmith's LibCST modifiers (`swesmith.bug_gen.procedural.python`) where one fits a kind;
the kinds swesmith lacks (wrong return values, swapped call arguments, comparison boundaries, a
dropped clause of a condition) are modifiers of the same base class here, each changing exactly one
site. Every modifier is seeded from (seed, file, function, modifier), and candidates are interleaved
across kinds in a seeded order, so the same seed yields the same mutants in the same order.
"""

from __future__ import annotations

import ast
import hashlib
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import libcst
from swesmith.bug_gen.adapters.python import get_entities_from_file_py
from swesmith.bug_gen.procedural.python import MODIFIERS_PYTHON
from swesmith.bug_gen.procedural.python.base import PythonProceduralModifier
from swesmith.bug_gen.procedural.python.operations import (
    OperationChangeConstantsModifier,
    OperationChangeModifier,
    OperationFlipOperatorModifier,
    OperationSwapOperandsModifier,
)
from swesmith.bug_gen.procedural.python.remove import (
    RemoveAssignModifier,
    RemoveConditionalModifier,
    RemoveLoopModifier,
)
from swesmith.constants import BugRewrite, CodeEntity, CodeProperty


class OneSiteModifier(PythonProceduralModifier):
    """Changes exactly one eligible node, chosen by the modifier's seeded generator (swesmith's own
    modifiers flip each eligible node with a probability instead)."""

    min_complexity = 1
    node_type: type[libcst.CSTNode] = libcst.CSTNode

    def eligible(self, node) -> bool:
        return True

    def change(self, node):
        raise NotImplementedError

    def modify(self, code_entity: CodeEntity) -> BugRewrite | None:
        try:
            module = libcst.parse_module(code_entity.src_code)
        except libcst.ParserSyntaxError:
            return None
        modifier = self

        class Site(libcst.CSTTransformer):
            def __init__(self, target: int) -> None:
                super().__init__()
                self.target, self.seen = target, 0

            def on_leave(self, original_node, updated_node):
                if isinstance(original_node, modifier.node_type) and modifier.eligible(original_node):
                    self.seen += 1
                    if self.seen - 1 == self.target:
                        return modifier.change(updated_node)
                return updated_node

        counter = Site(-1)
        module.visit(counter)
        if not counter.seen:
            return None
        changed = module.visit(Site(self.rand.randrange(counter.seen)))
        if changed.code == module.code:
            return None
        return BugRewrite(rewrite=changed.code, explanation=self.explanation, strategy=self.name)


class WrongReturnModifier(OneSiteModifier):
    name = "m1_wrong_return"
    explanation = "A function returns the wrong value."
    conditions = [CodeProperty.IS_FUNCTION, CodeProperty.HAS_RETURN]
    node_type = libcst.Return

    def eligible(self, node: libcst.Return) -> bool:
        return node.value is not None and not (
            isinstance(node.value, libcst.Name) and node.value.value == "None"
        )

    def change(self, node: libcst.Return) -> libcst.Return:
        value = node.value
        if isinstance(value, libcst.Name) and value.value in ("True", "False"):
            return node.with_changes(value=libcst.Name("False" if value.value == "True" else "True"))
        if isinstance(value, libcst.Comparison | libcst.BooleanOperation):
            return node.with_changes(
                value=libcst.UnaryOperation(libcst.Not(), libcst.parse_expression(f"({_code(value)})"))
            )
        return node.with_changes(value=libcst.Name("None"))


class SwapArgumentsModifier(OneSiteModifier):
    name = "m1_swap_args"
    explanation = "A call passes its arguments in the wrong order."
    conditions = [CodeProperty.IS_FUNCTION, CodeProperty.HAS_FUNCTION_CALL]
    node_type = libcst.Call

    def eligible(self, node: libcst.Call) -> bool:
        positional = [a for a in node.args if a.keyword is None and not a.star]
        return len(positional) >= 2 and _code(positional[0].value) != _code(positional[1].value)

    def change(self, node: libcst.Call) -> libcst.Call:
        args = list(node.args)
        i, j = [k for k, a in enumerate(args) if a.keyword is None and not a.star][:2]
        # swap the values, keep each slot's comma and whitespace
        args[i], args[j] = (
            args[i].with_changes(value=args[j].value),
            args[j].with_changes(value=args[i].value),
        )
        return node.with_changes(args=args)


_BOUNDARY = {
    libcst.LessThan: libcst.LessThanEqual,
    libcst.LessThanEqual: libcst.LessThan,
    libcst.GreaterThan: libcst.GreaterThanEqual,
    libcst.GreaterThanEqual: libcst.GreaterThan,
}


class BoundaryModifier(OneSiteModifier):
    name = "m1_off_by_one_compare"
    explanation = "A comparison is off by one at its boundary."
    conditions = [CodeProperty.IS_FUNCTION, CodeProperty.HAS_OFF_BY_ONE]
    node_type = libcst.ComparisonTarget

    def eligible(self, node: libcst.ComparisonTarget) -> bool:
        return type(node.operator) in _BOUNDARY

    def change(self, node: libcst.ComparisonTarget) -> libcst.ComparisonTarget:
        op = node.operator
        flipped = _BOUNDARY[type(op)](
            whitespace_before=op.whitespace_before, whitespace_after=op.whitespace_after
        )
        return node.with_changes(operator=flipped)


class DropClauseModifier(OneSiteModifier):
    name = "m1_drop_clause"
    explanation = "A condition is missing one of its clauses."
    conditions = [CodeProperty.IS_FUNCTION, CodeProperty.HAS_BOOL_OP]
    node_type = libcst.BooleanOperation

    def change(self, node: libcst.BooleanOperation):
        return node.left if self.rand.random() < 0.5 else node.right


def _code(node: libcst.CSTNode) -> str:
    return libcst.Module(body=[]).code_for_node(node)


# The kinds of bugs, each by the modifiers that make it (swesmith's first).
KINDS: dict[str, tuple[type[PythonProceduralModifier], ...]] = {
    "operator_swap": (OperationChangeModifier, OperationFlipOperatorModifier),
    "off_by_one": (OperationChangeConstantsModifier, BoundaryModifier),
    "dropped_condition": (RemoveConditionalModifier, DropClauseModifier),
    "wrong_return": (WrongReturnModifier,),
    "swapped_arguments": (SwapArgumentsModifier, OperationSwapOperandsModifier),
    "removed_statement": (RemoveAssignModifier, RemoveLoopModifier),
}
# swesmith's own likelihood for each of its modifiers (how often an eligible node is changed).
_LIKELIHOOD = {type(m): m.likelihood for m in MODIFIERS_PYTHON}


@dataclass(frozen=True)
class Mutant:
    """One candidate bug: the mutated file and where and how it was changed."""

    file: str  # path inside the repository
    entity: str  # the function (or class) that was changed
    line_start: int
    line_end: int
    kind: str
    modifier: str
    explanation: str
    source: str  # the whole mutated file

    @property
    def key(self) -> str:
        return hashlib.sha256(f"{self.file}\0{self.source}".encode()).hexdigest()[:10]


def _seed(*parts) -> int:
    return int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:8], "big")


def _splice(original: str, entity: CodeEntity, rewrite: str) -> str:
    """The file with the entity's lines replaced by the rewrite, re-indented (swesmith's rule)."""
    lines = original.splitlines(keepends=True)
    pad = " " * (entity.indent_level * entity.indent_size)
    change = [f"{pad}{line}" if line.strip() else line for line in rewrite.splitlines(keepends=True)]
    if not change:
        return original
    last = lines[entity.line_end - 1]
    change[-1] = change[-1].rstrip("\n") + "\n" * (len(last) - len(last.rstrip("\n")))
    return "".join(lines[: entity.line_start - 1] + change + lines[entity.line_end :])


def mutants(repo_dir: Path, files: list[str], seed: int) -> Iterator[Mutant]:
    """Candidate bugs in `files` (paths in `repo_dir`), deterministic for a seed and repository: the
    (function, modifier) pairs of each kind in a seeded order, kinds taking turns, duplicates skipped."""
    originals: dict[str, str] = {}
    entities: list[tuple[str, CodeEntity]] = []
    for rel in sorted(files):
        path = Path(repo_dir) / rel
        originals[rel] = path.read_text(encoding="utf-8")
        found: list[CodeEntity] = []
        get_entities_from_file_py(found, str(path))
        entities += [(rel, e) for e in sorted(found, key=lambda e: (e.line_start, e.name))]

    rng = random.Random(_seed(seed, Path(repo_dir).name))
    queues: dict[str, list[tuple[str, CodeEntity, type]]] = {}
    for kind, classes in KINDS.items():
        pairs = [(rel, e, cls) for rel, e in entities for cls in classes if cls().can_change(e)]
        rng.shuffle(pairs)
        queues[kind] = pairs
    order = list(KINDS)
    rng.shuffle(order)  # each repository starts with other kinds, so a few tasks already vary
    seen: set[str] = set()
    while any(queues.values()):
        for kind in order:
            if not queues[kind]:
                continue
            rel, entity, cls = queues[kind].pop()
            modifier = cls(
                likelihood=_LIKELIHOOD.get(cls, 1.0),
                seed=_seed(seed, rel, entity.line_start, entity.name, cls.__name__),
            )
            try:
                bug = modifier.modify(entity)
            except Exception:  # noqa: BLE001 - a modifier that trips on odd code just yields no mutant
                bug = None
            if bug is None:
                continue
            source = _splice(originals[rel], entity, bug.rewrite)
            if source == originals[rel] or not _parses(source):
                continue
            mutant = Mutant(
                rel,
                entity.name,
                entity.line_start,
                entity.line_end,
                kind,
                modifier.name,
                modifier.explanation,
                source,
            )
            if mutant.key in seen:
                continue
            seen.add(mutant.key)
            yield mutant


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True
