"""Runtime hook: the programs the bundled daemon starts (MCP servers, a login shell) get the host's library path.

PyInstaller's bootloader puts the bundle's own folder first on LD_LIBRARY_PATH; left there, its libssl, libz or
libpython would shadow the system's in every child. The daemon's own libraries are already resolved by then.
"""

import os

_original = os.environ.pop("LD_LIBRARY_PATH_ORIG", None)
if _original is None:
    os.environ.pop("LD_LIBRARY_PATH", None)
else:
    os.environ["LD_LIBRARY_PATH"] = _original
