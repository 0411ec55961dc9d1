"""Swiss rounds' pairing rules (verifiers/genrm/swiss.py) with an in-process judge: no rematches, a bye
worth one point and at most one per candidate, and how many rounds each prompt plays."""

from __future__ import annotations

from verifiers.genrm.swiss import Player, Tournament, run_swiss


def lower_wins(triples):
    """The candidate with the lower number (its text) wins every match."""
    return [1.0 if int(first) < int(second) else -1.0 for _, first, second in triples]


def tournament(n: int, name: str = "t") -> Tournament:
    return Tournament(name, "q", [Player(i, str(i)) for i in range(n)])


def test_no_two_candidates_meet_twice():
    (result,) = run_swiss([tournament(4)], lower_wins, rounds=3)  # three rounds of four: a round robin
    for r in result["ranking"]:
        assert sorted(r["opponents"]) == sorted(set(range(4)) - {r["candidate"]})
    assert [r["score"] for r in result["ranking"]] == [3.0, 2.0, 1.0, 0.0]


def test_a_bye_is_one_point_and_given_at_most_once():
    t = tournament(3)
    (first,) = run_swiss([t], lower_wins, rounds=1)
    assert {r["candidate"]: r["score"] for r in first["ranking"]} == {0: 1.0, 1: 0.0, 2: 1.0}  # 2: the bye
    assert t.players[2].bye and t.players[2].opponents == []
    # Later: 0 has met 2 (not 1); 2, the odd one out again, already had its bye and sits out.
    t.players[0].opponents, t.players[1].opponents, t.players[2].opponents = [2], [], [0]
    assert [(p.index, q and q.index) for p, q in t.pairings()] == [(0, 1)]


def test_each_prompt_plays_its_own_default_number_of_rounds():
    small, large = tournament(2, "small"), tournament(8, "large")
    run_swiss([small, large], lower_wins)
    assert [len(p.opponents) for p in small.players] == [1, 1]  # ceil(log2 2) = 1 round
    assert [len(p.opponents) for p in large.players] == [3] * 8  # ceil(log2 8) = 3 rounds
    assert not any(p.bye for p in small.players)


def test_an_explicit_number_of_rounds_is_played_by_every_prompt():
    small = tournament(2, "small")
    run_swiss([small, tournament(8)], lower_wins, rounds=2)
    # the second round has no new opponent for either: the leader gets the bye
    assert [(p.score, p.bye) for p in small.players] == [(2.0, True), (0.0, False)]
