"""An add of partitions with if_not_exists that collides with another writer's add of some of them, not yet
committed when this one checked which exist: once that one commits, this add skips what it added, adds the rest
and announces only those (Spark jobs writing the same partitions at once must not fail on it)."""
import json
from pathlib import Path

import pytest
from sqlalchemy import insert

from hmsproxy.events.journal import Journal
from hmsproxy.store.sql import schema as s
from support.lock_waits import run_while_locked
from support.sql_stores import add_table_t, fresh_store, partition_k, sd_at


# SQLite has one writer at a time: there an add never meets another's uncommitted rows.
@pytest.mark.parametrize("backend", ["mariadb", "postgres"])
def test_an_add_if_not_exists_meeting_an_uncommitted_add_skips_what_that_one_added(backend, tmp_path: Path):
    with fresh_store(backend, tmp_path) as store:
        add_table_t(store, f"file:{tmp_path}", sd_at("file:/w/d.db/t"))
        tbl_id = store.get_table("hive", "d", "t").id
        journal = Journal()
        with store.db.engine.connect() as other:
            other.execute(insert(s.PARTITIONS).values(PART_ID=10 ** 6, TBL_ID=tbl_id, PART_NAME="k=1", CREATE_TIME=1,
                                                      LAST_ACCESS_TIME=0))
            partitions = [partition_k(v, f"file:/w/d.db/t/k={v}") for v in ("0", "1", "2")]
            added = run_while_locked(backend, other, lambda: store.add_partitions(
                "hive", "d", "t", partitions, if_not_exists=True, journal=journal))
        assert not isinstance(added, Exception), added
        assert [p.values[0] for p in added] == ["0", "2"]
        assert [(e.event_type, [kv["k"] for kv in json.loads(e.message)["partitions"]]) for e in journal.events] \
            == [("ADD_PARTITION", ["0", "2"])]
        assert len(journal.event_ids) == 1
        assert sorted(store.get_partition_names("hive", "d", "t")) == ["k=0", "k=1", "k=2"]
