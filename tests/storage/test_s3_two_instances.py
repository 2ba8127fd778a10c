"""Two hmsproxy processes on one database with the warehouse on S3: a table created through one and renamed and
dropped through the other has its objects moved and deleted exactly once, nothing left behind, nothing lost."""
from __future__ import annotations

import pytest
from hmsclient.genthrift.hive_metastore import ttypes as T

from support.builders import connect_hive, database, table, unique
from support.databases import BACKENDS
from support.instances import instances_on_one_database
from support.polling import wait_for
from support.s3_metastore import REQUESTS, s3a_site
from support.scrape import metric


def _sees(client, db: str, name: str) -> bool:
    try:
        client.get_table(db, name)
    except T.NoSuchObjectException:
        return False
    return True


@pytest.mark.parametrize("backend", BACKENDS)
def test_objects_are_moved_and_deleted_once_through_two_instances(s3, backend, tmp_path) -> None:
    bucket = s3.new_bucket()
    site = s3a_site(tmp_path / "hive-site.xml", s3)
    with instances_on_one_database(backend, tmp_path, 2, "--warehouse", f"s3a://{bucket}/warehouse",
                                   "--hive-site", str(site)) as (_, servers):
        a, b = (connect_hive(server) for server in servers)

        def copies() -> float:
            return sum(metric(s, REQUESTS, store="s3", operation="copy_object", outcome="ok") for s in servers)

        db = unique("db")
        a.create_database(database(T, db))
        names = [f"part-{i}" for i in range(5)]
        for name in names:
            s3.put(bucket, f"warehouse/{db}.db/t1/{name}")
        s3.put(bucket, f"warehouse/{db}.db/t10/keep")
        a.create_table(table(T, db, "t1"))
        wait_for(lambda: _sees(b, db, "t1"), "the second instance sees the table")
        renamed = b.get_table(db, "t1")
        renamed.tableName = "t2"
        copied = copies()
        b.alter_table(db, "t1", renamed)
        assert copies() - copied == len(names)
        assert s3.keys(bucket) == sorted([f"warehouse/{db}.db/t10/keep",
                                          *(f"warehouse/{db}.db/t2/{name}" for name in names)])
        wait_for(lambda: _sees(a, db, "t2") and not _sees(a, db, "t1"), "the first instance sees the rename")
        assert a.get_table(db, "t2").sd.location == f"s3a://{bucket}/warehouse/{db}.db/t2"
        a.drop_table(db, "t2", True)
        assert s3.keys(bucket) == [f"warehouse/{db}.db/t10/keep"]
        wait_for(lambda: not _sees(b, db, "t2"), "the second instance sees the drop")
        with pytest.raises(T.NoSuchObjectException):
            b.drop_table(db, "t2", True)
        assert s3.keys(bucket) == [f"warehouse/{db}.db/t10/keep"]
        a.close()
        b.close()
