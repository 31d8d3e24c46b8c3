"""Test helpers: a local, scripted DeepSeek-compatible server (``FakeDeepSeek``, ``Reply``)."""

from harness.testing.fake_deepseek import CREATED, FakeDeepSeek, RecordedRequest, Reply, ScriptItem, usage

__all__ = ["CREATED", "FakeDeepSeek", "RecordedRequest", "Reply", "ScriptItem", "usage"]
