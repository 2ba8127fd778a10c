"""API-test fixtures: a fresh database per test on the module's server, dropped with its data afterwards."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from hmsproxy.idl import hms
from support.builders import database, unique


@pytest.fixture
def db(client) -> Iterator[str]:
    """The name of a new, empty database (default location under the warehouse)."""
    name = unique()
    client.create_database(database(hms, name))
    yield name
    try:
        client.drop_database(name, True, True)
    except hms.NoSuchObjectException:
        pass
