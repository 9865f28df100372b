"""No server path in a participant's page (issue 28): a file of a folder a server offers by name (the instructor's
MEMORY_DATASETS_DIR, read with ``root=``) is named in errors by its name, never by the folder's path nor by where a
symlink leads. Without ``root`` (the CLI: the user's own machine and the path they typed) the path is named as typed.
"""

from __future__ import annotations

import os

import pytest

from memory import DataFileError, read_regular_file


def _refusal(path, **kw) -> str:
    with pytest.raises(DataFileError) as info:
        read_regular_file(path, what="dataset file", **kw)
    return str(info.value)


@pytest.fixture
def folders(tmp_path):
    folder, outside = tmp_path / "datasets", tmp_path / "elsewhere" / "private"
    folder.mkdir()
    outside.mkdir(parents=True)
    (outside / "secret.json").write_text("[]", encoding="utf-8")
    return folder, outside


def _paths(*paths) -> list[str]:
    return [str(p) for path in paths for p in (path, path.resolve())]


def test_a_symlink_out_of_the_folder_is_named_by_its_name(folders, tmp_path):
    folder, outside = folders
    (folder / "escape.json").symlink_to(outside / "secret.json")
    message = _refusal(folder / "escape.json", root=folder)
    assert message.startswith("escape.json: cannot read dataset file") and "outside the allowed folder" in message
    assert not [p for p in _paths(folder, outside, outside / "secret.json", tmp_path) if p in message], message
    assert "private" not in message and "secret" not in message, message


def test_other_refusals_within_the_folder_name_the_file_alone(folders):
    folder, _ = folders
    (folder / "sub").mkdir()
    (folder / "sub" / "a_folder.json").mkdir()
    (folder / "to-dev.json").symlink_to("/dev/zero")
    os.mkfifo(folder / "pipe.json")
    for name, fragment in (("missing.json", "no such file"), ("sub/a_folder.json", "directory"),
                           ("pipe.json", "FIFO"), ("to-dev.json", "outside the allowed folder")):
        message = _refusal(folder / name, root=folder)
        assert message.startswith(f"{name}: ") and fragment in message, message
        assert str(folder) not in message and "/dev" not in message, message


def test_without_a_root_the_path_typed_is_named(folders):
    folder, outside = folders
    (folder / "escape.json").symlink_to(outside / "secret.json")
    assert read_regular_file(folder / "escape.json", what="dataset file") == b"[]"  # no root: any regular file
    assert str(folder / "missing.json") in _refusal(folder / "missing.json")
