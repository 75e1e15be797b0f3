"""Runtime hook: the programs the bundled daemon starts (MCP servers, a login shell, its own child watcher) get the
host's environment, not the bootloader's.

PyInstaller's bootloader puts the bundle's own folder first on LD_LIBRARY_PATH; left there, its libssl, libz or
libpython would shadow the system's in every child. Its ``_PYI_*`` variables describe this process to itself; a
child that is a PyInstaller program (the watcher is this very bundle) would take them for its own. The daemon's own
libraries are already resolved by then.
"""

import os

_original = os.environ.pop("LD_LIBRARY_PATH_ORIG", None)
if _original is None:
    os.environ.pop("LD_LIBRARY_PATH", None)
else:
    os.environ["LD_LIBRARY_PATH"] = _original
for _name in [name for name in os.environ if name.startswith("_PYI_")]:
    del os.environ[_name]
