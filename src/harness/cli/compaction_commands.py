"""The compaction commands: ``compact`` (manual, between turns) and ``eval-compaction``.

A manual compaction uses the model (``LlmSummarizer``) when a key is configured and falls
back to the offline ``ExtractiveSummarizer`` when asked to (``--summarizer extractive``) or
when the model call fails and the user accepts the offer (``--fallback`` accepts it ahead).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from harness.cli.agent_commands import DEFAULT_MODEL
from harness.cli.app import _errors, _fail, _options, _store_option, app
from harness.cli.retention_tables import retention_tables
from harness.compaction import (
    CompactionResult,
    ExtractiveSummarizer,
    LlmSummarizer,
    Probe,
    Summarizer,
    compact_now,
    eval_compaction_report,
)
from harness.compaction.fallback import FallbackSummarizer
from harness.compaction.probes import PROBE_KINDS
from harness.compaction.probesets import BUILTIN_PROBESETS, ProbeSet, builtin_probeset, load_probeset_file
from harness.errors import CompactionError
from harness.present.summary import plural
from harness.session.session import Session
from harness.stores.store import SessionStore

__all__ = ["FallbackSummarizer"]


def _model_summarizer(model: str | None) -> tuple[Summarizer, Any] | None:
    if not os.environ.get("DEEPSEEK_API_KEY"):
        return None
    from harness.providers.deepseek import DeepSeekProvider

    provider = DeepSeekProvider()
    return LlmSummarizer(provider, model=model or DEFAULT_MODEL), provider


def _describe(result: CompactionResult | None) -> str:
    if result is None:
        return "nothing to compact: the Surface has no closed span before its tail"
    return (
        f"compacted: {plural(len(result.shadowed_seqs), 'Surface node')} (seqs {result.shadowed_start}…"
        f"{result.shadowed_end}) replaced by the checkpoint at seq {result.checkpoint_seq}"
    )


@app.command()
def compact(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="ID"),
    summarizer: str = typer.Option(
        "auto",
        "--summarizer",
        metavar="KIND",
        help="auto (the model when a key is set, else extractive), llm, extractive.",
    ),
    model: str | None = typer.Option(
        None, "--model", envvar="HARNESS_MODEL", metavar="ID", help="Summary model id."
    ),
    fallback: bool = typer.Option(
        False, "--fallback", help="If the model summary fails, use the extractive one without asking."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    store: str | None = _store_option(),
) -> None:
    """Compact a stored session now (between turns); the log keeps every event.

    One checkpoint message replaces the head of its Surface."""
    if summarizer not in ("auto", "llm", "extractive"):
        _fail(f"--summarizer must be auto, llm or extractive, not {summarizer!r}", 2)
    console = Console(stderr=as_json)

    async def main() -> tuple[Session, CompactionResult | None, str]:
        store = SessionStore(_options(ctx).backend())
        try:
            session = await store.load(session_id)
            chosen: Summarizer = ExtractiveSummarizer()
            used = "extractive"
            model_side = None if summarizer == "extractive" else _model_summarizer(model)
            if summarizer == "llm" and model_side is None:
                raise CompactionError("--summarizer llm needs DEEPSEEK_API_KEY", code="config")
            if model_side is not None:
                chosen, used = model_side[0], "llm"
            try:
                try:
                    result = await compact_now(session, chosen, checkpoint=store.flush)
                except CompactionError as error:
                    if used != "llm" or error.code != "summary":
                        raise
                    console.print(f"[yellow]the model summary failed: {escape(str(error))}[/]")
                    if not (fallback or await _accept_fallback(console)):
                        raise
                    used = "extractive"
                    result = await compact_now(session, ExtractiveSummarizer(), checkpoint=store.flush)
            finally:
                if model_side is not None:
                    await model_side[1].aclose()
            return session, result, used
        finally:
            await store.close()

    with _errors():
        session, result, used = asyncio.run(main())
    if as_json:
        data = {
            "session": session.id,
            "summarizer": used,
            "compacted": result is not None,
            "replaceGeneration": session.surface.replace_generation,
            "messages": len(session.derive_messages()),
        }
        sys.stdout.write(json.dumps(data) + "\n")
    else:
        console.print(f"{_describe(result)} [dim](summarizer: {used})[/]", highlight=False)


async def _accept_fallback(console: Console) -> bool:
    if not sys.stdin.isatty():
        console.print("[dim]pass --fallback to use the offline extractive summary instead[/]")
        return False
    from harness.cli.terminal import confirm

    return await confirm(console, "Use the offline extractive summary instead?", default=True)


_PROBE_HELP = f"KIND:TEXT to keep within reach in stored sessions ({', '.join(PROBE_KINDS)})."


@app.command("eval-compaction")
def eval_compaction(
    ctx: typer.Context,
    session_ids: list[str] = typer.Argument(None, metavar="[ID]...", help="Stored sessions to evaluate."),
    probes: list[str] = typer.Option([], "--probe", metavar="KIND:TEXT", help=_PROBE_HELP),
    probe_sets: str | None = typer.Option(
        None,
        "--probes",
        metavar="SET",
        help="Probe sets (without IDs): tuned, independent, all (the default), or a probe-set JSON file.",
    ),
    generated: int = typer.Option(
        6, "--generated", min=0, metavar="N", help="Sessions of the tuned set (generated)."
    ),
    seed: int = typer.Option(0, "--seed", metavar="N", help="Seed of the generated sessions."),
    with_llm: bool = typer.Option(False, "--llm", help="Also evaluate the model summarizer (needs a key)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Report whether compaction keeps each probed fact in view, recoverable, or lost.

    Per probe: kept in the Surface, recoverable through the session_search tool from the log,
    or lost. Without IDs, the built-in probe sets (each scored apart); with IDs, your --probe
    facts."""
    parsed = [_probe(index, text) for index, text in enumerate(probes)]
    if session_ids and not parsed:
        _fail("give at least one --probe KIND:TEXT for stored sessions", 2)
    if session_ids and probe_sets is not None:
        _fail("--probes picks built-in probe sets, which bring their own sessions: give no IDs with it", 2)
    if parsed and not session_ids:
        _fail("--probe needs the IDs of stored sessions to look in", 2)

    async def main() -> Any:
        cases = None
        sets = None
        if session_ids:
            store = SessionStore(_options(ctx).backend(reading=True))
            try:
                cases = [(await store.inspect(sid), parsed) for sid in session_ids]
            finally:
                await store.close()
        else:
            sets = _probe_sets(probe_sets or "all", generated=generated, seed=seed)
        summarizers: dict[str, Summarizer] = {"extractive": ExtractiveSummarizer()}
        model_side = _model_summarizer(None) if with_llm else None
        if with_llm and model_side is None:
            raise CompactionError("--llm needs DEEPSEEK_API_KEY", code="config")
        if model_side is not None:
            summarizers["llm"] = model_side[0]
        try:
            return await eval_compaction_report(cases, probesets=sets, summarizers=summarizers)
        finally:
            if model_side is not None:
                await model_side[1].aclose()

    with _errors():
        report = asyncio.run(main())
    if as_json:
        sys.stdout.write(json.dumps(report.data, ensure_ascii=False, indent=2) + "\n")
    else:
        Console().print(retention_tables(report.data))


def _probe_sets(choice: str, *, generated: int, seed: int) -> list[ProbeSet]:
    if choice == "all":
        return [builtin_probeset(name, generated=generated, seed=seed) for name in BUILTIN_PROBESETS]
    if choice in BUILTIN_PROBESETS:
        return [builtin_probeset(choice, generated=generated, seed=seed)]
    if choice.endswith(".json"):
        return [load_probeset_file(choice, seed=seed)]
    _fail(f"--probes must be tuned, independent, all or a .json probe-set file, not {choice!r}", 2)


def _probe(index: int, text: str) -> Probe:
    kind, _, pattern = text.partition(":")
    if kind not in PROBE_KINDS or not pattern:
        _fail(f"--probe must be KIND:TEXT with KIND one of {', '.join(PROBE_KINDS)}, not {text!r}", 2)
    return Probe(name=f"probe-{index + 1}", kind=kind, pattern=pattern)
