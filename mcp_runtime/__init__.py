"""The MCP side of the daemon, and the only door ``app_server`` uses into it.

Its public names are listed once, in ``__init__.pyi``, and load on first use: answering ``initialize`` must not
import the MCP SDK. Everything else (the subpackages) is internal.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
