"""The REST catalog's paging of listings: the page token is the last name of the page before (names are listed
sorted), so a page stays right when names are added or dropped between requests."""
from __future__ import annotations

from hmsproxy.iceberg.errors import BadRequest

MAX_PAGE_SIZE = 10_000


def page(names: list[str], token: str | None, size: int | None) -> tuple[list[str], str | None]:
    """The names after `token`, at most `size` of them, and the next page's token (None: no more)."""
    if size is not None and not 0 < size <= MAX_PAGE_SIZE:
        raise BadRequest(f"pageSize: expected 1 to {MAX_PAGE_SIZE}, got {size}")
    if token:
        names = [name for name in names if name > token]
    if size is None or len(names) <= size:
        return names, None
    return names[:size], names[size - 1]
