"""Benchmark 5 (optional): redaction throughput on a large tool result or log.

A fresh `Redactor` (the class behind `security.redact.REDACTOR`, so the process-wide one is
left alone) with a few registered secrets, over text that holds a handful of secrets and
token-shaped strings among ordinary log lines."""

from __future__ import annotations

import time
from typing import Any

from codegen_ci.security.redact import Redactor

SECRETS = ("sk-bench-registered-secret-0123456789", "hunter2-but-much-longer-than-that")
LINE = "2024-05-01 12:00:00 INFO worker[42]: processed batch 17 in 0.31s (ok) path=/srv/app\n"
TARGET_MB_PER_S = 10.0  # our own bound: a 5 MB log in half a second


def redaction(megabytes: float = 5, runs: int = 3) -> dict[str, Any]:
    redactor = Redactor()
    for secret in SECRETS:
        redactor.add_secret(secret)
    text = _text(int(megabytes * 1024 * 1024))
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        out = redactor.redact(text)
        best = min(best, time.perf_counter() - started)
    leaked = any(s in out for s in SECRETS) or "ghp_" + "A" * 36 in out
    rate = len(text) / 1024 / 1024 / best
    return {
        "text_mb": round(len(text) / 1024 / 1024, 1),
        "seconds": round(best, 3),
        "mb_per_s": round(rate, 1),
        "masked": out.count("***"),
        "leaked": leaked,
        "target": f">= {TARGET_MB_PER_S:g} MB/s, nothing leaked",
        "holds": rate >= TARGET_MB_PER_S and not leaked,
    }


def _text(size: int) -> str:
    block = LINE * 200
    salted = [
        f"token {SECRETS[0]} in a header\n",
        f"password={SECRETS[1]}&next=1\n",
        "GITHUB_TOKEN=ghp_" + "A" * 36 + "\n",
        "https://user:pa55word-x@example.com/repo.git\n",
    ]
    parts, length, n = [], 0, 0
    while length < size:
        piece = block + salted[n % len(salted)]
        parts.append(piece)
        length += len(piece)
        n += 1
    return "".join(parts)
