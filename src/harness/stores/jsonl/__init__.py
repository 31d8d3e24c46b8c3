"""The JSONL storage backend, wire-compatible with DeepSeek Harness session format v0 (FORMAT §9).

* ``paths``      — ``encode_segment``, ``project_key``, the root layout and its encoding (§9.1)
* ``frames``     — Zstandard frame scanning, decoding and encoding (§9.3)
* ``headerline`` — the header line: version refusal, shape, validation (§1, §9.6)
* ``scanner``    — event lines: packed rows, seq continuity, torn tail vs corruption (§9.6)
* ``reader``     — a whole log (raw or zstd) into its committed events; ``read_session_file``
* ``scan``       — header-only and tail looks for ``list()`` (§9.7)
* ``fileio``     — the replaceable OS calls and stable reads
* ``backend``    — ``JsonlBackend``, the ``Backend`` protocol on files (§9.4–9.5)
"""

from __future__ import annotations

from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.jsonl.paths import decode_segment, encode_segment, project_key, root_compression
from harness.stores.jsonl.reader import read_session_file

__all__ = [
    "JsonlBackend",
    "decode_segment",
    "encode_segment",
    "project_key",
    "read_session_file",
    "root_compression",
]
