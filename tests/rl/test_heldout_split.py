"""The held-out split (flows/curriculum/mixture.py `heldout_mask`) and how validation combines sets
(flows/curriculum/evaluation.py `rates`, `pooled`): ``val/all`` is the pass rate over every held-out item,
so a domain counts by its number of items, not the mean of the per-domain rates."""

from __future__ import annotations

import polars as pl
import pytest

from flows.curriculum.evaluation import BENCHMARK, pooled, rates
from flows.curriculum.mixture import heldout_mask
from m1model.rl.evaluation import PassRate

IDS = pl.Series([f"item-{i}" for i in range(20_000)])


@pytest.mark.parametrize("fraction", [0.02, 0.1, 0.25, 0.5])
def test_the_held_out_share_is_the_fraction(fraction):
    share = heldout_mask(IDS, fraction).mean()
    assert share == pytest.approx(fraction, abs=0.01)  # binomial sd at 20k ids: at most 0.0036


def test_no_fraction_holds_out_nothing_and_a_whole_one_everything():
    assert not heldout_mask(IDS[:500], 0.0).any()
    assert heldout_mask(IDS[:500], 1.0).all()


def test_an_id_is_held_out_by_itself_not_by_its_neighbours():
    whole = heldout_mask(IDS, 0.1)
    assert heldout_mask(IDS[::-1], 0.1).to_list() == whole.to_list()[::-1]  # order does not matter
    assert heldout_mask(IDS[5000:6000], 0.1).to_list() == whole[5000:6000].to_list()  # nor what else is there
    numbers = pl.Series([7, 12, 99])
    assert heldout_mask(numbers, 0.5).to_list() == heldout_mask(pl.Series(["7", "12", "99"]), 0.5).to_list()


def test_the_split_does_not_move_between_versions():
    """Pinned: a change of the hash would move items between training and validation of existing runs."""
    held = heldout_mask(IDS[:60], 0.1)
    assert [i for i, h in zip(IDS[:60], held, strict=True) if h] == [
        "item-0", "item-9", "item-13", "item-33", "item-36", "item-43", "item-44",
    ]  # fmt: skip


def test_a_larger_fraction_holds_out_more_and_keeps_what_a_smaller_one_held():
    small, large = heldout_mask(IDS, 0.1), heldout_mask(IDS, 0.2)
    assert large.sum() > small.sum() * 1.8
    assert not (small & ~large).any()  # nested: raising the fraction only adds items


def test_a_share_per_id_holds_out_each_at_its_own_share():
    shares = [0.1 if i % 2 else 0.4 for i in range(len(IDS))]
    held = heldout_mask(IDS, shares)
    assert held[1::2].mean() == pytest.approx(0.1, abs=0.015) and held[::2].mean() == pytest.approx(
        0.4, abs=0.015
    )
    assert held[1::2].to_list() == heldout_mask(IDS[1::2], 0.1).to_list()  # the same hash, only the cut moves
    with pytest.raises(ValueError):
        heldout_mask(IDS[:3], [0.1, 0.2])  # a share per id or one for all, never a short list


# -- validation over sets of different sizes -----------------------------------------------------------


def solved(k: int, n: int) -> PassRate:
    return PassRate(tuple([True] * k + [False] * (n - k)))


def test_val_all_pools_the_items_of_every_held_out_set():
    results = {"math": solved(90, 100), "logic": solved(0, 10)}
    out = rates(results)
    assert out["val/math"] == 0.9 and out["val/logic"] == 0.0
    assert out["val/all"] == pytest.approx(90 / 110)  # not (0.9 + 0.0) / 2 = 0.45
    assert pooled(results) == PassRate((True,) * 90 + (False,) * 20)


def test_benchmark_files_are_reported_but_not_pooled():
    results = {"math": solved(1, 4), f"{BENCHMARK}gsm": solved(50, 50)}
    out = rates(results)
    assert out[f"val/{BENCHMARK}gsm"] == 1.0 and out["val/all"] == 0.25


def test_no_held_out_set_no_val_all():
    assert rates({f"{BENCHMARK}gsm": solved(1, 2)}) == {f"val/{BENCHMARK}gsm": 0.5}
    assert pooled({}) is None
