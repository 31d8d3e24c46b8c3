"""The phrasing rules of the extractive digest: which sentences, lines and tokens to copy.

Each rule is a fixed regular expression (no model, no locale data), with cue words in
English, Chinese, German, Spanish and Japanese:

* ``CONSTRAINT``: a rule the user set (must, never, off-limits, hold off, under no
  circumstances, 不要, 千万别, 不能超过, auf keinen Fall, darf nicht, no toques, 絶対に…ないで);
* ``TASK``: work the user left open in words rather than in a todo list (remember to,
  don't forget, before we finish, TODO, still need to, 记得, 别忘了, denk daran, acuérdate,
  queda pendiente, 忘れずに);
* ``DECISION``: a choice that was made (let's go with, we decided, instead of, rather than,
  决定, 改用, beschlossen, statt, vamos a usar, en lugar de, 決めました);
* ``ERROR_LINE``: a line of tool output that reports a failure (Error, panic, BackOff, out of
  memory, not ok, Fehler, 错误, 失败, エラー, 権限がありません);
* ``SALIENT_LINE``: a short ``label: value`` or ``NAME = value`` line of tool output (a
  measurement, a digest, a setting, a count);
* ``IDENTIFIER`` / ``QUANTITY``: tokens worth keeping exactly (backticked spans, ticket ids,
  versions, hashes, snake_case or digit-bearing names, UPPER_CASE constants; numbers with
  units);
* ``PATH``: file paths (POSIX, Windows, ``~``, storage URIs such as ``s3://``, well-known
  file names);
* ``SECRET``: credentials that must never be copied (API keys, tokens, private keys,
  ``password=`` assignments): the digest replaces them with ``[redacted]``.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "CONSTRAINT",
    "DECISION",
    "ERROR_LINE",
    "IDENTIFIER",
    "PATH",
    "QUANTITY",
    "SALIENT_LINE",
    "SECRET",
    "SENTENCE",
    "TASK",
    "redact",
]

# A word boundary for the Latin-script cues only (CJK text has no spaces between words).
_B = r"\b"

CONSTRAINT: Final = re.compile(
    # English
    rf"{_B}(?:must|mustn't|never|always|do not|don't|does not|doesn't|should|shouldn't|only|avoid|keep|"
    r"make sure|required?|requirement|prefer|forbidden|not allowed|without|at most|at least|"
    r"no more than|off[- ]limits|hold off|under no circumstances|in no case|it'?s important|"
    r"it is important|important:|refrain|cannot|can't|may not|not to|leave \S+ alone|untouched|"
    r"frozen|freeze|stay(?:s)? (?:under|below|within|above)|not exceed|exceed|limit(?:ed)? to|"
    rf"maximum|minimum|no changes?|nothing under|owns|strictly){_B}"
    # Chinese
    r"|不要|别(?:改|动|碰|删|用)|千万|务必|必须|不能|不得|禁止|只能|只用|不超过|不可以|不许|不准|固定|"
    r"一定要|保持|上限|最多|至少|注意[：:]"
    # German
    rf"|{_B}(?:nicht|kein(?:e|en)?|keinesfalls|auf keinen fall|darf|dürfen|muss|müssen|nur|niemals|"
    rf"höchstens|mindestens|maximal|immer|verboten|unverändert){_B}"
    # Spanish
    rf"|{_B}(?:no toques|no modifiques|no cambies|no borres|nunca|jamás|debe|deben|tiene que|"
    rf"tienen que|sólo|solamente|límite|limita|como máximo|como mínimo|evita|evitar|prohibido){_B}"
    # Japanese
    r"|ないでください|ないこと|絶対|必ず|禁止|以内|以下に|してはいけ|ないように|上限|最大|最低",
    re.IGNORECASE,
)

TASK: Final = re.compile(
    rf"{_B}(?:remember to|don'?t forget|do not forget|don'?t let me forget|before we (?:finish|wrap up|"
    r"are done|close|ship|merge|release|leave)|before (?:finishing|merging|shipping|you finish)|"
    r"at the end|once (?:that'?s|this is|it'?s|that is) done|afterwards|later on|still (?:need|have) to|"
    r"we(?:'ll| will)? need to|to-?do|follow[- ]up|left to do|remaining|next step|make sure to|"
    rf"at some point|tomorrow|remind me|ping){_B}"
    r"|\bTODO\b"
    r"|记得|别忘|不要忘|最后|之后再|还需要|还要|待办|回头|稍后|以后再|明天|下一步|结束前|结束之前|完成后"
    rf"|{_B}(?:denk(?:e|t)? (?:bitte )?daran|vergiss nicht|nicht vergessen|vor dem abschluss|"
    rf"zum schluss|danach|später|müssen noch|anschließend|als nächstes|morgen|erinnere){_B}"
    rf"|{_B}(?:acuérdate|recuerda|no olvides|no te olvides|antes de terminar|al final|después|luego|"
    rf"queda pendiente|pendiente|falta|hay que|tenemos que|mañana|más tarde){_B}"
    r"|忘れずに|忘れないで|後で|あとで|終わる前に|最後に|その後|次に|明日|必要があります|しておいて",
    re.IGNORECASE,
)

DECISION: Final = re.compile(
    rf"{_B}(?:let'?s (?:go with|use|keep|switch|stick)|go with|we(?:'ll| will) (?:use|go|stick|keep|"
    r"cache|switch|move|take)|we(?: have)? decided|decided|decision|we agreed|agreed|instead of|"
    rf"rather than|that'?s the plan|the plan is|settled on|stick with|switch(?:ed)? to|opt(?:ed)? for){_B}"
    r"|决定|采用|改用|不用.{0,12}了|就用|选用|定了|方案"
    rf"|{_B}(?:beschlossen|entschieden|wir nehmen|nehmen wir|statt|stattdessen|bleiben beim?|"
    rf"wir verwenden|setzen auf){_B}"
    rf"|{_B}(?:vamos a usar|vamos con|decidimos|hemos decidido|en lugar de|en vez de|usaremos|optamos){_B}"
    r"|決めました|決定|にしましょう|ことにしました|を使います|採用",
    re.IGNORECASE,
)

SENTENCE: Final = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")

ERROR_LINE: Final = re.compile(
    r"Traceback|Error\b|Error:|error:|\berror\b|ERROR|FAILED|FAIL:|\bFAIL\b|Exception|"
    r"exit (?:status|code) [1-9]|No such file|not found|denied|refused|\bpanic\b|\bfatal\b|"
    r"BackOff|OOMKilled|out of memory|timed out|segmentation fault|^not ok\b|\bfailed\b|"
    r"Fehler|fehlgeschlagen|错误|失败|报错|异常|エラー|失敗|権限がありません|falló|\bfallo\b",
    re.IGNORECASE | re.MULTILINE,
)

SALIENT_LINE: Final = re.compile(
    r"^\s*(?:[^\W\d][\w .()/-]{0,40}?|[^\x00-\x7f][^\n:：=]{0,20}?)\s*[:：]\s+\S.{0,160}$"
    r"|^\s*(?:\d+\s+)?[A-Z][A-Z0-9_]{2,}\s*[:=]\s*\S.{0,120}$",
    re.MULTILINE,
)

_HEX: Final = r"(?:sha\d+:)?(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}"
IDENTIFIER: Final = re.compile(
    r"`([^`\n]{2,80})`"  # a backticked span: group 1
    r"|\b[A-Z][A-Z0-9]{1,9}-\d{1,6}\b"  # a ticket id
    r"|\bv?\d+\.\d+(?:\.\d+)+(?:[-+][\w.]+)?\b"  # a version
    rf"|\b{_HEX}\b"  # a hash or a digest
    r"|\b[A-Za-z][\w.-]*:\d[\w.-]*\b"  # an image tag (name:2024.11.3)
    r"|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b"  # an UPPER_CASE constant
    r"|\b(?=[\w-]*[_\d])[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)+\b"  # snake_case / kebab-7
)

QUANTITY: Final = re.compile(
    r"(?<![\w.])\d+(?:[.,]\d+)?(?:e-?\d+)?\s?(?:ms|s|sec|seconds?|minutes?|min|hours?|h|days?|GB|GiB|MB|"
    r"MiB|KB|KiB|TB|%|rps|qps|req/s|毫秒|秒|分钟|小时|天|件|条|个|次|步|Stellen|Sekunden|Minuten|"
    r"peticiones por segundo|segundos|minutos)(?![A-Za-z])"
    r"|(?<![\w.])\d+(?:\.\d+)?e-\d+\b"
)

# Path characters: word characters except CJK ideographs, kana and hangul (CJK text runs into
# Latin names without spaces, so a CJK character ends a path).
_P: Final = r"[^\W\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]"
PATH: Final = re.compile(
    rf"(?<!{_P})(?<![@:/.~-])(?:~|\.{{1,2}})?/?(?:(?:{_P}|[.-])+/)+(?:{_P}|[.-])*{_P}"
    rf"|(?<!{_P})(?<![/.-])(?:{_P}|-)+\.(?:py|pyi|ts|tsx|js|jsx|md|json|jsonl|toml|yaml|yml|txt|cfg|ini|"
    r"rs|go|java|c|h|cpp|hpp|sh|sql|html|css|lock|zst|zstd|csv|parquet|log|conf|env|xml|proto|tf|bats|rb|"
    rf"kt|swift)(?!{_P})"
    r"|\b[A-Za-z]:\\(?:[^\\\s\"'<>|*?]+\\)*[^\\\s\"'<>|*?]+"
    r"|\b(?:s3|gs|az|abfs|hdfs|file)://[^\s\"'<>]+"
    rf"|(?<!{_P})(?<![/.-])(?:Makefile|Dockerfile|Containerfile|Jenkinsfile|Procfile|Gemfile|README|"
    rf"CHANGELOG|LICENSE)(?:\.[\w-]+)?(?!{_P})"
)

SECRET: Final = re.compile(
    r"\bsk-[A-Za-z0-9_-]{16,}"
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bxox[abpors]-[A-Za-z0-9-]{10,}"
    r"|\bglpat-[A-Za-z0-9_-]{16,}"
    r"|\bAIza[0-9A-Za-z_-]{30,}"
    r"|\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,}"  # a JWT
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
    r"|\b[Bb]earer\s+[A-Za-z0-9._~+/=-]{12,}"
    r"|(?i:\b[\w.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|credentials?)\b"
    r"[\"']?\s*[:=]\s*)(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s,;]+)"
    r"|(?i:\b(?:postgres(?:ql)?|mysql|mongodb(?:\+srv)?|redis|amqp)://[^:/\s]+:)[^@\s]+(?=@)"
)

REDACTED: Final = "[redacted]"


def redact(text: str) -> str:
    """``text`` with every credential ``SECRET`` finds replaced by ``[redacted]`` (an
    assignment keeps its name: ``password=[redacted]``)."""
    return SECRET.sub(_mask, text)


def _mask(match: re.Match[str]) -> str:
    found = match.group(0)
    head = _ASSIGNED.match(found)
    if head is not None:
        return head.group(0) + REDACTED
    if "://" in found:
        colon = found.index(":", found.index("://") + 3)
        return found[: colon + 1] + REDACTED
    return REDACTED


_ASSIGNED: Final = re.compile(
    r"(?i)[\w.\"'-]*?(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|credentials?)"
    r"[\"']?\s*[:=]\s*"
)
