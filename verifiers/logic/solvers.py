"""A small SAT modelling layer over python-sat, shared by the grid puzzles.

Each puzzle states its rules once as CNF (`SatModel`); its clues (givens, inequalities, ...) are
*assumption* literals, so one incremental solver answers "how many solutions (up to 2) with these clues?"
many times while a generator removes clues. That is how generators prove uniqueness: count solutions
up to 2 and keep an instance only when the count is 1. Rules that are awkward in CNF (connectivity)
are added lazily: a `check` callback inspects each model and returns clauses that cut it off.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Iterable, Sequence

from pysat.card import CardEnc, EncType
from pysat.formula import IDPool
from pysat.solvers import Solver

Lit = int
Check = Callable[[set[int]], list[list[Lit]]]


class SatModel:
    """CNF under construction: named variables, cardinality constraints and Tseitin gates."""

    def __init__(self) -> None:
        self.pool = IDPool()
        self.clauses: list[list[Lit]] = []

    def var(self, *key: Hashable) -> Lit:
        return self.pool.id(key)

    def fresh(self) -> Lit:
        return self.pool.id(("fresh", self.pool.top + 1))

    def add(self, clause: Iterable[Lit]) -> None:
        self.clauses.append(list(clause))

    def _card(self, lits: Sequence[Lit], k: int, kind: str, guard: Lit | None) -> None:
        """A cardinality constraint; with a guard literal it only holds when the guard is true (the
        guard is then a clue that generators can switch on and off through assumptions)."""
        lits = list(lits)
        off = [] if guard is None else [-guard]
        if kind == "most" and k >= len(lits):
            return
        if k < 0 or k > len(lits):
            self.add(off)  # unsatisfiable: the caller asked for the impossible
            return
        encode = {"most": CardEnc.atmost, "equals": CardEnc.equals}[kind]
        enc = encode(lits=lits, bound=k, vpool=self.pool, encoding=EncType.seqcounter)
        self.clauses.extend([*off, *clause] for clause in enc.clauses)

    def at_most(self, lits: Sequence[Lit], k: int, guard: Lit | None = None) -> None:
        self._card(lits, k, "most", guard)

    def exactly(self, lits: Sequence[Lit], k: int, guard: Lit | None = None) -> None:
        self._card(lits, k, "equals", guard)

    def one_hot(self, key: Hashable, values: Iterable[Hashable]) -> dict[Hashable, Lit]:
        """One variable per value, exactly one of them true."""
        lits = {v: self.var(key, v) for v in values}
        self.exactly(list(lits.values()), 1)
        return lits

    def and_gate(self, lits: Sequence[Lit]) -> Lit:
        g = self.fresh()
        for lit in lits:
            self.add([-g, lit])
        self.add([g, *(-lit for lit in lits)])
        return g

    def or_gate(self, lits: Sequence[Lit]) -> Lit:
        g = self.fresh()
        for lit in lits:
            self.add([g, -lit])
        self.add([-g, *lits])
        return g

    def table(self, columns: Sequence[dict[Hashable, Lit]], rows: Iterable[Sequence[Hashable]]) -> None:
        """The tuple of values (one one-hot column per position) must be one of ``rows``."""
        selectors = []
        for row in rows:
            s = self.fresh()
            selectors.append(s)
            for col, value in zip(columns, row, strict=True):
                self.add([-s, col[value]])
        self.add(selectors)

    def session(self, check: Check | None = None) -> SatSession:
        return SatSession(self, check)


class SatSession:
    """An incremental solver loaded with a model's clauses; clues are passed as assumptions."""

    def __init__(self, model: SatModel, check: Check | None = None) -> None:
        self.model = model
        self.check = check
        self.solver = Solver(name="minisat22", bootstrap_with=model.clauses)

    def close(self) -> None:
        self.solver.delete()

    def __enter__(self) -> SatSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _solve(self, assumptions: Sequence[Lit]) -> set[int] | None:
        """A model satisfying the lazy `check` too (cuts from the check are kept: they are rules)."""
        while True:
            if not self.solver.solve(assumptions=list(assumptions)):
                return None
            true = {lit for lit in self.solver.get_model() if lit > 0}
            cuts = self.check(true) if self.check else []
            if not cuts:
                return true
            for cut in cuts:
                self.solver.add_clause(cut)

    def solutions(
        self, over: Sequence[Lit], assumptions: Sequence[Lit] = (), limit: int = 2
    ) -> list[set[int]]:
        """Up to ``limit`` solutions that differ on the variables ``over`` (each as its set of true ones)."""
        guard = self.model.fresh()
        found: list[set[int]] = []
        while len(found) < limit:
            true = self._solve([*assumptions, guard])
            if true is None:
                break
            found.append({v for v in over if v in true})
            self.solver.add_clause([-guard, *(-v if v in true else v for v in over)])
        self.solver.add_clause([-guard])  # retire this enumeration's blocking clauses
        return found

    def count(self, over: Sequence[Lit], assumptions: Sequence[Lit] = (), limit: int = 2) -> int:
        return len(self.solutions(over, assumptions, limit))

    def random_solution(self, over: Sequence[Lit], rng: random.Random) -> set[int] | None:
        """A solution steered by random decision phases, for generators that need a random valid grid."""
        self.solver.set_phases([v if rng.random() < 0.5 else -v for v in over])
        true = self._solve([])
        return None if true is None else {v for v in over if v in true}

    def differs_from(self, over: Sequence[Lit], solution: set[int]) -> Lit:
        """A guard literal that, assumed true, excludes `solution` (given as its true variables among
        `over`). Uniqueness of an intended solution is then one solve: any model is a rival."""
        guard = self.model.fresh()
        self.solver.add_clause([-guard, *(-v if v in solution else v for v in over)])
        return guard

    def rival(self, guard: Lit, over: Sequence[Lit], assumptions: Sequence[Lit]) -> set[int] | None:
        """A solution other than the one `guard` excludes (see differs_from), or None."""
        true = self._solve([*assumptions, guard])
        return None if true is None else {v for v in over if v in true}

    def pin_until_unique(
        self, over: Sequence[Lit], solution: set[int], rng: random.Random, assumptions: Sequence[Lit] = ()
    ) -> list[Lit]:
        """Reveal cells of the intended solution (as extra assumption literals) where a rival solution
        differs, until the intended one is the only one left. Returns the revealed literals."""
        guard = self.differs_from(over, solution)
        pinned: list[Lit] = []
        while (other := self.rival(guard, over, [*assumptions, *pinned])) is not None:
            v = rng.choice(sorted(solution ^ other))
            pinned.append(v if v in solution else -v)
        return pinned


def reduce_clues(
    session: SatSession,
    over: Sequence[Lit],
    clues: Sequence[Sequence[Lit]],
    rng: random.Random,
    keep: int = 0,
    required: Sequence[Lit] = (),
) -> list[int]:
    """Drop clues (each a list of assumption literals) in random order while the solution stays unique,
    stopping once only ``keep`` remain. The full clue set must have a unique solution. Returns the indices
    of the kept clues, sorted. Each trial is a single solve: is there any solution but the intended one?"""
    active = set(range(len(clues)))
    (intended,) = session.solutions(over, [*required, *assumptions_of(clues, active)], limit=1)
    guard = session.differs_from(over, intended)
    order = list(active)
    rng.shuffle(order)
    for i in order:
        if len(active) <= keep:
            break
        trial = active - {i}
        if session.rival(guard, over, [*required, *assumptions_of(clues, trial)]) is None:
            active = trial
    return sorted(active)


def reduce_in_phases(
    session: SatSession,
    over: Sequence[Lit],
    phases: Sequence[Sequence[Sequence[Lit]]],
    rng: random.Random,
) -> list[list[int]]:
    """Minimise several kinds of clue, the first kind first: e.g. remove given digits while every
    inequality is still there, then remove inequalities. Returns the kept indices per phase."""
    kept = [list(range(len(clues))) for clues in phases]
    for p, clues in enumerate(phases):
        others = [lit for q, other in enumerate(phases) if q != p for lit in assumptions_of(other, kept[q])]
        kept[p] = reduce_clues(session, over, clues, rng, required=others)
    return kept


def assumptions_of(clues: Sequence[Sequence[Lit]], indices: Iterable[int]) -> list[Lit]:
    return [lit for i in indices for lit in clues[i]]
