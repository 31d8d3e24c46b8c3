"""Each adapter opens its own store from a store spec, as its framework's users expect
(``SQLiteSession(id, path)``, ``DatabaseSessionService(db_url=...)``,
``SqliteSaver.from_conn_string(...)``), with ``~`` expanded; closing the adapter closes that
store. Every backend constructor expands ``~`` too (issue 29, item 4)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from harness.errors import StorageError, StoreSpecError
from harness.stores.dsh_sqlite import DshSqliteBackend
from harness.stores.jsonl.backend import JsonlBackend
from harness.stores.sqlite import SqliteBackend


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_backend_constructors_expand_the_home_directory(home: Path) -> None:
    assert JsonlBackend("~/sessions").root == str(home / "sessions")
    sqlite = SqliteBackend("~/sessions.db")
    dsh = DshSqliteBackend("~/dsh.sqlite")
    try:
        assert sqlite.path == home / "sessions.db"
        assert dsh.path == home / "dsh.sqlite"
    finally:
        asyncio.run(sqlite.close())
        asyncio.run(dsh.close())


def test_openai_agents_session_from_url(home: Path) -> None:
    from harness.integrations.openai_agents import HarnessSession

    async def go() -> list[Any]:
        first = HarnessSession.from_url("chat-1", "sqlite:~/agents.db")
        await first.add_items([{"role": "user", "content": "hi"}])
        await first.close()
        with pytest.raises(StorageError, match="closed"):
            await first.get_items()  # its store closed with it
        again = HarnessSession.from_url("chat-1", "sqlite:~/agents.db")
        try:
            return await again.get_items()
        finally:
            await again.close()

    assert asyncio.run(go()) == [{"role": "user", "content": "hi"}]
    assert (home / "agents.db").exists()


def test_adk_service_from_url(home: Path) -> None:
    from harness.integrations.adk import HarnessSessionService

    async def go() -> list[str]:
        service = HarnessSessionService.from_url("~/adk")
        await service.create_session(app_name="app", user_id="u", session_id="s", state={"k": 1})
        await service.close()
        with pytest.raises(StorageError, match="closed"):
            await service.store.list()
        service = HarnessSessionService.from_url("~/adk")
        try:
            found = await service.get_session(app_name="app", user_id="u", session_id="s")
            assert found is not None and found.state == {"k": 1}
            return sorted(info.id for info in await service.store.list())
        finally:
            await service.close()

    assert "adk/app/u/s" in asyncio.run(go())
    assert (home / "adk").is_dir()


def test_langgraph_savers_from_conn_string(home: Path) -> None:
    from langgraph.graph import START, MessagesState, StateGraph

    from harness.integrations.langgraph import AsyncHarnessSaver, HarnessSaver

    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [("ai", f"you said: {state['messages'][-1].content}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    config: Any = {"configurable": {"thread_id": "t"}}
    with HarnessSaver.from_conn_string("sqlite:~/graph.db") as saver:
        compiled: Any = builder.compile(checkpointer=saver)
        compiled.invoke({"messages": [("user", "hi")]}, config)

    async def go() -> list[str]:
        async with AsyncHarnessSaver.from_conn_string("sqlite:~/graph.db") as saver:
            graph: Any = builder.compile(checkpointer=saver)
            state = await graph.ainvoke({"messages": [("user", "again")]}, config)
            return [message.content for message in state["messages"]]

    assert asyncio.run(go()) == ["hi", "you said: hi", "again", "you said: again"]
    assert (home / "graph.db").exists()
    with pytest.raises(StoreSpecError), HarnessSaver.from_conn_string("nosuch:thing"):
        pass


def test_pydantic_ai_store_from_url(home: Path) -> None:
    from pydantic_ai.conversation import Conversation
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    from harness.integrations.pydantic_ai import HarnessConversationStore

    async def go() -> int:
        async with HarnessConversationStore.from_url("~/pyd") as store:
            message = ModelRequest(parts=[UserPromptPart(content="hi")])
            await store.save(Conversation(conversation_id="c", messages=[message]))
        async with HarnessConversationStore.from_url("~/pyd") as store:
            loaded = await store.load("c")
            assert loaded is not None
            return len(loaded.messages)

    assert asyncio.run(go()) == 1
    assert (home / "pyd").is_dir()
