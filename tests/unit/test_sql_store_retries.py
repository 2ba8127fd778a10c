"""Which SqlStore calls repeat on a database conflict: all of the store interface but the few that must not."""
from __future__ import annotations

from hmsproxy.store.rawstore import STORE_PARTS
from hmsproxy.store.sql import database
from hmsproxy.store.sql.store import SqlStore

NOT_RETRIED = {"get_table_bundle", "lock", "close", "kept", "serving"}


def _is_retried(name: str) -> bool:
    return getattr(getattr(SqlStore, name), "__code__", None) is database.retried(lambda self: None).__code__


def test_every_interface_call_but_the_named_ones_is_retried() -> None:
    calls = {name for part in STORE_PARTS for name, value in vars(part).items()
             if callable(value) and not name.startswith("_")}
    assert {name for name in calls if not _is_retried(name)} == NOT_RETRIED & calls
