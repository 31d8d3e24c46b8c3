"""``BlockingWorkers``: the threads behind the JSONL and SQLite backends."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from harness.stores.worker import BlockingWorkers


def test_results_and_errors_come_back_to_the_caller() -> None:
    workers = BlockingWorkers("t")

    def boom() -> None:
        raise OSError(5, "EIO")

    async def scenario() -> None:
        assert await workers.run(sum, [1, 2, 3]) == 6
        with pytest.raises(OSError, match="EIO"):
            await workers.run(boom)
        assert workers.call(max, 4, 9) == 9

    asyncio.run(scenario())
    with pytest.raises(ZeroDivisionError):
        workers.call(lambda: 1 // 0)
    workers.close()


def test_one_thread_runs_calls_in_order_on_one_thread() -> None:
    workers = BlockingWorkers("t", threads=1, idle_s=None)
    seen: list[tuple[int, int]] = []

    def note(index: int) -> None:
        seen.append((index, threading.get_ident()))

    async def scenario() -> None:
        await asyncio.gather(*(workers.run(note, index) for index in range(200)))

    asyncio.run(scenario())
    workers.close()
    assert [index for index, _ in seen] == list(range(200))
    assert len({ident for _, ident in seen}) == 1


def test_several_threads_run_calls_at_the_same_time() -> None:
    workers = BlockingWorkers("t", threads=3)
    together = threading.Barrier(3, timeout=10)  # breaks unless three calls run at once

    async def scenario() -> None:
        results = await asyncio.gather(*(workers.run(together.wait) for _ in range(3)))
        assert sorted(results) == [0, 1, 2]

    asyncio.run(scenario())
    workers.close()


def test_a_call_whose_waiter_is_cancelled_still_runs_to_its_end() -> None:
    workers = BlockingWorkers("t")
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def slow() -> None:
        started.set()
        release.wait(10)
        finished.set()

    async def scenario() -> None:
        waiter = asyncio.ensure_future(workers.run(slow))
        await asyncio.to_thread(started.wait, 10)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        release.set()
        await asyncio.to_thread(finished.wait, 10)

    asyncio.run(scenario())
    assert finished.is_set()
    workers.close()


def test_idle_threads_end_and_new_calls_start_one_again() -> None:
    workers = BlockingWorkers("t", threads=4, idle_s=0.0005)

    async def scenario() -> None:
        for round_ in range(300):  # calls race threads that are just giving up
            batch = [workers.run(pow, round_, 2) for _ in range(round_ % 5 + 1)]
            assert await asyncio.gather(*batch) == [round_**2] * len(batch)
            if round_ % 50 == 0:
                await asyncio.sleep(0.01)

    asyncio.run(scenario())
    deadline = time.monotonic() + 10
    while workers._threads and time.monotonic() < deadline:
        time.sleep(0.01)
    assert workers._threads == 0 and not workers._idle
    assert workers.call(abs, -3) == 3  # and it starts again
    workers.close()


def test_close_finishes_what_was_handed_over_and_refuses_more() -> None:
    workers = BlockingWorkers("t", threads=1, idle_s=None)
    done: list[int] = []

    async def scenario() -> None:
        pending = [asyncio.ensure_future(workers.run(done.append, index)) for index in range(5)]
        await asyncio.sleep(0)
        workers.close()
        await asyncio.gather(*pending)
        with pytest.raises(RuntimeError, match="closed"):
            await workers.run(done.append, 99)

    asyncio.run(scenario())
    assert done == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="at least one thread"):
        BlockingWorkers("t", threads=0)


def test_a_forked_child_starts_its_own_threads_or_refuses_clearly() -> None:
    import multiprocessing

    shared = BlockingWorkers("t")
    pinned = BlockingWorkers("t", threads=1, idle_s=None)
    assert shared.call(abs, -1) == 1 and pinned.call(abs, -1) == 1  # threads alive before the fork

    def child(results: Any) -> None:
        results.put(shared.call(abs, -2))
        try:
            pinned.call(abs, -3)
        except RuntimeError as error:
            results.put(str(error))

    context = multiprocessing.get_context("fork")
    results = context.Queue()
    process = context.Process(target=child, args=(results,))
    process.start()
    process.join(30)
    assert process.exitcode == 0
    assert results.get(timeout=5) == 2
    assert "belongs to process" in results.get(timeout=5)
    shared.close()
    pinned.close()


def test_calls_from_many_threads_all_complete_while_threads_come_and_go() -> None:
    workers = BlockingWorkers("t", threads=3, idle_s=0.0002)
    errors: list[BaseException] = []

    def caller(offset: int) -> None:
        try:
            for index in range(300):
                assert workers.call(lambda n: n * 2, offset + index) == 2 * (offset + index)
                if index % 37 == 0:
                    time.sleep(0.001)  # let threads idle out now and then
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    callers = [threading.Thread(target=caller, args=(1000 * n,)) for n in range(6)]
    for thread in callers:
        thread.start()
    for thread in callers:
        thread.join(60)
    assert not errors and not any(thread.is_alive() for thread in callers)
    assert workers._threads <= 3
    workers.close()
