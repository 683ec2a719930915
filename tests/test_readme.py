"""The README's snippets stay true: every ```python block is run by a test.

This module checks the claim (each block is named by a ``run_snippet`` call in some
test module) and runs the blocks no other module owns: the quick start and the
analysis block that continues it."""

import re
from collections import Counter
from pathlib import Path

from readme import snippets

TESTS = Path(__file__).resolve().parent
_CLAIM = re.compile(r"run_snippet\(\s*\"([^\"]+)\"(?:\s*,\s*(\d+))?")


def claimed():
    """``Counter`` of (heading, index) claimed by ``run_snippet("heading"[, index])``
    calls in the test modules."""
    found = Counter()
    for path in TESTS.glob("test_*.py"):
        for heading, index in _CLAIM.findall(path.read_text()):
            found[(heading, int(index or 0))] += 1
    return found


def test_every_readme_snippet_is_run_by_a_test():
    seen = Counter()
    blocks = []
    for heading, _ in snippets():
        blocks.append((heading, seen[heading]))
        seen[heading] += 1
    claims = claimed()
    unclaimed = [block for block in blocks if block not in claims]
    assert not unclaimed, f"README python blocks no test runs: {unclaimed}"
    stale = [claim for claim in claims if claim not in blocks]
    assert not stale, f"tests run README blocks that are gone: {stale}"
