"""Settings from the hive-site.xml a Java HMS already runs with (`--hive-site FILE`).

The JDO connection keys become one SQLAlchemy URL (MySQL/MariaDB through pymysql, PostgreSQL through
psycopg 3); the other keys hmsproxy knows (port, warehouse, cache, timeouts...) are taken under any of the
names Hive accepts; every other key of the file is Hive's business and ignored.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from urllib.parse import quote

JDBC_URL = re.compile(r"jdbc:(?P<kind>mysql|mariadb|postgresql)://(?P<hosts>[^/?;]+)/(?P<db>[^?;]*)(?P<rest>.*)",
                      re.IGNORECASE)
DRIVERS = {"mysql": "mysql+pymysql", "mariadb": "mysql+pymysql", "postgresql": "postgresql+psycopg"}
CONNECTION_KEYS = ("javax.jdo.option.connectionurl", "javax.jdo.option.connectionusername",
                   "javax.jdo.option.connectionpassword", "javax.jdo.option.connectiondrivername")


def read_properties(path: str | Path) -> dict[str, str]:
    """name -> value of every <property> in a Hadoop configuration file (names lower-cased)."""
    try:
        root = ElementTree.parse(path).getroot()
    except ElementTree.ParseError as exc:
        raise ValueError(f"{path}: not a Hadoop configuration file: {exc}") from None
    properties = {}
    for prop in root.iter("property"):
        name, value = prop.findtext("name"), prop.findtext("value")
        if name is not None and value is not None:
            properties[name.strip().lower()] = value.strip()
    return properties


def sqlalchemy_url(jdbc_url: str, user: str | None, password: str | None) -> str:
    """`jdbc:mysql://db:3306/metastore?useSSL=false` -> `mysql+pymysql://user:pw@db:3306/metastore`.
    JDBC options are dropped (they are the Java driver's); other databases are refused."""
    match = JDBC_URL.fullmatch(jdbc_url.strip())
    if match is None:
        kind = jdbc_url.split(":")[1] if jdbc_url.count(":") > 1 else jdbc_url
        raise ValueError(f"javax.jdo.option.ConnectionURL {jdbc_url!r}: hmsproxy serves MySQL/MariaDB and "
                         f"PostgreSQL metastores, not {kind!r}")
    if "," in match["hosts"]:
        raise ValueError(f"javax.jdo.option.ConnectionURL {jdbc_url!r}: several hosts are not supported")
    credentials = ""
    if user:
        credentials = quote(user, safe="") + (f":{quote(password, safe='')}" if password else "") + "@"
    return f"{DRIVERS[match['kind'].lower()]}://{credentials}{match['hosts']}/{match['db']}"


def settings_from(path: str | Path, known_keys: set[str]) -> dict[str, str]:
    """The file's values for the settings hmsproxy knows, under Hive's key names (`known_keys` tells which
    names config.py translates); the JDO connection keys already joined into `db`."""
    properties = read_properties(path)
    taken = {key: value for key, value in properties.items() if key in known_keys and key not in CONNECTION_KEYS}
    if "javax.jdo.option.connectionurl" in properties:
        taken["db"] = sqlalchemy_url(properties["javax.jdo.option.connectionurl"],
                                     properties.get("javax.jdo.option.connectionusername"),
                                     properties.get("javax.jdo.option.connectionpassword"))
    return taken
