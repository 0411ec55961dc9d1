import json

import polars as pl
import pytest

from flows.errors import InputError
from flows.schema import ITEM_COLUMNS, validate_items


def _row(**kw):
    base = {
        "id": "a",
        "source": "s",
        "domain": "math",
        "task": "t",
        "prompt": "What is 1+1?",
        "reference": "2",
        "metadata": "{}",
    }
    return base | kw


def test_valid_rows_pass_and_bad_rows_are_quarantined_with_reasons():
    df = pl.DataFrame(
        [
            _row(id="ok"),
            _row(id=""),
            _row(id="ok"),  # duplicate id: the first occurrence wins
            _row(id="p", prompt="   "),
            _row(id="d", domain="astrology"),
            _row(id="m", metadata="[1, 2]"),
            _row(id="j", metadata="{broken"),
            _row(id="ok2", metadata=json.dumps({"k": 1})),
        ],
        schema=ITEM_COLUMNS,
    )
    valid, bad = validate_items(df)
    assert valid["id"].to_list() == ["ok", "ok2"]
    reasons = dict(zip(range(bad.height), bad["reason"].to_list(), strict=True))
    assert list(reasons.values()) == [
        "empty id",
        "duplicate id",
        "empty prompt",
        "unknown domain (expected one of math, code, logic, swe, general)",
        "metadata is not a JSON object",
        "metadata is not a JSON object",
    ]
    assert valid.height + bad.height == df.height  # nothing is lost


def test_missing_column_is_a_clear_error():
    df = pl.DataFrame([_row()]).drop("prompt")
    with pytest.raises(InputError, match=r"items\.jsonl: missing column\(s\) prompt"):
        validate_items(df, where="items.jsonl")


def test_stage_columns_are_kept():
    df = pl.DataFrame([_row()], schema=ITEM_COLUMNS).with_columns(pl.lit(0.5).alias("pass_rate"))
    valid, bad = validate_items(df)
    assert valid["pass_rate"].to_list() == [0.5] and bad.height == 0
