"""No scratch files in the project: a throwaway script committed beside the code reads as part of it.

A scratch file is a JavaScript or TypeScript file whose name starts with ``_`` (``_t.mjs``), or any file named
``scratch*``, ``tmp*`` or ``*.orig`` / ``*.rej``; ``.gitignore`` keeps them out of ``git add``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRATCH = re.compile(r"(^_[^/]*\.(mjs|cjs|js|ts)$)|(^(scratch|tmp)[^/]*$)|(\.(orig|rej)$)")


def tracked_files() -> list[str]:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return listed.stdout.splitlines()


def test_no_scratch_file_is_tracked() -> None:
    scratch = [path for path in tracked_files() if SCRATCH.search(Path(path).name)]
    assert scratch == [], f"scratch files are tracked: {scratch}"


def test_the_rule_catches_what_it_names() -> None:
    names = ["_t.mjs", "_b.mjs", "_probe.ts", "scratch.py", "tmp_notes.md", "client.ts.orig"]
    assert all(SCRATCH.search(name) for name in names)
    assert not any(SCRATCH.search(name) for name in ["__init__.py", "_sdk_compat.py", "client.ts", "template.md"])
