"""memory.core.safefile: only bounded regular files are read; every refusal is one line naming the file."""

import os

import pytest

from memory.core.errors import DataFileError, MemoryLabError
from memory.core.safefile import MAX_FILE_MB_ENV, check_folder, max_file_bytes, read_regular_file
from memory.core.scenario import read_data_file


def refused(path, fragment, **kw):
    with pytest.raises(DataFileError) as info:
        read_regular_file(path, what="scenario file", **kw)
    message = str(info.value)
    assert fragment in message, message
    assert len(message.splitlines()) == 1
    assert "scenario file" in message or "cannot read" in message
    return message


def test_a_regular_file_is_read_whole(tmp_path):
    p = tmp_path / "s.json"
    p.write_bytes(b"x" * 5000)
    assert read_regular_file(p, what="file", max_bytes=5000) == b"x" * 5000
    assert read_data_file(p, "scenario file") == b"x" * 5000


def test_missing_directory_device_procfs_are_refused(tmp_path):
    assert str(tmp_path / "nope.json") in refused(tmp_path / "nope.json", "no such file")
    refused(tmp_path, "directory")
    refused("/dev/zero", "pseudo-file")
    refused("/proc/self/status", "pseudo-file")
    refused("/sys/kernel/mm/transparent_hugepage/enabled" if os.path.exists("/sys/kernel/mm") else "/proc/meminfo",
            "pseudo-file")


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    refused(fifo, "FIFO")  # an open without O_NONBLOCK would wait here for a writer forever


def test_size_cap_is_checked_before_reading(tmp_path, monkeypatch):
    p = tmp_path / "big.json"
    p.write_bytes(b"y" * 2001)
    refused(p, "the limit is 2,000", max_bytes=2000)
    monkeypatch.setenv(MAX_FILE_MB_ENV, "0.001")
    assert max_file_bytes() == 1048
    refused(p, "MEMORY_MAX_FILE_MB")
    monkeypatch.setenv(MAX_FILE_MB_ENV, "nan")
    with pytest.raises(DataFileError, match="MEMORY_MAX_FILE_MB"):
        max_file_bytes()
    monkeypatch.delenv(MAX_FILE_MB_ENV)
    assert max_file_bytes() == 50 * 1024 * 1024


def test_a_sparse_file_over_the_cap_is_refused_without_reading_it(tmp_path):
    p = tmp_path / "sparse.json"
    with open(p, "wb") as f:
        f.truncate(10 * 1024**3)  # 10 GB of holes: reading it would take minutes and all the memory
    refused(p, "10,737,418,240 bytes")


def test_symlinks_stay_inside_the_root(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "real.json").write_text("{}")
    (root / "inside.json").symlink_to(root / "real.json")
    outside = tmp_path / "secret.json"
    outside.write_text("secret")
    (root / "leaves.json").symlink_to(outside)
    assert read_regular_file(root / "inside.json", what="file", root=root) == b"{}"
    refused(root / "leaves.json", "outside the allowed folder", root=root)
    assert read_regular_file(root / "leaves.json", what="file") == b"secret"  # no root: any regular file
    (root / "dev.json").symlink_to("/dev/zero")
    refused(root / "dev.json", "pseudo-file")


def test_names_with_line_breaks_stay_on_one_line(tmp_path):
    message = refused(tmp_path / "a\nb.json", "no such file")
    assert "a\\nb.json" in message


def test_check_folder(tmp_path):
    assert check_folder(tmp_path / "new", what="--data-dir") == tmp_path / "new"
    assert check_folder(tmp_path, what="--data-dir") == tmp_path
    (tmp_path / "f").write_text("x")
    for bad, fragment in ((tmp_path / "f", "regular file"), ("/dev/null", "character device"),
                          (tmp_path / "f" / "sub", "not a directory"), ("/proc/self/x", "pseudo")):
        with pytest.raises(MemoryLabError, match=fragment):
            check_folder(bad, what="--data-dir")
