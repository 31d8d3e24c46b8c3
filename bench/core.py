"""Benchmarks of the Session core (issue: Session engine).

Prints, for this machine and this run:

* append cost per event (median of batches) for a ~900-byte assistant/message
  event and a small assistant/chunk event, next to the floor measured in the same
  run (orjson dumps + loads of the same data);
* restore + full validation throughput (decode every line, then
  ``Session.from_decoded``) against a bare decode of the same lines (the floor);
* ``derive_messages`` after one more append at 100 and at 100,000 nodes, against
  its cost at 100 nodes plus one ``list.copy()`` of 100,000 items.

Nothing here is asserted: machines are shared and noisy. Targets (SPEC/issue):
append ≤ 6 µs; restore ≤ 2× bare decode; derive at 100k ≤ 2× (derive at 100 + copy).

Run: ``.venv/bin/python bench/core.py [--events N]``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from typing import Any

import orjson

import harness
from harness.events.json import loads

PUBLISHED = {
    "dsh append (TypeScript, PEERS.md)": 22.4,
    "Google ADK InMemorySessionService append_event mean (PEERS.md)": 803.0,
}


def message_data(index: int) -> dict[str, Any]:
    """A ~900-byte assistant/message payload (about 1.1 kB as a wire line)."""
    return {
        "turn": 1,
        "step": index + 1,
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": f"answer {index}: " + "lorem ipsum dolor sit amet " * 28}],
            "source": {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"},
            "id": f"a-{index}",
        },
        "usage": {"inputTokens": 1200, "outputTokens": 140, "cacheReadTokens": 640},
    }


def chunk_data(index: int) -> dict[str, Any]:
    return {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": f"tok{index} "}}


def bench_append(batches: int = 30, batch_size: int = 1000) -> dict[str, float]:
    total = batches * batch_size
    messages = [message_data(i) for i in range(total)]
    chunks = [chunk_data(i) for i in range(total)]
    session = harness.Session.create()

    def append_messages(batch: int) -> None:
        append = session.append
        for data in messages[batch * batch_size : (batch + 1) * batch_size]:
            append("assistant/message", data, surface_op="append", source_event_seqs=[])

    def append_chunks(batch: int) -> None:
        append = session.append
        for data in chunks[batch * batch_size : (batch + 1) * batch_size]:
            append("assistant/chunk", data)

    def floor(batch: int) -> None:
        for data in messages[batch * batch_size : (batch + 1) * batch_size]:
            orjson.loads(orjson.dumps(data))

    line = harness.encode_event(session.append("assistant/message", messages[0], surface_op="append"))
    # Interleaved batch by batch (message appends, chunk appends, floor), so that a slow spell
    # of a shared machine lands on all three instead of on whichever ran through it.
    samples: dict[str, list[float]] = {"message": [], "chunk": [], "floor": []}
    runs = (("message", append_messages), ("chunk", append_chunks), ("floor", floor))
    for batch in range(batches):
        for name, run_batch in runs:
            start = time.perf_counter()
            run_batch(batch)
            samples[name].append((time.perf_counter() - start) / batch_size)
    ratios = [ours / bare for ours, bare in zip(samples["message"], samples["floor"], strict=True)]
    return {
        "message_line_bytes": float(len(line)),
        "append_message_us": statistics.median(samples["message"]) * 1e6,
        "append_chunk_us": statistics.median(samples["chunk"]) * 1e6,
        "orjson_floor_us": statistics.median(samples["floor"]) * 1e6,
        "message_over_floor": statistics.median(ratios),
    }


def bench_restore(events: int) -> dict[str, float]:
    session = harness.Session.create()
    for index in range(events):
        session.append("assistant/message", message_data(index), surface_op="append", source_event_seqs=[])
    lines = [harness.encode_event(event) for event in session.events]
    header = session.header
    size = sum(len(line) + 1 for line in lines)
    del session
    gc.collect()

    def bare() -> float:
        start = time.perf_counter()
        decoded = [loads(line) for line in lines]
        elapsed = time.perf_counter() - start
        del decoded
        return elapsed

    def full() -> float:
        start = time.perf_counter()
        restored = harness.Session.from_decoded(header.id, [loads(line) for line in lines], header)
        elapsed = time.perf_counter() - start
        assert len(restored.events) == events + 1
        del restored
        return elapsed

    bare_s = min(bare() for _ in range(3))
    full_s = min(full() for _ in range(3))
    return {
        "events": float(events),
        "megabytes": size / 1e6,
        "bare_decode_mb_s": size / 1e6 / bare_s,
        "restore_mb_s": size / 1e6 / full_s,
        "restore_over_decode": full_s / bare_s,
    }


def bench_derive(small: int = 100, large: int = 100_000, repeats: int = 200) -> dict[str, float]:
    def cost_after_one_append(nodes: int) -> float:
        session = harness.Session.create()
        for index in range(nodes):
            session.append(
                "user/message", harness.user_message(f"m{index}", id=f"u{index}"), surface_op="append"
            )
        session.derive_messages()
        samples = []
        for index in range(repeats):
            session.append(
                "user/message", harness.user_message(f"x{index}", id=f"x{index}"), surface_op="append"
            )
            start = time.perf_counter()
            session.derive_messages()
            samples.append(time.perf_counter() - start)
        return statistics.median(samples)

    items = list(range(large))
    copy_samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        items.copy()
        copy_samples.append(time.perf_counter() - start)
    small_s = cost_after_one_append(small)
    large_s = cost_after_one_append(large)
    copy_s = statistics.median(copy_samples)
    return {
        "derive_small_ms": small_s * 1e3,
        "derive_large_ms": large_s * 1e3,
        "list_copy_large_ms": copy_s * 1e3,
        "large_over_small_plus_copy": large_s / (small_s + copy_s),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=100_000, help="events in the restore benchmark")
    args = parser.parse_args()

    append = bench_append()
    print(
        f"append (assistant/message, {append['message_line_bytes']:.0f}-byte line): "
        f"{append['append_message_us']:.2f} µs median   [target ≤ 6 µs]"
    )
    print(f"append (assistant/chunk text-delta):            {append['append_chunk_us']:.2f} µs median")
    print(
        f"floor: orjson dumps+loads of the same data:      {append['orjson_floor_us']:.2f} µs "
        f"(append / floor = {append['append_message_us'] / append['orjson_floor_us']:.1f}×)"
    )
    for name, figure in PUBLISHED.items():
        print(f"  vs {name}: {figure:.1f} µs → {figure / append['append_message_us']:.1f}× ours")

    restore = bench_restore(args.events)
    print(
        f"restore + full validation of {restore['events']:.0f} events ({restore['megabytes']:.1f} MB): "
        f"{restore['restore_mb_s']:.0f} MB/s"
    )
    print(
        f"floor: bare decode of the same lines:            {restore['bare_decode_mb_s']:.0f} MB/s "
        f"(restore / decode time = {restore['restore_over_decode']:.2f}×)   [target ≤ 2×]"
    )

    derive = bench_derive()
    print(
        f"derive_messages after one append: {derive['derive_small_ms']:.4f} ms at 100 nodes, "
        f"{derive['derive_large_ms']:.4f} ms at 100,000 nodes"
    )
    print(
        f"one list.copy() of 100,000 items: {derive['list_copy_large_ms']:.4f} ms; "
        f"large / (small + copy) = {derive['large_over_small_plus_copy']:.2f}×   [target ≤ 2×]"
    )


if __name__ == "__main__":
    main()
