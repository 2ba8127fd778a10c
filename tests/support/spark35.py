"""A venv of its own for Spark 3.5 with Iceberg's Spark runtime, beside the project's (which has pyspark 4).

Iceberg 1.10's Spark runtime is built for Spark 3.5 (Scala 2.12); PyPI ships it as a jar inside
`snowpark-connect-deps-iceberg`. The venv is made once at `.venv-spark35/` under the checkout (gitignored) and
reused; .ci/run prepares it before the tests (`python -m support.spark35`) so that the test's time stays its own.

That package's runtime jar lacks two libraries that Iceberg's REST client uses and the released runtime bundles
relocated under org.apache.iceberg.shaded: Apache HttpClient 5 and Jackson. Without them the REST catalog fails to
load (NoClassDefFoundError org/apache/iceberg/shaded/org/apache/hc/core5/http/Method, then .../jackson/core/
JsonProcessingException). Debian's httpclient5/httpcore5 jars (5.2, enough for what the client calls without TLS
settings) and the Jackson jars pyspark 3.5 ships, relocated the same way with Debian's jarjar, fill the gap:
.ci/run installs libhttpclient5-java, libhttpcore5-java and libjarjar-java. One interface Iceberg's client
names, TlsSocketStrategy, came with HttpClient 5.4: the JVM loads it when it links the client, which only calls
it when TLS is configured, so an empty interface of that name (compiled here) stands in for it.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from support.required import installed, missing

CHECKOUT = Path(__file__).resolve().parents[2]
VENV = CHECKOUT / ".venv-spark35"
REQUIREMENTS = ("pyspark>=3.5,<3.6", "snowpark-connect-deps-iceberg")
RUNTIME_JAR = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
READY = VENV / "ready"  # written last, holding REQUIREMENTS: a venv whose install broke off is made again
INSTALL_TIMEOUT_S = 1200
DEBIAN_JARS = tuple(Path("/usr/share/java") / name for name in ("httpcore5.jar", "httpcore5-h2.jar", "httpclient5.jar"))
JARJAR = Path("/usr/share/java/jarjar.jar")
JACKSON_JARS = ("jackson-core-2.*.jar", "jackson-databind-2.*.jar", "jackson-annotations-2.*.jar")  # in pyspark/jars
RELOCATION = ("rule org.apache.hc.** org.apache.iceberg.shaded.org.apache.hc.@1\n"
              "rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1\n")
SHADED_JAR = VENV / "iceberg-shaded-deps.jar"
TLS_STRATEGY = "org/apache/hc/client5/http/ssl/TlsSocketStrategy"
TLS_STRATEGY_SOURCE = "package org.apache.hc.client5.http.ssl;\n\npublic interface TlsSocketStrategy {}\n"


@dataclass(frozen=True)
class Spark35:
    python: Path
    jars: tuple[Path, ...]  # Iceberg's runtime and the relocated libraries it needs


def _python() -> Path:
    return VENV / "bin" / "python"


def _runtime_jar() -> Path | None:
    return next(iter(sorted(VENV.glob(f"lib/python*/site-packages/**/{RUNTIME_JAR}"))), None)


def prepare() -> Spark35:
    """The venv, made (or made again) if it is not ready; raises RuntimeError with pip's output if it fails."""
    jar = _runtime_jar()
    if not (READY.is_file() and READY.read_text() == "\n".join(REQUIREMENTS) and jar):
        shutil.rmtree(VENV, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        pip = subprocess.run([str(_python()), "-m", "pip", "install", "-q", *REQUIREMENTS], capture_output=True,
                             text=True, timeout=INSTALL_TIMEOUT_S)
        jar = _runtime_jar()
        if pip.returncode != 0 or jar is None:
            raise RuntimeError(f"pip install {' '.join(REQUIREMENTS)} into {VENV} failed (exit {pip.returncode}, "
                               f"{RUNTIME_JAR} {'found' if jar else 'not found'}): {pip.stderr[-2000:]}")
        READY.write_text("\n".join(REQUIREMENTS))
    if not SHADED_JAR.is_file():
        _relocate_missing_libraries()
    return Spark35(python=_python(), jars=(jar, SHADED_JAR))


def _relocate_missing_libraries() -> None:
    """Debian's HttpClient 5 and pyspark's Jackson merged into one jar and relocated where Iceberg's runtime looks."""
    absent = [str(path) for path in (*DEBIAN_JARS, JARJAR) if not path.is_file()]
    if absent:
        raise RuntimeError(f"missing {absent}: apt-get install libhttpclient5-java libhttpcore5-java libjarjar-java")
    pyspark_jars = "lib/python*/site-packages/pyspark/jars"
    jackson = [jar for pattern in JACKSON_JARS for jar in VENV.glob(f"{pyspark_jars}/{pattern}")]
    if len(jackson) != len(JACKSON_JARS):
        raise RuntimeError(f"pyspark's jars do not hold {JACKSON_JARS} exactly once each: {jackson}")
    with tempfile.TemporaryDirectory(prefix="spark35-") as scratch:
        merged, rules = Path(scratch) / "merged.jar", Path(scratch) / "rules.txt"
        rules.write_text(RELOCATION)
        source = Path(scratch) / f"{TLS_STRATEGY}.java"
        source.parent.mkdir(parents=True)
        source.write_text(TLS_STRATEGY_SOURCE)
        subprocess.run(["javac", "--release", "8", "-d", scratch, str(source)], check=True, capture_output=True,
                       timeout=120)
        seen: set[str] = set()
        with zipfile.ZipFile(merged, "w", zipfile.ZIP_DEFLATED) as out:
            out.write(Path(scratch) / f"{TLS_STRATEGY}.class", f"{TLS_STRATEGY}.class")
            for source in (*DEBIAN_JARS, *jackson):
                with zipfile.ZipFile(source) as jar:
                    for name in jar.namelist():
                        if name.endswith(".class") and not name.startswith("META-INF/") and name not in seen:
                            seen.add(name)
                            out.writestr(name, jar.read(name))
        partial = SHADED_JAR.with_suffix(".partial")
        subprocess.run(["java", "-jar", str(JARJAR), "process", str(rules), str(merged), str(partial)], check=True,
                       capture_output=True, timeout=300)
        partial.rename(SHADED_JAR)


def spark35() -> Spark35:
    """The venv for a test: Java and the installed packages, or `missing("spark35" / "java", ...)`."""
    installed("java", "java", "Spark needs Java (17) on PATH")
    try:
        return prepare()
    except (RuntimeError, subprocess.SubprocessError) as failure:
        missing("spark35", f"the Spark 3.5 venv could not be made (no network?): {failure}")


if __name__ == "__main__":
    print(f"{VENV}: {', '.join(map(str, prepare().jars))}")
