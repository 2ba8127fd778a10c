"""The wake addresses of the instances on one database (ops/peer_wake.py), as rows of Hive's AUX_TABLE.

AUX_TABLE is in every schema hmsproxy serves (Hive 2.3, 3.1, 4.0 and its own), so no table is added to a Hive
database. Hive uses it for its mutexes, rows keyed (name, 0); an instance's row here is keyed (KEY, a random
positive id of the instance), and its comment holds `address seen`, `seen` the Unix time of its last renewal. An
instance renews its row every few seconds and deletes it when it stops; rows not renewed for STALE_S are not
peers (an instance that was killed), and are deleted after FORGOTTEN_S.
"""
from __future__ import annotations

import random
import time

from sqlalchemy import delete, insert, select, update

from hmsproxy.store.sql.database import Database
from hmsproxy.store.sql.hive_only_tables import AUX_TABLE

KEY = "hmsproxy.wake"
STALE_S = 60            # several renewals missed, with room for clocks that differ between machines
FORGOTTEN_S = 3600


class WakePeers:
    """ops/peer_wake.PeerDirectory over a database's AUX_TABLE."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._id = random.randrange(1, 1 << 62)
        self._row = (AUX_TABLE.c.MT_KEY1 == KEY) & (AUX_TABLE.c.MT_KEY2 == self._id)

    def register(self, address: str) -> None:
        comment = f"{address} {int(time.time())}"
        with self._db.transaction(write=True) as conn:
            if conn.execute(update(AUX_TABLE).where(self._row).values(MT_COMMENT=comment)).rowcount == 0:
                conn.execute(insert(AUX_TABLE).values(MT_KEY1=KEY, MT_KEY2=self._id, MT_COMMENT=comment))

    def peers(self, address: str) -> list[str]:
        """The other instances' addresses renewed lately; forgets those gone for long."""
        with self._db.transaction() as conn:
            rows = conn.execute(select(AUX_TABLE.c.MT_KEY2, AUX_TABLE.c.MT_COMMENT)
                                .where(AUX_TABLE.c.MT_KEY1 == KEY)).all()
        now = time.time()
        found, forgotten = [], []
        for key, comment in rows:
            peer, _, seen = (comment or "").rpartition(" ")
            age = now - int(seen) if seen.isdigit() else FORGOTTEN_S
            if age >= FORGOTTEN_S:
                forgotten.append(key)
            elif age < STALE_S and key != self._id and peer != address:
                found.append(peer)
        if forgotten:
            with self._db.transaction(write=True) as conn:
                conn.execute(delete(AUX_TABLE).where(AUX_TABLE.c.MT_KEY1 == KEY, AUX_TABLE.c.MT_KEY2.in_(forgotten)))
        return found

    def leave(self, address: str) -> None:
        with self._db.transaction(write=True) as conn:
            conn.execute(delete(AUX_TABLE).where(self._row))
