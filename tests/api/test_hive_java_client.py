"""Hive's own Java client (the HiveMetaStoreClient in PySpark's jars, run with jshell) against hmsproxy, for the
paths where what the client does next depends on how the metastore refuses."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pyspark
from hmsclient import hmsclient
from hmsclient.genthrift.hive_metastore import ttypes as A

from support.hmsproxy_server import start_hmsproxy
from support.required import installed

# Asks for partitions by expression (any bytes: the server must not get as far as reading them), prints what
# the client made of the answer, then lists the partition names, which a pruner falls back to.
PRUNING = r"""
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.metastore.HiveMetaStoreClient;
import org.apache.hadoop.hive.metastore.IMetaStoreClient;
HiveConf conf = new HiveConf();
conf.setVar(HiveConf.ConfVars.METASTOREURIS, "thrift://127.0.0.1:PORT");
HiveMetaStoreClient client = new HiveMetaStoreClient(conf);
try {
  client.listPartitionsByExpr("DB", "t", new byte[] {1, 2, 3}, null, (short) -1, new java.util.ArrayList<>());
  System.out.println("ANSWER served");
} catch (IMetaStoreClient.IncompatibleMetastoreException e) {
  System.out.println("ANSWER falls back");
} catch (Exception e) {
  System.out.println("ANSWER failed: " + e);
}
System.out.println("NAMES " + client.listPartitionNames("DB", "t", (short) -1));
client.close();
/exit
"""


def test_hives_partition_pruner_falls_back_to_pruning_names_itself(tmp_path):
    """Hive's PartitionPruner asks get_partitions_by_expr first; hmsproxy does not read Kryo expressions, and
    must refuse the way that sends the client to its fallback (list the names, prune them client-side)
    rather than fail the query."""
    jshell = installed("jshell", "java", "no jshell (a JDK) on this machine: Hive's Java client cannot be run")
    jars = Path(pyspark.__file__).parent / "jars"
    server = start_hmsproxy(tmp_path / "server")
    try:
        client = hmsclient.HMSClient(host=server.host, port=server.port)
        client.open()
        client.create_database(A.Database(name="pruned", parameters={}))
        client.create_table(A.Table(
            tableName="t", dbName="pruned", parameters={}, tableType="MANAGED_TABLE",
            partitionKeys=[A.FieldSchema(name="k", type="string")],
            sd=A.StorageDescriptor(cols=[A.FieldSchema(name="a", type="int")], bucketCols=[], sortCols=[],
                                   serdeInfo=A.SerDeInfo(parameters={}), parameters={})))
        client.add_partitions([A.Partition(dbName="pruned", tableName="t", values=[v], parameters={},
                                           sd=A.StorageDescriptor(cols=[A.FieldSchema(name="a", type="int")],
                                                                  serdeInfo=A.SerDeInfo(parameters={})))
                               for v in ("x", "y")])
        client.close()
        script = tmp_path / "pruning.jsh"
        script.write_text(PRUNING.replace("PORT", str(server.port)).replace("DB", "pruned"))
        printed = subprocess.run([jshell, "-q", "--class-path", f"{jars}/*", str(script)], capture_output=True,
                                 text=True, timeout=300).stdout
    finally:
        server.stop()
    answers = [line for line in printed.splitlines() if line.startswith(("ANSWER", "NAMES"))]
    assert answers == ["ANSWER falls back", "NAMES [k=x, k=y]"], printed
