"""``DelegatingBackend`` forwards every ``Backend`` method, so a wrapper overrides only what
it changes (``FaultyBackend`` and the tests' hooked backends build on it)."""

from __future__ import annotations

import inspect

from harness.stores.backend import Backend, read_whole
from harness.stores.faults import DelegatingBackend
from harness.stores.memory import MemoryBackend
from harness.testing.samples import header, run, sample_events, write_samples


def test_every_backend_method_is_forwarded_by_the_base_itself() -> None:
    wanted = {name for name, _ in inspect.getmembers(Backend, inspect.iscoroutinefunction)}
    assert wanted >= {"create", "append", "read", "repair", "stored_length", "list", "delete", "close"}
    missing = {name for name in wanted if name not in vars(DelegatingBackend)}
    assert not missing, f"DelegatingBackend does not forward {sorted(missing)}"


def test_a_delegating_backend_reads_and_writes_what_its_inner_backend_holds() -> None:
    async def scenario() -> None:
        inner = MemoryBackend()
        wrapper: Backend = DelegatingBackend(inner)
        written = await write_samples(wrapper)
        assert await read_whole(inner, written.header.id) == written
        assert await read_whole(wrapper, written.header.id) == written
        assert await wrapper.stored_length(written.header.id) == len(written.events)
        assert [info.id for info in await wrapper.list()] == [info.id for info in await inner.list()]
        await wrapper.create(header("second"))
        await wrapper.append("second", sample_events()[:2])
        assert await inner.stored_length("second") == 2
        await wrapper.close()

    run(scenario())
