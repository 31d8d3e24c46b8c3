"""Test helpers: a local, scripted DeepSeek-compatible server (``FakeDeepSeek``, ``Reply``) and an
in-process scripted provider (``ScriptedProvider``, with ``text_reply``/``calls_reply``/
``error_reply`` and ``EchoTool``). The store contract suite is ``harness.testing.contract``."""

from harness.testing.fake_deepseek import CREATED, FakeDeepSeek, RecordedRequest, Reply, ScriptItem, usage
from harness.testing.scripted import EchoTool, ScriptedProvider, calls_reply, error_reply, text_reply

__all__ = [
    "CREATED",
    "EchoTool",
    "FakeDeepSeek",
    "RecordedRequest",
    "Reply",
    "ScriptItem",
    "ScriptedProvider",
    "calls_reply",
    "error_reply",
    "text_reply",
    "usage",
]
