"""Back/forward history of places visited (computation, instruction), like a browser's."""

from __future__ import annotations

Place = tuple[str, str | None]


class History:
    """``visit`` records a place and drops the forward list; ``back``/``forward`` move along it."""

    def __init__(self, limit: int = 200) -> None:
        self._items: list[Place] = []
        self._at = -1
        self._limit = limit

    @property
    def current(self) -> Place | None:
        return self._items[self._at] if self._at >= 0 else None

    def visit(self, place: Place) -> None:
        if self.current == place:
            return
        del self._items[self._at + 1:]
        self._items.append(place)
        if len(self._items) > self._limit:
            del self._items[0]
        self._at = len(self._items) - 1

    def back(self) -> Place | None:
        if self._at <= 0:
            return None
        self._at -= 1
        return self._items[self._at]

    def forward(self) -> Place | None:
        if self._at >= len(self._items) - 1:
            return None
        self._at += 1
        return self._items[self._at]
