"""Ingest's contract with the user: what a quarantined broken line records (line number, raw text cut at
2000 characters, reason), how file formats are recognised and reported when unreadable, how columns are
found, converted to text and packed into metadata, and what `load_items` returns for each part."""

from __future__ import annotations

import datetime
import json

import polars as pl
import pytest

from flows.curate.ingest import load_items, read_table, to_items
from flows.curate.readers import detect_format, read_raw
from flows.errors import InputError
from flows.schema import ITEM_COLUMNS

ITEM_SCHEMA = pl.Schema(ITEM_COLUMNS)
BROKEN_SCHEMA = pl.Schema({"line": pl.Int64, "raw": pl.String, "reason": pl.String})


def test_broken_lines_keep_their_number_raw_text_cut_at_2000_chars_and_reason(tmp_path):
    path = tmp_path / "broken.jsonl"
    surrogate = b"\xed\xa0\x80"  # an encoded lone surrogate: json accepts it, strict UTF-8 does not
    path.write_bytes(
        b'{"id": "ok", "prompt": "p"}\n'
        b"   \r\n"  # blank: skipped, but still counts as a line
        b'{"id": "b", "prompt": "' + b"x" * 3000 + b"\n"  # unterminated string, long
        b'{"id": "\xff' + b"y" * 3000 + b'"}\n'  # not UTF-8, long
        b"[" + b"1, " * 1000 + b"1]\n"  # not an object, long
        b"TODO fix X\r\n"
        b'{"id": "' + surrogate + b"\n"
        b'["' + surrogate + b'"]\n'
        b'{"id": 1,}\n'
    )
    rows, broken = read_raw(path)
    assert rows.rows() == [("ok", "p")]
    assert broken.schema == BROKEN_SCHEMA
    assert broken["line"].to_list() == [3, 4, 5, 6, 7, 8, 9]
    assert broken["reason"].to_list() == [
        "invalid JSON: Unterminated string starting at at column 23",
        "not UTF-8: invalid start byte",
        "not a JSON object",
        "invalid JSON: Expecting value at column 1",
        "invalid JSON: Unterminated string starting at at column 8",
        "not a JSON object",
        "invalid JSON: Expecting property name enclosed in double quotes at column 10",
    ]
    raw = broken["raw"].to_list()
    assert raw[0] == ('{"id": "b", "prompt": "' + "x" * 3000)[:2000]
    assert raw[1] == ('{"id": "\ufffd' + "y" * 3000)[:2000]
    assert raw[2] == ("[" + "1, " * 1000)[:2000]
    assert [len(r) for r in raw[:3]] == [2000, 2000, 2000]
    assert raw[3:] == ["TODO fix X", '{"id": "\ufffd\ufffd\ufffd', '["\ufffd\ufffd\ufffd"]', '{"id": 1,}']


def test_values_of_mixed_types_fall_back_to_text_for_every_line_and_key(tmp_path):
    path = tmp_path / "mixed.jsonl"
    lines = [json.dumps({"id": str(i), "v": i}) for i in range(150)]
    lines.append(json.dumps({"id": "m", "v": {"k": "é"}, "late": [1, True]}))  # a key first seen at line 151
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = read_table(path)
    assert rows.schema == pl.Schema({"id": pl.String, "v": pl.String, "late": pl.String})
    assert rows.height == 151
    assert rows.row(150) == ("m", '{"k": "é"}', "[1, true]")
    assert rows.row(0) == ("0", "0", None)


def test_only_blank_lines_give_no_rows_and_no_broken_lines(tmp_path):
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b"\n  \r\n\t\n")
    rows, broken = read_raw(path)
    assert rows.shape == (0, 0) and broken.height == 0 and broken.schema == BROKEN_SCHEMA


@pytest.mark.parametrize("name", ["a.jsonl", "a.json", "a.ndjson"])
def test_json_lines_suffixes(tmp_path, name):
    assert detect_format(tmp_path / name) == "jsonl"


def test_parquet_suffix_and_unknown_suffixes(tmp_path):
    assert detect_format(tmp_path / "a.parquet") == "parquet"
    with pytest.raises(InputError) as err:
        detect_format(tmp_path / "a.PARQUET")
    assert str(err.value) == (
        f"{tmp_path / 'a.PARQUET'}: unknown file type '.PARQUET' (use .jsonl, .parquet or a datasets folder)"
    )


@pytest.mark.parametrize("marker", ["dataset_info.json", "state.json", "dataset_dict.json"])
def test_a_folder_with_any_datasets_marker_file_is_a_datasets_folder(tmp_path, marker):
    (tmp_path / marker).write_text("{}")
    assert detect_format(tmp_path) == "hf"


def test_a_folder_without_datasets_marker_files_is_an_error(tmp_path):
    (tmp_path / "data.arrow").write_bytes(b"")
    with pytest.raises(InputError) as err:
        read_raw(tmp_path)
    assert str(err.value) == f"{tmp_path}: a directory but not a Hugging Face dataset saved with save_to_disk"


def test_parquet_rows_come_with_an_empty_broken_frame(tmp_path):
    path = tmp_path / "p.parquet"
    pl.DataFrame({"prompt": ["a", "b"], "n": [1, 2]}).write_parquet(path)
    rows, broken = read_raw(path)
    assert rows.rows() == [("a", 1), ("b", 2)]
    assert broken.height == 0 and broken.schema == BROKEN_SCHEMA


def test_an_unreadable_parquet_file_quotes_the_readers_first_line(tmp_path):
    path = tmp_path / "bad.parquet"
    path.write_bytes(b"PAR1 but not really parquet")
    try:
        pl.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - whatever polars raises is quoted
        first = str(exc).splitlines()[0]
    with pytest.raises(InputError) as err:
        read_raw(path)
    assert str(err.value) == f"{path}: not a readable Parquet file ({first})"


@pytest.fixture(scope="module")
def hf_folders(tmp_path_factory):
    datasets = pytest.importorskip("datasets")
    root = tmp_path_factory.mktemp("hf")
    datasets.DatasetDict({"validation": datasets.Dataset.from_dict({"question": ["v?"]})}).save_to_disk(
        str(root / "one")
    )
    datasets.DatasetDict(
        {
            "a": datasets.Dataset.from_dict({"question": ["a?"]}),
            "b": datasets.Dataset.from_dict({"question": ["b?"]}),
        }
    ).save_to_disk(str(root / "two"))
    datasets.Dataset.from_dict({"question": ["p?"], "n": [1]}).save_to_disk(str(root / "plain"))
    (root / "bad").mkdir()
    (root / "bad" / "state.json").write_text("{")
    return root


def test_a_datasets_dict_with_one_split_uses_it_whatever_its_name(hf_folders):
    rows, broken = read_raw(hf_folders / "one")
    assert rows.rows() == [("v?",)]
    assert broken.height == 0 and broken.schema == BROKEN_SCHEMA


def test_a_datasets_dict_without_train_needs_a_split(hf_folders):
    with pytest.raises(InputError) as err:
        read_raw(hf_folders / "two")
    assert str(err.value) == f"{hf_folders / 'two'}: choose a split with --split (has: a, b)"
    assert read_table(hf_folders / "two", split="b").rows() == [("b?",)]
    assert read_raw(hf_folders / "two", "a")[0].rows() == [("a?",)]
    assert load_items(hf_folders / "two", split="b").items["prompt"].to_list() == ["b?"]


def test_a_plain_dataset_folder_is_read_whole(hf_folders):
    assert read_table(hf_folders / "plain").rows() == [("p?", 1)]


def test_an_unreadable_datasets_folder_quotes_the_first_line_of_the_error(hf_folders):
    import datasets

    try:
        datasets.load_from_disk(str(hf_folders / "bad"))
    except Exception as exc:  # noqa: BLE001 - whatever datasets raises is quoted
        first = str(exc).splitlines()[0]
    with pytest.raises(InputError) as err:
        read_raw(hf_folders / "bad")
    assert str(err.value) == f"{hf_folders / 'bad'}: not a readable datasets folder ({first})"


def test_to_items_finds_columns_by_their_usual_names_and_converts_them_to_text():
    raw = pl.DataFrame(
        {
            "uid": [7, 8],
            "question": ["a?", "b?"],
            "answer": [1e-07, 2.5],  # numbers are written as polars writes them
            "type": [True, False],
            "extra": ["x", None],
        }
    )
    items, assigned, mapping, inferred = to_items(raw, source="src")
    assert items.schema == ITEM_SCHEMA
    assert items.rows() == [
        ("7", "src", "math", "true", "a?", "1e-7", '{"extra": "x"}'),
        ("8", "src", "math", "false", "b?", "2.5", "{}"),
    ]
    assert assigned == 0
    assert mapping == {"id": "uid", "prompt": "question", "reference": "answer", "task": "type"}
    assert inferred == ["id", "prompt", "reference", "task"]


def test_to_items_writes_nested_values_as_json_text():
    raw = pl.DataFrame({"prompt": ["p"], "reference": [[1, 2]], "task": [{"k": "ü"}]})
    items, *_ = to_items(raw, source="s")
    assert items.row(0, named=True) == {
        "id": "s-000000",
        "source": "s",
        "domain": "math",
        "task": '{"k": "ü"}',
        "prompt": "p",
        "reference": "[1, 2]",
        "metadata": "{}",
    }


def test_an_explicitly_mapped_column_is_not_also_found_by_alias():
    raw = pl.DataFrame({"problem": ["the answer"], "question": ["the question"]})
    items, _, mapping, inferred = to_items(raw, source="s", mapping={"reference": "problem"})
    assert items.select("prompt", "reference").row(0) == ("the question", "the answer")
    assert mapping == {"reference": "problem", "prompt": "question"} and inferred == ["prompt"]


def test_to_items_fills_source_domain_task_and_reference_when_the_file_has_none():
    raw = pl.DataFrame({"prompt": ["p1", "p2"]})
    items, *_ = to_items(raw, source="s", domain="code", task="unit-tests")
    assert (
        items.select("source", "domain", "task", "reference").rows()
        == [("s", "code", "unit-tests", None)] * 2
    )
    items, *_ = to_items(raw, source="s")
    assert items.select("domain", "task").rows() == [("math", "")] * 2


def test_file_columns_win_over_the_fill_values():
    raw = pl.DataFrame({"prompt": ["p"], "source": ["orig"], "domain": ["logic"], "category": ["puzzle"]})
    items, _, mapping, inferred = to_items(raw, source="s", domain="code", task="t")
    assert items.select("source", "domain", "task").row(0) == ("orig", "logic", "puzzle")
    assert inferred == ["prompt", "source", "domain", "task"] and mapping["task"] == "category"


def test_rows_that_leave_the_files_source_domain_or_task_empty_take_the_fill_values():
    # JSON lines where only some rows carry the key: the others read as null, not as an unknown domain
    raw = pl.DataFrame(
        {"prompt": ["p1", "p2", "p3"], "domain": ["logic", None, " "], "task": [None, "sudoku", ""]}
    )
    items, *_ = to_items(raw, source="s", domain="math", task="t")
    assert items.select("source", "domain", "task").rows() == [
        ("s", "logic", "t"),
        ("s", "math", "sudoku"),
        ("s", "math", "t"),
    ]


def test_missing_null_and_blank_ids_are_assigned_from_source_and_row_number():
    raw = pl.DataFrame({"id": [None, "x", "  ", "", "y"], "prompt": ["a", "b", "c", "d", "e"]})
    items, assigned, *_ = to_items(raw, source="set")
    assert items["id"].to_list() == ["set-000000", "x", "set-000002", "set-000003", "y"]
    assert assigned == 3


def test_to_items_of_an_empty_table_keeps_the_schema():
    raw = pl.DataFrame({"question": [], "level": []}, schema={"question": pl.String, "level": pl.Int64})
    items, assigned, mapping, inferred = to_items(raw, source="s")
    assert items.schema == ITEM_SCHEMA and items.height == 0
    assert (assigned, mapping, inferred) == (0, {"prompt": "question"}, ["prompt"])


def test_metadata_packs_extra_columns_and_renamed_keys_with_sorted_keys():
    raw = pl.DataFrame(
        {
            "question": ["q1", "q2"],
            "when": [datetime.date(2024, 1, 2), None],
            "level": [3, 4],
            "note": ["naïve", None],
            "tags": [["a"], None],
        }
    )
    items, _, mapping, _ = to_items(raw, source="s", mapping={"metadata.difficulty": "level"})
    assert items["metadata"].to_list() == [
        '{"difficulty": 3, "note": "naïve", "tags": ["a"], "when": "2024-01-02"}',
        '{"difficulty": 4}',
    ]
    assert mapping == {"metadata.difficulty": "level", "prompt": "question"}


def test_a_rows_own_metadata_wins_over_extra_columns_and_bad_metadata_is_passed_on():
    raw = pl.DataFrame(
        {
            "prompt": ["p0", "p1", "p2", "p3", "p4"],
            "metadata": ['{"level": "own", "z": 1}', "not json", "[1, 2]", None, '{"ü": "é"}'],
            "level": ["extra", "extra", "extra", "extra", None],
        }
    )
    items, *_ = to_items(raw, source="s")
    assert items["metadata"].to_list() == [
        '{"level": "own", "z": 1}',
        "not json",
        "[1, 2]",
        '{"level": "extra"}',
        '{"ü": "é"}',
    ]


def test_metadata_without_extra_columns_is_an_empty_object():
    items, *_ = to_items(pl.DataFrame({"id": ["a", "b"], "prompt": ["p", "q"]}), source="s")
    assert items["metadata"].to_list() == ["{}", "{}"]


def test_mapping_errors_name_the_place_and_the_choices():
    raw = pl.DataFrame({"q": ["p"], "n": [1]})
    with pytest.raises(InputError) as err:
        to_items(raw, source="s", mapping={"answer": "n"})
    assert str(err.value) == (
        "input: mapping names unknown column 'answer' "
        "(canonical: id, source, domain, task, prompt, reference, metadata, or metadata.<key>)"
    )
    with pytest.raises(InputError) as err:
        to_items(raw, source="s", mapping={"metadata.level": "lvl"}, where="f.jsonl")
    assert str(err.value) == "f.jsonl: mapping metadata.level=lvl: no column 'lvl' (has: q, n)"
    with pytest.raises(InputError) as err:
        to_items(raw, source="s")
    assert str(err.value) == (
        "input: no prompt column (looked for prompt, problem, question, input, query; has: q, n); "
        "map one with --map prompt=COLUMN"
    )
    with pytest.raises(InputError, match=r"^input: no prompt column \(.*; has: no columns\); map one"):
        to_items(pl.DataFrame({}), source="s")
    items, *_ = to_items(raw, source="s", mapping={"prompt": "q", "metadata.level": "n"})
    assert items.select("prompt", "metadata").row(0) == ("p", '{"level": 1}')


def test_a_file_of_only_broken_lines_gives_no_items_and_quarantines_every_line(tmp_path):
    path = tmp_path / "only.jsonl"
    path.write_text('\n  \noops\n["x"]\n')
    got = load_items(path, source="src")
    assert got.items.schema == ITEM_SCHEMA and got.items.height == 0
    assert got.quarantined.to_dicts() == [
        {
            "id": None,
            "source": "src",
            "domain": None,
            "task": None,
            "prompt": None,
            "reference": None,
            "metadata": '{"line":3,"raw":"oops"}',
            "reason": "line 3: invalid JSON: Expecting value at column 1",
        },
        {
            "id": None,
            "source": "src",
            "domain": None,
            "task": None,
            "prompt": None,
            "reference": None,
            "metadata": '{"line":4,"raw":"[\\"x\\"]"}',
            "reason": "line 4: not a JSON object",
        },
    ]
    assert (got.ids_assigned, got.rows_read, got.mapping, got.inferred) == (0, 2, {}, [])


def test_load_items_passes_source_domain_task_and_mapping_and_counts_every_row(tmp_path):
    path = tmp_path / "set.jsonl"
    path.write_text(
        json.dumps({"question": "one?", "key": "k1", "level": 2})
        + "\n{broken\n"
        + json.dumps({"question": "", "key": "k2"})
        + "\n"
        + json.dumps({"question": "three?"})
        + "\n"
    )
    got = load_items(path, mapping={"id": "key"}, domain="logic", task="riddle")
    assert got.items.rows() == [
        ("k1", "set", "logic", "riddle", "one?", None, '{"level": 2}'),
        ("set-000002", "set", "logic", "riddle", "three?", None, "{}"),
    ]
    assert got.quarantined.columns == [*ITEM_COLUMNS, "reason"]
    assert got.quarantined.select("id", "source", "reason").rows() == [
        ("k2", "set", "empty prompt"),
        (None, "set", "line 2: invalid JSON: Expecting property name enclosed in double quotes at column 2"),
    ]
    assert got.ids_assigned == 1
    assert got.rows_read == 4
    assert got.mapping == {"id": "key", "prompt": "question"} and got.inferred == ["prompt"]
    assert got.describe_mapping() == "id <- key, prompt <- question (inferred)"


def test_load_items_names_the_file_in_mapping_errors(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"q": "a"}\n')
    with pytest.raises(InputError) as err:
        load_items(path, mapping={"prompt": "question"})
    assert str(err.value) == f"{path}: mapping prompt=question: no column 'question' (has: q)"
    got = load_items(path, mapping={"prompt": "q"})
    assert got.items.select("id", "source", "domain", "task").row(0) == ("x-000000", "x", "math", "")


def test_an_empty_parquet_file_gives_no_items_but_still_maps_its_columns(tmp_path):
    path = tmp_path / "empty.parquet"
    pl.DataFrame(
        {"question": [], "level": []}, schema={"question": pl.String, "level": pl.Int64}
    ).write_parquet(path)
    got = load_items(path)
    assert got.items.schema == ITEM_SCHEMA and got.items.height == 0 and got.quarantined.height == 0
    assert (got.mapping, got.inferred, got.rows_read) == ({"prompt": "question"}, ["prompt"], 0)


def test_a_column_that_is_always_null_is_still_a_text_column(tmp_path):
    path = tmp_path / "nulls.jsonl"
    path.write_text('{"prompt": "p", "answer": null}\n{"prompt": "q", "answer": null}\n')
    raw = read_table(path)
    assert raw.schema["answer"] == pl.Null
    items, *_ = to_items(raw, source="s")
    assert items.schema == ITEM_SCHEMA and items["reference"].to_list() == [None, None]
