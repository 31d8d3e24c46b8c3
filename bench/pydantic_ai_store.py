"""``HarnessConversationStore`` next to pydantic-ai's ``InMemoryConversationStore``, same run.

Prints, per store (pydantic-ai's in-memory reference; ours over memory, an SQLite file and a
plain JSONL root):

* ``save``: a loaded conversation gains one message and is saved, N times (each save durable
  on the file backends: committed or fdatasync'd), mean per save;
* ``load``: one load of the resulting conversation (N messages), and of the last 20;
* ratios against the reference (which keeps Python objects in a dict and writes nothing).

Nothing is asserted: machines are shared and noisy. Needs the ``pydantic-ai`` extra.

Run: ``.venv/bin/python bench/pydantic_ai_store.py [--messages N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationStore, InMemoryConversationStore
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart

from harness.integrations.pydantic_ai import HarnessConversationStore
from harness.stores import JsonlBackend, MemoryBackend, SessionStore, SqliteBackend


def message(index: int) -> ModelRequest | ModelResponse:
    text = f"message {index}: " + "lorem ipsum dolor sit amet " * 8
    if index % 2:
        return ModelResponse(parts=[TextPart(text)], model_name="bench")
    return ModelRequest.user_text_prompt(text)


async def measure(store: ConversationStore, count: int) -> tuple[float, float, float]:
    await store.save(Conversation(conversation_id="bench", messages=[message(0)]))
    conversation = await store.load("bench")
    assert conversation is not None
    started = time.perf_counter()
    for index in range(1, count):
        conversation.messages.append(message(index))
        await store.save(conversation)
    save = (time.perf_counter() - started) / max(1, count - 1)
    started = time.perf_counter()
    loaded = await store.load("bench")
    load = time.perf_counter() - started
    assert loaded is not None and len(loaded.messages) == count
    started = time.perf_counter()
    await store.load("bench", limit=20)
    window = time.perf_counter() - started
    return save, load, window


async def main(count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        stores: list[tuple[str, Callable[[], Awaitable[ConversationStore]]]] = []

        async def reference() -> ConversationStore:
            return InMemoryConversationStore()

        def ours(make: Callable[[], object]) -> Callable[[], Awaitable[ConversationStore]]:
            async def build() -> ConversationStore:
                return HarnessConversationStore(SessionStore(make()))  # type: ignore[arg-type]

            return build

        stores.append(("pydantic-ai InMemoryConversationStore", reference))
        stores.append(("harness, MemoryBackend", ours(MemoryBackend)))
        stores.append(("harness, SQLite file", ours(lambda: SqliteBackend(Path(tmp) / "s.sqlite"))))
        root = Path(tmp) / "root"
        stores.append(("harness, JSONL root", ours(lambda: JsonlBackend(root, compression="none"))))
        await measure(InMemoryConversationStore(), 50)  # warm pydantic's validators up first
        results = []
        for name, build in stores:
            store = await build()
            results.append((name, *await measure(store, count)))
            if isinstance(store, HarnessConversationStore):
                await store.sessions.close()
    _, ref_save, ref_load, ref_window = results[0]
    print(f"{count} messages, one save per message; times per operation, ratio to the reference")
    print(f"{'store':40} {'save':>18} {'load all':>18} {'load last 20':>18}")
    for name, save, load, window in results:
        print(
            f"{name:40} {save * 1e3:8.3f} ms {save / ref_save:6.1f}x"
            f" {load * 1e3:8.2f} ms {load / ref_load:6.1f}x"
            f" {window * 1e3:8.2f} ms {window / ref_window:6.1f}x"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=300)
    asyncio.run(main(parser.parse_args().messages))
