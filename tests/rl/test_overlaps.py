"""The curriculum's datasets deduplicated against each other where they are read together
(flows/curriculum/overlap.py): an item of a later dataset duplicating one kept from an earlier dataset is
left out, exactly against every earlier item and as a MinHash near-duplicate only against earlier items of
other domains (generated items of one family share their wording), with a reason naming the item; the
producers' own datasets never depend on each other (the flow tests hold that)."""

from __future__ import annotations

import polars as pl

from flows.config import MinhashConfig
from flows.curriculum import load_curriculum
from flows.curriculum.mixture import load_data
from flows.curriculum.overlap import separate_from_dataset, separate_overlaps
from flows.store import DatasetStore
from tests.tasks.conftest import frame, item

APPLES = "count the apples in the basket of fruit on the old kitchen table today"
FARMER = "a farmer walks to the market with seven sheep and three goats before noon"
CHESS = "something else entirely about the rules of chess and the openings"
M = MinhashConfig(threshold=0.5)


def curated() -> pl.DataFrame:
    return frame([item("r1", APPLES, domain="logic"), item("r2", FARMER)])


def test_exact_against_every_earlier_item_near_only_against_other_domains():
    rows = frame([
        item("x", APPLES, domain="logic"),  # exact copy of a logic item: out
        item("y", APPLES + " now", domain="logic"),  # near copy of a logic item, its own domain: stays
        item("z", FARMER + "!", domain="logic"),  # near copy of a math item: out
        item("w", CHESS, domain="logic"),
    ])  # fmt: skip
    res = separate_from_dataset(rows, curated(), "t-curated", M)
    assert res.kept["id"].to_list() == ["y", "w"]
    assert sorted(res.removed["id"].to_list()) == ["x", "z"]
    reasons = dict(zip(res.removed["id"], res.removed["reason"], strict=True))
    assert "t-curated item r1" in reasons["x"] and "t-curated item r2" in reasons["z"]
    assert res.count.step == "dedup-vs-t-curated" and (res.count.rows_in, res.count.rows_out) == (4, 2)
    assert res.count.reason == (
        "duplicates of t-curated items: exact, or MinHash Jaccard >= 0.5 against other domains"
    )


def test_a_mixed_dataset_compares_each_row_with_the_other_domains_of_its_own():
    rows = frame([
        item("m", APPLES + " now"),  # math row near a logic item: out
        item("l", APPLES + " now", domain="logic"),  # logic row near a logic item: stays
        item("c", FARMER + " again", domain="code"),  # code row near a math item: out
    ])  # fmt: skip
    res = separate_from_dataset(rows, curated(), "t-curated", M)
    assert res.kept["id"].to_list() == ["l"] and sorted(res.removed["id"].to_list()) == ["c", "m"]


def test_earlier_datasets_win_and_each_is_compared_with_what_was_kept_before_it():
    first = frame([item("a", APPLES, domain="logic")])
    second = frame([item("b", APPLES, domain="logic"), item("b2", CHESS, domain="logic")])
    third = frame([item("c", CHESS, domain="code"), item("c2", FARMER, domain="code")])
    kept, removed = separate_overlaps([("one", first), ("two", second), ("three", third)], M)
    assert [k["id"].to_list() for k in kept] == [["a"], ["b2"], ["c2"]]
    assert removed.select("id", "dataset").rows() == [("b", "two"), ("c", "three")]
    assert "one item a" in removed["reason"][0] and "two item b2" in removed["reason"][1]
    none, nothing = separate_overlaps([("one", first), ("empty", first.head(0))], M)
    assert [k.height for k in none] == [1, 0] and nothing.height == 0


def test_the_curriculum_reads_its_datasets_without_overlaps_in_its_order(tmp_path):
    store = DatasetStore(tmp_path / "home")
    store.write("t-curated", curated())
    store.write("t-synlogic", frame([item("x", APPLES, domain="logic"), item("w", CHESS, domain="logic")]))
    toml = tmp_path / "c.toml"
    toml.write_text(
        'name = "c"\ndatasets = ["{run}-curated", "{run}-synlogic"]\n'
        '[[stages]]\nname = "s"\nmixture = { math = 1.0, logic = 1.0 }\nsteps = 1\nmax_new_tokens = 4\n'
    )
    data = load_data(store, load_curriculum(str(toml)), "t", 0.01, M)
    ids = sorted(pl.concat([data.train, data.heldout])["id"].to_list())
    assert ids == ["r1", "r2", "w"]  # x duplicates curated's r1
    assert data.overlaps.select("id", "dataset").rows() == [("x", "t-synlogic")]
    assert data.refs == ["t-curated@v1", "t-synlogic@v1"]
