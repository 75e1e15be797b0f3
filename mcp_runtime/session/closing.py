"""The async closing methods the SDK's stream protocols ask for, for streams whose close needs no waiting."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Self


class ClosesAtOnce:
    """``aclose`` and the async context methods over a synchronous ``close``."""

    def close(self) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Any:
        self.close()
        return None
