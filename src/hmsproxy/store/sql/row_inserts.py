"""Rows for several tables, inserted in as few round trips as the database allows.

Adding partitions writes rows into six tables or more (SERDES, SDS, SERDE_PARAMS, PARTITIONS, their values and
parameters). Each table's rows always go in one statement; on MySQL, MariaDB and PostgreSQL all the statements
also go in one query: MySQL's connections allow it (CLIENT.MULTI_STATEMENTS, set by `Database`), PostgreSQL's
simple query protocol, which psycopg uses for a query without parameters, too. There, the rows are rendered as
literals: each value passes SQLAlchemy's bind processing for its column type, then the driver's own escaping
on MySQL (pymysql's, which follows the session's NO_BACKSLASH_ESCAPES, as pymysql does for an executemany), or
standard_conforming_strings quoting on PostgreSQL. SQLite, in process, takes one executemany per table. On
MySQL the notification log's rows go the same way, in one query with the bump of the counter they are numbered
from (`insert_numbered_mysql`).

The statements run in the order given, so rows may refer to rows of a table listed before them.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from pymysql.connections import Connection as MySQLConnection
from pymysql.constants import COMMAND
from pymysql.constants.SERVER_STATUS import SERVER_STATUS_IN_TRANS
from pymysql.constants.SERVER_STATUS import SERVER_STATUS_NO_BACKSLASH_ESCAPES as NO_BACKSLASH_ESCAPES
from pymysql.converters import escape_item
from pymysql.cursors import Cursor as MySQLCursor
from sqlalchemy import Column, Connection, Dialect, Engine, Table, event, insert
from sqlalchemy.engine.interfaces import ExecutionContext
from sqlalchemy.pool import PoolProxiedConnection

from hmsproxy.events.journal import Journal

RowValues = Mapping[str, object]   # a row to insert: column name -> value
Inserts = Sequence[tuple[Table, Sequence[RowValues]]]   # (table, its rows), in the order to write them
# A column's value as an SQL literal; the value is of any type a column takes (as SQLAlchemy binds it).
SqlLiteral = Callable[[Any], str]

# Characters per query: pymysql's own bound for an executemany (1,024,000), under max_allowed_packet's defaults
# (4 MiB on MySQL 5.7, 16 MiB on MariaDB, 64 MiB on MySQL 8) even where every character takes 4 bytes.
MAX_QUERY_CHARS = 1_000_000

# Connection.info: the transaction's last query ended with its COMMIT (`insert_numbered_mysql`)
COMMITTED_IN_QUERY = "hmsproxy.committed_in_query"

# A rendered query: sent as it is (no parameters: a "%" in a value stays one), every statement's result read.
MULTI_STATEMENT: dict[str, object] = {"no_parameters": True, "every_result": True}


def insert_rows(conn: Connection, inserts: Inserts) -> None:
    """Inserts every table's rows, in order, inside the caller's transaction."""
    inserts = [(table, rows) for table, rows in inserts if rows]
    queries = _rendered(conn, inserts)
    if queries is None:
        for table, rows in inserts:
            conn.execute(insert(table), rows)
        return
    for query in queries:
        conn.exec_driver_sql(query, execution_options=MULTI_STATEMENT)


def insert_at_commit(conn: Connection, inserts: Inserts, journal: Journal | None) -> None:
    """A write's last rows: left to the journal, whose transaction inserts them in the query that appends its
    events (one round trip fewer), else inserted now. Only for rows nothing later in the transaction reads or
    refers to."""
    if journal is None:
        insert_rows(conn, inserts)
    else:
        journal.rows += inserts


def _rendered(conn: Connection, inserts: Inserts) -> list[str] | None:
    """The queries that write the rows; None where they go as parameters (SQLite, in process: a round trip costs
    nothing there; a value that is no literal)."""
    literal: SqlLiteral
    if conn.dialect.name == "postgresql":
        literal = _postgres_literal
    elif conn.dialect.name == "mysql":
        literal = _mysql_literal(conn)
    else:
        return None
    try:
        return joined_queries([_statement_parts(conn.dialect, table, rows, literal) for table, rows in inserts])
    except _NotALiteral:
        return None


def insert_numbered_mysql(conn: Connection, counter: Column[int], table: Table, rows: Sequence[RowValues],
                          number: str, followed_by: Inserts = (), commit: bool = False, only_if: str | None = None,
                          while_committing: Callable[[], None] | None = None) -> int:
    """MySQL/MariaDB: reserves len(rows) numbers from a single-row counter (the row stays locked until the
    transaction ends) and inserts the rows, each numbered in column `number` from the first reserved plus the
    offset the row holds there, then the rows of `followed_by`, in one query; returns the first number. A counter
    without its row numbers the rows NULL, which fails the query (`number` must be NOT NULL).
    `commit`: the query ends with the transaction's COMMIT (one round trip fewer); `skip_commits_sent` keeps the
    transaction's own commit from sending another; `while_committing` is done between sending that query and
    reading its results. `only_if` (SQL): a condition without which the rows are numbered NULL as well, which
    fails the query before anything after them runs."""
    count = len(rows)
    literal = _mysql_literal(conn)
    quote = conn.dialect.identifier_preparer.quote
    bump = (f"UPDATE {quote(counter.table.name)} SET {quote(counter.name)}=LAST_INSERT_ID({quote(counter.name)}"
            f"+{count})")
    where = "" if only_if is None else f" WHERE {only_if}"
    first = f"(SELECT {quote(counter.name)} FROM {quote(counter.table.name)}{where})-{count}"   # this one's bump
    parts = _statement_parts(conn.dialect, table, rows, literal, (number, first + "+"))
    more = [_statement_parts(conn.dialect, other, other_rows, literal)
            for other, other_rows in followed_by if other_rows]
    queries = joined_queries([(bump, []), parts, *more, *([("COMMIT", [])] if commit else [])])
    options: list[dict[str, object]] = [MULTI_STATEMENT] * len(queries)
    if commit and while_committing is not None:   # done while the last query, which holds the COMMIT, runs
        options[-1] = {**MULTI_STATEMENT, "while_running": while_committing}
    bumped, *_ = [conn.exec_driver_sql(query, execution_options=o) for query, o in zip(queries, options)]
    if commit:
        conn.info[COMMITTED_IN_QUERY] = True
    return int(bumped.lastrowid) - count


def skip_commits_sent(engine: Engine) -> None:
    """MySQL/MariaDB: a transaction whose last query ended with its COMMIT (`insert_numbered_mysql`) sends no
    second one when it ends, when the server's last reply says that no transaction is open any more. (A mark
    left by a transaction that failed after its query is harmless: the next commit sends its COMMIT unless the
    server says there is nothing to commit.)"""
    def do_commit(connection: PoolProxiedConnection) -> None:
        sent = commit_already_sent(connection)
        connection.info.pop(COMMITTED_IN_QUERY, None)
        if not sent:
            connection.commit()

    engine.dialect.do_commit = do_commit  # type: ignore[method-assign,assignment]


def commit_already_sent(pooled: PoolProxiedConnection) -> bool:
    """The transaction on this pooled connection ended with the COMMIT its last query carried: marked by
    `insert_numbered_mysql`, and the server's last reply says that no transaction is open any more."""
    marked = bool(pooled.info.get(COMMITTED_IN_QUERY))
    return marked and not cast(MySQLConnection, pooled.dbapi_connection).server_status & SERVER_STATUS_IN_TRANS


def _mysql_literal(conn: Connection) -> SqlLiteral:
    driver = cast(MySQLConnection, conn.connection.dbapi_connection)
    return _quoting_literal if driver.server_status & NO_BACKSLASH_ESCAPES else driver.escape


class _NotALiteral(Exception):
    """A value that must go as a parameter (the driver then says what is wrong with it)."""


def read_every_result(engine: Engine) -> None:
    """Makes a query run with the execution option `every_result` read the results of all its statements before
    the call returns, so that a failed one raises there. (SQLAlchemy would leave them to the cursor's close, which
    logs an error and goes on: the transaction would commit the statements before the one that failed.) The
    query's row count and last insert id stay those of its first statement. With the option `while_running` (a
    callable), that is done after the query is sent and before its results are read."""
    def execute(cursor: MySQLCursor, statement: str, context: ExecutionContext) -> bool:
        if not context.execution_options.get("every_result"):
            return False
        work = context.execution_options.get("while_running")
        if work is None:
            cursor.execute(statement)
        else:
            _execute_working(cursor, statement, work)
        first = cursor.rowcount, cursor.lastrowid
        while cursor.nextset():
            pass
        cursor.rowcount, cursor.lastrowid = first
        return True
    event.listen(engine, "do_execute_no_params", execute)


def _execute_working(cursor: MySQLCursor, statement: str, work: Callable[[], None]) -> None:
    """pymysql's cursor.execute(statement) without parameters, its steps taken one by one (Cursor._query,
    Connection.query) so that `work` is done while the database runs the query."""
    driver = cursor.connection
    cursor._clear_result()
    driver._execute_command(COMMAND.COM_QUERY, statement.encode(driver.encoding))
    try:
        work()
    finally:   # the connection stays in step whatever the work did
        driver._affected_rows = driver._read_query_result()
        cursor._do_get_result()


def _quoting_literal(value: Any) -> str:
    """A value as an SQL literal where backslashes are plain characters (NO_BACKSLASH_ESCAPES, which `Database`
    sets): text needs only its quotes doubled, as pymysql does then. The common types are done here, a third of
    the time pymysql's general escape takes; the rest go to pymysql's converters."""
    kind = value.__class__
    if kind is str:
        doubled = value.replace("'", "''")
        return f"'{doubled}'"   # typed str, and faster than two concatenations
    if kind is int:
        return str(value)
    if value is None:
        return "NULL"
    return cast(str, escape_item(value, "utf8mb4"))


def _postgres_literal(value: Any) -> str:
    """A value as a PostgreSQL literal under standard_conforming_strings (which `Database` sets): a backslash is a
    plain character, a quote is doubled. Text holding NUL, which PostgreSQL text cannot hold and which would end
    the query early, and types other than the few these tables take, go as parameters."""
    kind = value.__class__
    if kind is str:
        if "\x00" in value:
            raise _NotALiteral
        doubled = value.replace("'", "''")
        return f"'{doubled}'"
    if kind is int:
        return str(value)
    if value is None:
        return "NULL"
    if kind is bool:
        return "TRUE" if value else "FALSE"
    raise _NotALiteral


def _statement_parts(dialect: Dialect, table: Table, rows: Sequence[RowValues], literal: SqlLiteral,
                     offset_from: tuple[str, str] = ("", "")) -> tuple[str, list[str]]:
    """The head of a table's INSERT and each row's "(v1,v2,...)". `offset_from` (column, SQL expression): that
    column's values are integers, written as the expression plus them."""
    names = tuple(rows[0])
    offset_column, base = offset_from
    renders = [_renderer(literal, _bind_processor(dialect, table, name), base if name == offset_column else None)
               for name in names]
    columns = list(zip(names, renders))
    rendered = ["(" + ",".join([render(row[name]) for name, render in columns]) + ")" for row in rows]
    quote = dialect.identifier_preparer.quote
    head = f"INSERT INTO {quote(table.name)} ({','.join(map(quote, names))}) VALUES "
    return head, rendered


def _renderer(literal: SqlLiteral, process: Callable[[Any], Any] | None, offset_base: str | None) -> SqlLiteral:
    """How one column's values are written: as literals, after the column type's bind processing if it has one;
    as `offset_base` plus the integer where the column is numbered from an SQL expression."""
    if offset_base is not None:
        return lambda value: offset_base + str(int(value))
    if process is None:
        return literal
    return lambda value: literal(process(value))


@functools.cache
def _bind_processor(dialect: Dialect, table: Table, name: str) -> Callable[[Any], Any] | None:
    """What SQLAlchemy does to a value before the driver sees it, for this column on this dialect."""
    column_type = table.c[name].type
    return column_type.dialect_impl(dialect).bind_processor(dialect)


def joined_queries(statements: list[tuple[str, list[str]]], limit: int = MAX_QUERY_CHARS) -> list[str]:
    """The statements joined into queries of at most `limit` characters (a table's rows split over several
    statements where they need more; a single larger row or statement goes alone). A statement without rows is
    its head."""
    queries: list[str] = []
    query: list[str] = []      # statements of the query being filled
    query_chars = 0
    for head, rows in statements:
        if not rows:
            if query and query_chars + len(head) + 1 > limit:
                queries.append(";".join(query))
                query, query_chars = [], 0
            query.append(head)
            query_chars += len(head) + 1
            continue
        start = 0
        while start < len(rows):
            room = limit - query_chars - len(head) - 1
            end, used = start, 0
            while end < len(rows) and ((end == start and not query) or used + len(rows[end]) + 1 <= room):
                used += len(rows[end]) + 1
                end += 1
            if end == start:   # not even one row fits beside what the query holds: start the next query
                queries.append(";".join(query))
                query, query_chars = [], 0
                continue
            query.append(head + ",".join(rows[start:end]))
            query_chars += len(head) + used + 1
            start = end
    if query:
        queries.append(";".join(query))
    return queries
