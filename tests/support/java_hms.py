"""The real Java Hive Metastore 2.3.10, run from the jars that ship inside PySpark: its configuration files, its
process, and the preloaded shim that keeps it on 127.0.0.1 (Hive 2.3 has no bind-host option).

Everything it writes is in its work directory: conf/ (hive-site.xml, hive-log4j2.properties), the embedded Derby
database, warehouse/, hms.out (the server's log) and hms-audit.log (one line per Thrift call)."""
from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

import pymysql
from hmsclient import hmsclient
from thrift.Thrift import TApplicationException

MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
MARIADB_JDBC_JAR = Path("/usr/share/java/mariadb-java-client.jar")  # Debian's libmariadb-java
SHIM_SOURCE = Path(__file__).with_name("loopback_only.c")
AUDIT_LOGGER = "org.apache.hadoop.hive.metastore.HiveMetaStore.audit"
# loggers that would bury the server's own lines in schema and transaction chatter
QUIET_LOGGERS = ("DataNucleus", "org.datanucleus", "org.apache.hadoop.hive.metastore.txn.TxnHandler")
TXN_TABLES_MARKER = ".txn-tables"  # in the work directory once Hive has created its transaction tables there


@dataclass(frozen=True)
class JdbcDatabase:
    """A MariaDB database for the Java HMS instead of its embedded Derby one (created if it does not exist)."""

    host: str
    port: int
    name: str
    user: str  # reaches the server over TCP and may create the database
    password: str  # not empty: Hive replaces an empty password with its own default

    @property
    def url(self) -> str:
        """As MariaDB's JDBC driver takes it, told to call itself MySQL: the product Hive 2.3 knows how to talk to."""
        return f"jdbc:mysql://{self.host}:{self.port}/{self.name}?useMysqlMetadata=true"

    def execute(self, statement: str, *, inside: bool = True) -> None:
        """Runs one statement as the Java HMS's user, in the database (`inside`) or on the server."""
        connection = pymysql.connect(host=self.host, port=self.port, user=self.user, password=self.password,
                                     database=self.name if inside else None, autocommit=True)
        try:
            with connection.cursor() as cursor:
                cursor.execute(statement)
        finally:
            connection.close()

    def create(self) -> None:
        """The database, latin1 as Hive 2.3's MySQL schema is, unless it exists (with a schema Hive's script laid
        out, or none, which DataNucleus then creates)."""
        self.execute(f"CREATE DATABASE IF NOT EXISTS `{self.name}` CHARACTER SET latin1", inside=False)

    def create_mutex_table(self) -> None:
        """AUX_TABLE, the row lock Hive 2.3's lock calls take on MySQL; its test mode creates the other
        transaction tables but skips this one."""
        self.execute("CREATE TABLE IF NOT EXISTS AUX_TABLE (MT_KEY1 varchar(128) NOT NULL, MT_KEY2 bigint NOT NULL,"
                     " MT_COMMENT varchar(255), PRIMARY KEY (MT_KEY1, MT_KEY2)) ENGINE=InnoDB DEFAULT CHARSET=latin1")


def pyspark_jars() -> Path | None:
    """PySpark's jars folder (Hive 2.3's metastore and everything it needs), or None without pyspark."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    jars = Path(next(iter(spec.submodule_search_locations))) / "jars"
    return jars if any(jars.glob("hive-metastore-2.3.*.jar")) else None


def missing_prerequisite(database: JdbcDatabase | None = None) -> str | None:
    """Why the Java HMS cannot run on this machine, in one line; None when it can."""
    if shutil.which("java") is None or subprocess.run(["java", "-version"], capture_output=True).returncode:
        return "the reference Hive Metastore needs Java 17 (`java` is not on PATH or does not run)"
    if pyspark_jars() is None:
        return "the reference Hive Metastore runs from PySpark's jars (pyspark with Hive 2.3's is not installed)"
    if shutil.which("gcc") is None:
        return "the reference Hive Metastore needs gcc to build the shim that keeps it on 127.0.0.1"
    if database is not None and not MARIADB_JDBC_JAR.is_file():
        return f"the reference HMS on MariaDB needs Debian's libmariadb-java ({MARIADB_JDBC_JAR} missing)"
    return None


def site_properties(workdir: Path, *, txn: bool, database: JdbcDatabase | None,
                    extra: dict[str, str]) -> dict[str, str]:
    """hive-site.xml's properties: an embedded Derby database (or `database`) whose schema DataNucleus creates,
    the warehouse under `workdir`, Hive's transaction manager when `txn`, and `extra` over them."""
    properties = {
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={workdir / 'metastore_db'};create=true",
        "javax.jdo.option.ConnectionDriverName": "org.apache.derby.jdbc.EmbeddedDriver",
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": str(workdir / "warehouse"),
        # PySpark's jars hold neither the LMAX disruptor (asynchronous logging) nor BoneCP (Hive's default pool)
        "hive.async.log.enabled": "false",
        "datanucleus.connectionPoolingType": "HikariCP",
    }
    if database is not None:
        properties |= {"javax.jdo.option.ConnectionURL": database.url,
                       "javax.jdo.option.ConnectionDriverName": "org.mariadb.jdbc.Driver",
                       "javax.jdo.option.ConnectionUserName": database.user,
                       "javax.jdo.option.ConnectionPassword": database.password}
    if txn:
        properties |= {"hive.support.concurrency": "true",
                       "hive.txn.manager": "org.apache.hadoop.hive.ql.lockmgr.DbTxnManager"}
    return properties | extra


def write_hive_site(conf: Path, properties: dict[str, str]) -> None:
    lines = [f"  <property><name>{escape(name)}</name><value>{escape(value)}</value></property>"
             for name, value in properties.items()]
    (conf / "hive-site.xml").write_text("\n".join(['<?xml version="1.0"?>', "<configuration>", *lines,
                                                   "</configuration>", ""]))


def write_log4j2(conf: Path, workdir: Path) -> None:
    """The server's log to stderr (hms.out) and the audit logger's lines, one per Thrift call, to hms-audit.log."""
    pattern = "%d{HH:mm:ss.SSS} %p %c{1}: %m%n"
    settings = {
        "status": "warn",
        "appender.out.type": "Console", "appender.out.name": "out", "appender.out.target": "SYSTEM_ERR",
        "appender.out.layout.type": "PatternLayout", "appender.out.layout.pattern": pattern,
        "appender.calls.type": "File", "appender.calls.name": "calls",
        "appender.calls.fileName": str(workdir / "hms-audit.log"),
        "appender.calls.layout.type": "PatternLayout", "appender.calls.layout.pattern": "%d{HH:mm:ss.SSS} %m%n",
        "logger.calls.name": AUDIT_LOGGER, "logger.calls.level": "info", "logger.calls.additivity": "false",
        "logger.calls.appenderRef.file.ref": "calls",
        **{key: value for i, name in enumerate(QUIET_LOGGERS)
           for key, value in ((f"logger.quiet{i}.name", name), (f"logger.quiet{i}.level", "warn"))},
        "rootLogger.level": "info", "rootLogger.appenderRef.out.ref": "out",
    }
    (conf / "hive-log4j2.properties").write_text("".join(f"{key} = {value}\n" for key, value in settings.items()))


def loopback_shim(workdir: Path) -> Path:
    """The shared library (built here on first use) that turns the server's bind to every interface into one to
    127.0.0.1."""
    shim = workdir / "loopback_only.so"
    if not shim.is_file():
        subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(shim), str(SHIM_SOURCE), "-ldl"],
                       check=True, capture_output=True, timeout=120)
    return shim


def launch(workdir: Path, port: int, properties: dict[str, str], timeout: float) -> subprocess.Popen[bytes]:
    """The server on `port` with these hive-site properties, once it says it serves; RuntimeError with the end of
    its log when it exits or stays silent past `timeout` seconds."""
    conf = workdir / "conf"
    write_hive_site(conf, properties)
    classpath = [str(conf), f"{pyspark_jars()}/*"]
    if properties["javax.jdo.option.ConnectionDriverName"] == "org.mariadb.jdbc.Driver":
        classpath.append(str(MARIADB_JDBC_JAR))
    log = workdir / "hms.out"
    with log.open("wb") as out:  # the child writes to its own copy of the file descriptor
        process = subprocess.Popen(
            ["java", "-Djava.net.preferIPv4Stack=true", "-cp", ":".join(classpath), MAIN_CLASS, "-p", str(port)],
            cwd=workdir, stdout=out, stderr=subprocess.STDOUT,
            env={**os.environ, "LD_PRELOAD": str(loopback_shim(workdir))})
    serving = f"Started the new metaserver on port [{port}]"  # logged once its socket is bound
    deadline = time.monotonic() + timeout
    while serving not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            stop(process)
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-20:])
            raise RuntimeError(f"the Java HMS did not serve on port {port}:\n{tail}")
        time.sleep(0.1)  # waiting for another process to write its log
    return process


def stop(process: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    """SIGTERM (Derby shuts down cleanly), SIGKILL if the server is still there after `timeout` seconds."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def create_txn_tables(workdir: Path, port: int, properties: dict[str, str], database: JdbcDatabase | None,
                      timeout: float) -> None:
    """Has Hive create its transaction and lock tables in the database: Hive 2.3 does so only in test mode, on the
    first transaction call, and its lock calls misbehave in test mode, so this runs a server for that one call."""
    process = launch(workdir, port, properties | {"hive.in.test": "true"}, timeout)
    try:
        client = hmsclient.HMSClient(host="127.0.0.1", port=port)
        client.open()
        try:
            client.get_open_txns()
        except TApplicationException:
            if database is None:
                raise
            # on MySQL, test mode's setup (written for Derby) fails at the compaction tables, which come after the
            # transaction and lock tables: those are made, and the call's answer is of no use anyway
        finally:
            client.close()
    finally:
        stop(process)
    if database is not None:
        database.create_mutex_table()
    (workdir / TXN_TABLES_MARKER).touch()


def start_java_hms(workdir: Path, port: int, *, txn: bool, database: JdbcDatabase | None,
                   properties: dict[str, str], timeout: float) -> subprocess.Popen[bytes]:
    """The Java HMS serving on 127.0.0.1:`port` from `workdir` (with Hive's transaction and lock tables when
    `txn`, created on first start; on `database` instead of Derby when given; `properties` added to its
    hive-site.xml)."""
    (workdir / "conf").mkdir(parents=True, exist_ok=True)
    (workdir / "warehouse").mkdir(exist_ok=True)
    write_log4j2(workdir / "conf", workdir)
    site = site_properties(workdir, txn=txn, database=database, extra=properties)
    if database is not None:
        database.create()
    if txn and not (workdir / TXN_TABLES_MARKER).exists():
        create_txn_tables(workdir, port, site, database, timeout)
    return launch(workdir, port, site, timeout)
