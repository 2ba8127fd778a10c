"""Server memory while decoding maximal requests: the ceiling --max-request-objects and --max-large-requests set.

    python bench/memory_ceiling.py [--values 999000] [--concurrency 1,2,4,8,16] [--out-dir bench/results]

One `hmsproxy serve` process on SQLite per concurrency level (a fresh process each, so that memory freed
by one level does not hide the next one's). Each client sends an add_partitions request holding `--values`
empty partition structs (one byte each on the wire: the worst ratio of decoded objects to request bytes
under the object limit), all at once; the server's peak RSS is sampled every 20 ms until all are answered.
"""
from __future__ import annotations

import argparse
import json
import re
import socket
import struct
import sys
import threading
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent / "tests") not in sys.path:
    sys.path.insert(0, str(HERE.parent / "tests"))

from hmsproxy.idl import hms  # noqa: E402
from support.hmsproxy_server import start_hmsproxy_process  # noqa: E402
from support.raw_wire import call_frame  # noqa: E402


def maximal_request(values: int) -> bytes:
    """add_partitions with `values` empty Partition structs."""
    frame = call_frame("add_partitions", hms.ThriftHiveMetastore.add_partitions_args(new_parts=[]))
    empty_list = struct.pack("!bhbi", 15, 1, 12, 0)
    return frame[:frame.index(empty_list)] + struct.pack("!bhbi", 15, 1, 12, values) + b"\x00" * values + b"\x00"


def _rss_mib(pid: int) -> float:
    return int(re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text()).group(1)) / 1024


def measure(workdir: Path, values: int, concurrency: int) -> dict:
    server = start_hmsproxy_process(workdir, f"sqlite:///{workdir / 'm.db'}")
    try:
        baseline = _rss_mib(server.pid)
        peak, done = [baseline], threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], _rss_mib(server.pid))
                time.sleep(0.02)  # the sampling period of a benchmark

        sampler = threading.Thread(target=sample)
        sampler.start()
        request = maximal_request(values)
        started = time.monotonic()
        sockets = [socket.create_connection((server.host, server.port)) for _ in range(concurrency)]
        for sock in sockets:
            sock.sendall(request)
        for sock in sockets:
            sock.settimeout(300)
            try:
                sock.recv(1 << 16)   # the answer (a MetaException: the partitions are not valid) or a close
            except OSError:
                pass
            sock.close()
        elapsed = time.monotonic() - started
        done.set()
        sampler.join()
        return {"concurrency": concurrency, "values": values, "request_bytes": len(request),
                "baseline_mib": baseline, "peak_mib": peak[0], "growth_mib": peak[0] - baseline,
                "after_mib": _rss_mib(server.pid), "seconds": elapsed}
    finally:
        server.stop()


def report(results: list[dict], out_dir: Path) -> None:
    lines = [f"hmsproxy RSS while decoding maximal requests ({results[0]['values']:,} empty partitions, "
             f"{results[0]['request_bytes'] / 1e6:.1f} MB each; defaults: --max-request-objects 1000000, "
             "--max-large-requests 4)",
             f"{'concurrent':>10} {'baseline MiB':>13} {'peak MiB':>9} {'growth MiB':>11} {'seconds':>8}"]
    for r in results:
        lines.append(f"{r['concurrency']:>10} {r['baseline_mib']:>13.0f} {r['peak_mib']:>9.0f} "
                     f"{r['growth_mib']:>11.0f} {r['seconds']:>8.1f}")
    print("\n".join(lines))
    (out_dir / "memory_ceiling.txt").write_text("\n".join(lines) + "\n")
    (out_dir / "memory_ceiling.json").write_text(json.dumps(results, indent=1))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot([r["concurrency"] for r in results], [r["peak_mib"] for r in results], marker="o", label="peak RSS")
    ax.set_xlabel("concurrent maximal requests")
    ax.set_ylabel("MiB")
    ax.set_ylim(bottom=0)
    ax.set_title("hmsproxy peak RSS decoding maximal requests")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_dir / "memory_ceiling.png", dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--values", type=int, default=999_000)
    parser.add_argument("--concurrency", default="1,2,4,8,16")
    parser.add_argument("--out-dir", default=str(HERE / "results"))
    args = parser.parse_args()
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for level in (int(c) for c in args.concurrency.split(",")):
        workdir = out_dir / f"ceiling-{uuid.uuid4().hex[:6]}"
        results.append(measure(workdir, args.values, level))
        print(f"  {level} concurrent: peak {results[-1]['peak_mib']:.0f} MiB", flush=True)
    report(results, out_dir)


if __name__ == "__main__":
    main()
