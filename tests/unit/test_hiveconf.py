"""The HiveConf defaults hmsproxy answers are HiveConf's own: read again from the hive-common jar PySpark
ships (with jshell, from Java 17 which PySpark needs anyway) and compared with the packaged file."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyspark

from hmsproxy.hive.hiveconf import hiveconf_defaults
from support.required import installed

# Prints [key, default] as JSON for every HiveConf variable whose default is not empty.
LISTING = r"""
import org.apache.hadoop.hive.conf.HiveConf;
String esc(String s) { StringBuilder b = new StringBuilder("\""); for (char ch : s.toCharArray()) {
  if (ch == '"' || ch == '\\') b.append('\\').append(ch);
  else if (ch < 0x20 || ch > 0x7e) b.append(String.format("\\u%04x", (int) ch)); else b.append(ch); }
  return b.append('"').toString(); }
for (HiveConf.ConfVars v : HiveConf.ConfVars.values()) { String d = v.getDefaultValue();
  if (d != null && !d.isEmpty()) System.out.println("[" + esc(v.varname) + ", " + esc(d) + "]"); }
/exit
"""


def test_the_packaged_defaults_are_hiveconfs(tmp_path):
    jshell = installed("jshell", "java", "no jshell (a JDK) on this machine: the defaults cannot be read from the jar")
    jars = Path(pyspark.__file__).parent / "jars"
    assert list(jars.glob("hive-common-2.3.*.jar")), "PySpark no longer ships Hive 2.3's hive-common"
    script = tmp_path / "listing.jsh"
    script.write_text(LISTING)
    listed = subprocess.run([jshell, "-q", "--class-path", f"{jars}/*", str(script)], capture_output=True,
                            text=True, timeout=300, check=True).stdout
    from_jar = dict(json.loads(line) for line in listed.splitlines() if line.startswith("["))
    assert len(from_jar) > 700
    assert hiveconf_defaults() == from_jar
