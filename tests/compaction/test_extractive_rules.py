"""The extractive digest's phrasing rules (``harness.compaction.cues``): each class of phrasing
it was widened to keep, in several languages, with the fact placed where no verbatim head
reaches it (after a long background paragraph, or deep in a long tool output), so only the
rule can keep it; then the bounds: the digest stays small whatever the span holds, and never
copies a credential."""

from __future__ import annotations

import json

import pytest

from harness.compaction import SECTION_HEADINGS, ExtractiveSummarizer, compact_now
from harness.compaction.cues import PATH, redact
from tests.compaction.helpers import Builder, run

BACKGROUND = (
    "Some background before the actual request, because it matters for what follows and you were "
    "not in the meeting where we discussed it. The service has grown over several years, parts of it "
    "were written by people who have since moved on, and the documentation lags behind the code in "
    "places. Monitoring shows nothing alarming, but a few customers noticed odd behaviour last week. "
    "The team has rotated twice since the first release, which explains the uneven naming. "
)
assert len(BACKGROUND) > 400  # past the digest's longest request head


def sections(*prompts: str, outputs: tuple[str, ...] = ()) -> dict[str, str]:
    """The digest's sections after compacting a session of ``prompts`` (each after the
    background), with a tool call returning each of ``outputs``."""
    builder = Builder()
    for index, prompt in enumerate(prompts):
        builder.open(BACKGROUND + prompt)
        for output in outputs if index == 0 else ():
            builder.tool("run_shell", json.dumps({"command": "check"}), output)
        builder.say(f"Done with part {index + 1}.")
        builder.close()
    for index in range(3):  # bulk, so that the digest is far smaller than the span
        builder.closed_turn(f"Look at part {index}.", "Looked.", tools=2, output="lorem ipsum " * 300)
    builder.closed_turn("thanks", "ok")
    result = run(compact_now(builder.session, ExtractiveSummarizer()))
    assert result is not None
    out: dict[str, str] = {}
    for heading, following in zip(SECTION_HEADINGS, (*SECTION_HEADINGS[1:], None), strict=True):
        body = result.summary.split(heading, 1)[1]
        out[heading.removeprefix("## ")] = body.split(following, 1)[0] if following else body
    return out


@pytest.mark.parametrize(
    "sentence",
    [
        "The prod cluster is off-limits until Thursday's change window.",
        "Please hold off on editing charts/values-prod.yaml, Marta owns that one.",
        "Under no circumstances drop or truncate events_raw.",
        "It's important that the export stays under 2 GB.",
        "千万别改 vendor/libpay 目录里的代码。",
        "接口响应时间不能超过 300 毫秒。",
        "Bitte auf keinen Fall die Datei config/produktion.ini anfassen.",
        "Die Antwortzeit darf 150 ms nicht überschreiten.",
        "No toques nada en la carpeta legacy/facturacion.",
        "本番のデータベースには絶対に書き込まないでください。",
    ],
)
def test_constraints_in_other_phrasings_and_languages_are_kept_verbatim(sentence: str) -> None:
    assert sentence in sections(sentence)["Critical Context"]


@pytest.mark.parametrize(
    "sentence",
    [
        "Remember to tag the image as billing-cron:2024.11.3 before we finish.",
        "Don't forget to rotate the staging certificate.",
        "TODO(me): ping Lena about the release notes.",
        "Once that's done we still need to backfill March.",
        "最后别忘了把版本号改成 v3.8.1。",
        "记得更新 README 里的部署步骤。",
        "Denk bitte daran, vor dem Abschluss die Migration auszuführen.",
        "Antes de terminar, acuérdate de subir la versión del paquete.",
        "Queda pendiente traducir los mensajes de error.",
        "終わる前に README の手順を更新するのを忘れずに。",
    ],
)
def test_open_tasks_said_in_words_are_pending_jobs(sentence: str) -> None:
    assert f"(asked) {sentence}" in sections(sentence)["Pending Jobs"]


@pytest.mark.parametrize(
    "sentence",
    [
        "Let's go with Parquet over CSV for the new format.",
        "Go ahead with the multi-stage Dockerfile rather than the old single-stage one.",
        "我们决定用 Redis 做幂等键的存储。",
        "Wir haben beschlossen, Kafka zu verwenden.",
        "Vamos a usar claves de idempotencia en lugar de bloqueos.",
        "出力先は /srv/backup に決めました。",
    ],
)
def test_decisions_are_key_concepts(sentence: str) -> None:
    assert f"decided: {sentence}" in sections(sentence)["Key Technical Concepts"]


def test_paths_in_more_forms_are_files_and_ratios_and_urls_are_not() -> None:
    text = (
        r"Logs are in C:\build\agent\logs\run-0931.txt and the weights go to s3://ml-models/ckpt-0917/. "
        "Build with Dockerfile.multistage, then 把CHANGELOG.md里的版本改掉, back up to /srv/backup/orders "
        "and read ~/.config/app/settings.toml. READY was 0/1, see https://example.com/docs/page."
    )
    files = sections(text)["Files and Code"]
    for path in (
        r"C:\build\agent\logs\run-0931.txt",
        "s3://ml-models/ckpt-0917/",
        "Dockerfile.multistage",
        "CHANGELOG.md",
        "/srv/backup/orders",
        "~/.config/app/settings.toml",
    ):
        assert f"- {path}" in files, path
    assert "0/1" not in files and "example.com" not in files
    assert [m.group(0) for m in PATH.finditer("在scripts/nightly_backup.sh里")] == [
        "scripts/nightly_backup.sh"
    ]


def test_identifiers_and_values_are_named_exactly() -> None:
    text = (
        "Picking up OPS-7731 with flag checkout_v2_rollout on image billing-cron:2024.11.3, digest "
        "sha256:9b1f0c3e77d2a8f4, release v3.8.1, setting `cache.ttl`, budget RETRY_BUDGET; the "
        "limit was 1.37 GiB and the learning rate 3e-4 and the timeout 45 秒 for kube-sandbox-7"
    )  # no sentence cue: only the identifier rules can keep these
    named = sections(text)["Key Technical Concepts"]
    for token in (
        "OPS-7731",
        "checkout_v2_rollout",
        "billing-cron:2024.11.3",
        "sha256:9b1f0c3e77d2a8f4",
        "v3.8.1",
        "cache.ttl",
        "RETRY_BUDGET",
        "1.37 GiB",
        "3e-4",
        "45 秒",
        "kube-sandbox-7",
    ):
        assert token in named, token
    assert "off-limits" not in named  # a hyphenated word is not an identifier


def test_short_label_value_lines_of_long_tool_outputs_are_kept() -> None:
    bulk = "\n".join(f"  {n:3d}  x = compute(x, {n})" for n in range(60))
    outputs = (
        bulk + "\nrows selected: 48213\nestimated size: 1.37 GiB",
        bulk + "\nPrüfsumme: 7f3a9c2e",
        bulk + "\n验证集准确率: 91.37%",
        bulk + "\n  61  RETRY_BUDGET = 42",
    )
    current = sections("Run the checks.", outputs=outputs)["Current Work"]
    for line in (
        "rows selected: 48213",
        "estimated size: 1.37 GiB",
        "Prüfsumme: 7f3a9c2e",
        "验证集准确率: 91.37%",
    ):
        assert line in current, line
    assert "RETRY_BUDGET = 42" in current
    assert "x = compute" not in current.split("output:")[-1]  # code lines are not label: value lines


def test_error_lines_in_other_forms_and_languages_are_errors() -> None:
    bulk = "\n".join(f"line {n} ok" for n in range(80))
    lines = (
        "panic: runtime error: index out of range [5] with length 5",
        "billing-cron-5f7d9c8b6-x2k4q   0/1   ImagePullBackOff   0   3m",
        "Fehler: Verbindung zur Datenbank fehlgeschlagen (Port 5433)",
        "错误：权限不足，需要 Op 角色",
        "エラー: 権限がありません: /var/lib/app/cache",
        "RuntimeError: CUDA out of memory. Tried to allocate 2.50 GiB",
    )
    errors = sections("Run the checks.", outputs=tuple(f"{bulk}\n{line}" for line in lines))[
        "Errors and Fixes"
    ]
    for line in lines:
        assert " ".join(line.split()) in errors, line


def test_the_digest_stays_bounded_whatever_the_span_holds() -> None:
    cues = (
        "You must never touch dir_{n}/. Remember to file OPS-{n} before we finish. "
        "Let's go with option_{n} rather than the other. 千万别改 模块{n}。Denk daran, Schritt {n} zu tun. "
    )
    builder = Builder()
    for n in range(150):
        builder.open(cues.format(n=n) * 6)
        builder.tool(
            "run_shell",
            json.dumps({"command": f"run {n}"}),
            "\n".join(
                f"metric_{n}_{k}: {k}.5 ms\nError: failure {n}.{k} in src/m{n}/f{k}.py" for k in range(30)
            ),
            is_error=n % 3 == 0,
        )
        builder.say(f"Reply {n}: decided to keep path src/r{n}/x.py " * 20)
        builder.close()
    builder.closed_turn("thanks", "ok")
    session = builder.session
    tight = run(compact_now(session, ExtractiveSummarizer(budget_ratio=0.001)))  # forces the last level
    assert tight is not None
    assert len(tight.summary) < 16_000  # the last level's caps, whatever the span
    assert tight.summary.count("(asked)") <= 6 and tight.summary.count("decided:") <= 6


def test_the_digest_fits_half_the_span_on_a_big_session() -> None:
    builder = Builder()
    for n in range(60):
        builder.open(
            f"Step {n}: you must keep api_{n} stable. Remember to log OPS-{n} before we finish. " * 3
        )
        builder.tool("read_file", json.dumps({"path": f"src/m{n}.py"}), f"value_{n}: {n}\n" + "code\n" * 400)
        builder.say(f"Read src/m{n}.py.")
        builder.close()
    builder.closed_turn("thanks", "ok")
    result = run(compact_now(builder.session, ExtractiveSummarizer()))
    assert result is not None and result.checkpoint_tokens <= 0.5 * result.shadowed_tokens


SECRETS = (
    "sk-live1234567890abcdefghij",
    "AKIAABCDEFGHIJKLMNOP",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "hunter2-is-my-password",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijk",
    "s3cr3tpass",
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
)


def test_the_digest_never_copies_a_credential() -> None:
    prompt = (
        f"Never paste the key {SECRETS[0]} anywhere. Remember to rotate {SECRETS[1]} before we finish. "
        f"Let's go with the token {SECRETS[2]} instead of the old one. "
        f"The admin `password={SECRETS[3]}` must stay out of git."
    )
    output = (
        "\n".join(f"  {n} ok" for n in range(50))
        + f"\nAuthorization: Bearer {SECRETS[4]}\nDATABASE_URL = postgres://app:{SECRETS[5]}@db/prod\n"
        + f"-----BEGIN RSA PRIVATE KEY-----\n{SECRETS[6]}\n-----END RSA PRIVATE KEY-----\n"
        + f"Error: api_key={SECRETS[0]}"
    )
    parts = sections(prompt, outputs=(output,))
    digest = "".join(parts.values())
    for secret in SECRETS:
        assert secret not in digest, secret
        assert secret[:12] not in digest, secret  # not even the head a cut would leave
    assert "[redacted]" in digest
    assert "Never paste the key [redacted] anywhere." in parts["Critical Context"]  # the rule stays
    assert "postgres://app:[redacted]@db/prod" in digest


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key sk-abcdefghijklmnopqrstuv end", "key [redacted] end"),
        ("password=hunter2 next", "password=[redacted] next"),
        ('"api_key": "zzz"', '"api_key": [redacted]'),
        ("mysql://bob:pa:ss@db/x", "mysql://bob:[redacted]@db/x"),
        ("the max_tokens: 8192 setting", "the max_tokens: 8192 setting"),
        ("plain text with no secret", "plain text with no secret"),
    ],
)
def test_redact(text: str, expected: str) -> None:
    assert redact(text) == expected
