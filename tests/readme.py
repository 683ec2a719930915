"""The README's Python snippets, for the tests that run them verbatim.

Every ```python block of README.md is claimed by exactly one test, which runs it
with :func:`run_snippet` (the block's own code, in a fresh namespace, after the
namespace of the block it continues if it says so) and then checks what a reader
would expect it to give. ``tests/test_readme.py`` fails when a block is unclaimed, so
a snippet added to the README without a test, or edited so that it no longer
matches its test's heading, is caught.

A block continues the previous one in its section when its first line is a comment
starting with ``# continues``; otherwise it must define everything it uses.
"""

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def snippets():
    """``[(section heading, code), ...]`` of every ```python block, in README order."""
    text = README.read_text()
    found = []
    for match in _BLOCK.finditer(text):
        headings = re.findall(r"^#+ (.+)$", text[: match.start()], re.M)
        found.append((headings[-1] if headings else "", match.group(1)))
    return found


def snippet(section, index=0):
    """The code of the ``index``-th ```python block under heading ``section``."""
    codes = [code for heading, code in snippets() if heading == section]
    if index >= len(codes):
        raise LookupError(f"README has {len(codes)} python block(s) under {section!r}")
    return codes[index]


def run_snippet(section, index=0, namespace=None):
    """Run a README block verbatim; returns its namespace (pass it on to a block that
    continues this one)."""
    namespace = {"__name__": "__readme__"} if namespace is None else namespace
    code = snippet(section, index)
    exec(compile(code, f"README.md[{section}][{index}]", "exec"), namespace)  # noqa: S102
    return namespace
