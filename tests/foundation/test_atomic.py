import pytest

from flows.atomic import atomic_dir, atomic_path, atomic_write_text


def test_failed_write_keeps_old_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "out.txt"
    atomic_write_text(target, "old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("crash")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_atomic_dir_never_overwrites(tmp_path):
    with atomic_dir(tmp_path / "v1") as d:
        (d / "a").write_text("1")
    assert (tmp_path / "v1" / "a").read_text() == "1"
    with pytest.raises(OSError):
        with atomic_dir(tmp_path / "v1") as d:
            (d / "a").write_text("2")
    assert (tmp_path / "v1" / "a").read_text() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v1"]
