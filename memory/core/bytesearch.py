"""Many byte strings looked for at once in files of any size: one read of each file, whatever their number.

The erasure's disk scan (memory/runtime/erase.py) looks for a user's texts, vector ids and vectors in every
file of a data folder: about a thousand needles for a user of 400 records. Looked for one at a time
(``needle in data``, each file read once), that is a pass over every byte per needle: 0.9 s for 1,021 needles
in a 12 MB folder of 384-dimension vectors, 37 s in a 58 MB folder of the lexical embedder's sparse vectors
(measured here). :class:`NeedleSearch` makes one pass (0.09 s and 1 s there):

* An Aho–Corasick automaton (ahocorasick_rs: the Rust ``aho-corasick`` crate) holds one *anchor* per needle:
  the needle itself up to ANCHOR_BYTES, else the ANCHOR_BYTES-long window of it where its bytes change most
  often. It reports every occurrence of every anchor (overlapping matches) in one pass over the data.
* Each occurrence is compared with the needles it anchors (``data.startswith(needle, at - offset)``): a needle
  is reported only where all of it is, and it is not missed, since wherever it occurs its anchor occurs too.
* Why anchors rather than whole needles: the automaton's size is then bounded by the number of needles, not
  their length (200 lexical vectors of 16 KB, whole, took 110 to 140 MB to compile; their anchors, 3 MB).
  Why the busiest window: a sparse vector is mostly zero bytes, and a window of zeros would occur at nearly
  every offset of a file of such vectors; the busiest window holds the needle's non-zero values (measured in
  the lexical folder above after an erasure: 0.75 comparisons per KB scanned; none in a folder of dense vectors).
* A file is read in pieces of ``chunk`` bytes that overlap by the longest needle less one byte, so every
  occurrence lies whole in some piece: memory is a piece's, not the file's.

Cost: every byte of a file passes through the automaton once (plus the overlaps: the longest needle per
piece), and each occurrence of an anchor costs one comparison per needle it anchors: what the search must
check, not needles x bytes. The automaton is the kind the library picks for the patterns; a DFA, forced,
scanned 2 to 4 times faster here but took 10 to 40 MB more for a few hundred to a thousand anchors.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
from ahocorasick_rs import BytesAhoCorasick

ANCHOR_BYTES = 64
"""Bytes of a needle the automaton holds (shorter needles whole). 32, 64 and 128 measured alike in speed."""
CHUNK_BYTES = 4 << 20
"""Bytes of a file searched at once (plus the overlap): bounds the memory of a search, and of the list of anchor
occurrences the automaton returns for one piece, whatever the file's size."""


class NeedleSearch:
    """A set of needles, compiled once, looked for in any number of byte strings and files."""

    def __init__(self, needles: Iterable[bytes]) -> None:
        unique = list(dict.fromkeys(needles))
        self.always: frozenset[bytes] = frozenset(n for n in unique if not n)
        """The empty needle, if given: it occurs in anything (``b"" in data``), an empty file too."""
        anchored: dict[bytes, list[tuple[bytes, int]]] = {}
        for needle in (n for n in unique if n):
            at = anchor_offset(needle)
            anchored.setdefault(needle[at : at + ANCHOR_BYTES], []).append((needle, at))
        self._anchored = list(anchored.values())
        self._automaton = BytesAhoCorasick(list(anchored)) if anchored else None
        self.overlap = max((len(n) for n in unique), default=1) - 1
        """Bytes shared by consecutive pieces of a file: an occurrence that starts in one piece ends in it."""

    def in_bytes(self, data: bytes) -> set[bytes]:
        """The needles that occur in ``data``."""
        found: set[bytes] = set(self.always)
        if self._automaton is None:
            return found
        for anchor, start, _ in self._automaton.find_matches_as_indexes(data, overlapping=True):
            for needle, at in self._anchored[anchor]:
                if start >= at and needle not in found and data.startswith(needle, start - at):
                    found.add(needle)
        return found

    def in_file(self, path: Path, *, chunk: int = CHUNK_BYTES) -> set[bytes]:
        """The needles that occur in the file, read once in pieces of ``chunk`` bytes (and the overlap) to its
        end as it is when read (a ``chunk`` shorter than the longest needle answers the same, reading each byte about
        overlap / chunk times). Raises OSError as ``open`` does."""
        found: set[bytes] = set()
        size, start = chunk + self.overlap, 0
        with open(path, "rb") as f:  # not a memory map: a file another process shrinks meanwhile would fault it
            while True:
                f.seek(start)
                data = f.read(size)
                found |= self.in_bytes(data)
                if len(data) < size:
                    return found
                start += chunk


def anchor_offset(needle: bytes) -> int:
    """Where the needle's anchor starts: 0 for a needle of ANCHOR_BYTES or fewer, else the first window of
    ANCHOR_BYTES with the most changes from one byte to the next (runs of one byte, the zeros of a sparse vector
    above all, are what unrelated data holds most)."""
    if len(needle) <= ANCHOR_BYTES:
        return 0
    raw = np.frombuffer(needle, dtype=np.uint8)
    changes = np.concatenate(([0], np.cumsum(raw[1:] != raw[:-1])))  # changes[i]: changes within needle[:i + 1]
    return int(np.argmax(changes[ANCHOR_BYTES - 1 :] - changes[: len(raw) - ANCHOR_BYTES + 1]))
