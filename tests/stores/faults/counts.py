"""What the fault and crash tests did, printed at the end of the run (``tests/conftest.py``)."""

from __future__ import annotations

from collections import Counter

COUNTS: Counter[str] = Counter()
"""Faults injected, kills, crash states checked, server outages, by name."""
