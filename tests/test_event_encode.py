"""``Event.encode`` writes the same wire line whether or not its type's JSON is remembered."""

from __future__ import annotations

import json

from harness.events import event as event_module
from harness.events.event import Event, Replace


def _reference(event: Event) -> bytes:
    """The wire line built from the event's fields with the stdlib encoder (FORMAT's key order)."""
    text = '{"type":' + json.dumps(event.type, ensure_ascii=False, separators=(",", ":"))
    text += f',"seq":{event.seq},"time":{event.time},"data":' + event.data_json.decode()
    if event.source_event_seqs is not None:
        text += ',"sourceEventSeqs":' + json.dumps(list(event.source_event_seqs), separators=(",", ":"))
    op = event.surface_op
    if isinstance(op, Replace):
        text += f',"surfaceOp":{{"op":"replace","start":{op.start},"end":{op.end}}}'
    elif op is not None:
        text += ',"surfaceOp":"append"'
    if event.ignorable:
        text += ',"ignorable":true'
    return (text + "}").encode()


def test_encode_is_the_same_line_on_first_and_later_events_of_a_type() -> None:
    kinds = ["custom/fresh-type", 'x/"quoted"\\', "x/ünïcödé", "x/\u2028line", "assistant/message"]
    for kind in kinds:
        for seq in range(3):
            event = Event(kind, seq, 1_700_000_000_000 + seq, b'{"a":[1,"b"]}', "append", (), seq == 2)
            assert event.encode() == _reference(event)
            assert json.loads(event.encode())["type"] == kind


def test_source_event_seqs_empty_and_not() -> None:
    for seqs in ((), (0,), (3, 1, 2)):
        event = Event("assistant/message", 4, 5, b"{}", Replace(0, 3), seqs)
        assert event.encode() == _reference(event)
        assert json.loads(event.encode())["sourceEventSeqs"] == list(seqs)


def test_the_remembered_types_stay_bounded_and_lines_stay_right_beyond_the_bound() -> None:
    for index in range(event_module._TYPE_JSON_MAX + 50):
        event = Event(f"bulk/type-{index}", index, 0, b"null")
        assert event.encode() == _reference(event)
        assert event.encode() == _reference(event)  # a second time: from the cache when it holds it
    assert len(event_module._TYPE_JSON) <= event_module._TYPE_JSON_MAX


def test_a_str_subclass_type_is_encoded_by_value_and_not_remembered() -> None:
    class Kind(str):
        pass

    kind = Kind("subclass/type-only")
    event = Event(kind, 0, 0, b"1")
    assert event.encode() == b'{"type":"subclass/type-only","seq":0,"time":0,"data":1}'
    assert "subclass/type-only" not in event_module._TYPE_JSON
