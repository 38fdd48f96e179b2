"""Memory and latency of a serving process: `graphrag-suite serve INDEX`, then questions over HTTP.

    python benchmarks/serve_memory.py --index KEPT/index-100000 --questions KEPT/synth-100000/questions.jsonl \
        --embed hash --out benchmarks/results/serve_memory.md      # KEPT: scale.py --keep

Starts the server (loopback, a free port) in a child process, waits for /health (the load), asks every method the
first N questions in turn through POST /retrieve, then reads the server's resident memory from /proc (now, and
its peak). RSS is the process's resident set: anonymous pages (its own memory) and file-backed pages (the mapped
index pages queries read, clean copies of the segment files; the server unmaps them above ``--mapped-mb``, and
they stay in the kernel's page cache, which is no process's RSS). Latency here is the whole HTTP round trip on the
same machine, query embedding included.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib import request

METHODS = "dense,bm25,hybrid,hipporag,agrag,pathrag,archrag,a2rag"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, body: dict) -> dict:
    req = request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with request.urlopen(req, timeout=600) as resp:
        return json.loads(resp.read())


def _memory_mb(pid: int) -> dict[str, float]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {k: round(int(fields[k].split()[0]) / 1024) for k in ("VmRSS", "VmHWM", "RssAnon", "RssFile")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--questions", required=True, help="a questions.jsonl with a 'question' field")
    ap.add_argument("--count", type=int, default=100, help="questions asked in all (methods in turn)")
    ap.add_argument("--methods", default=METHODS)
    ap.add_argument("--embed", default=None)
    ap.add_argument("--mapped-mb", type=float, default=None,
                    help="the server's --mapped-mb (default: its own default; 0: never unmap index pages)")
    ap.add_argument("--out", default=None, help="append the result table to this markdown file")
    ap.add_argument("--json", default=None, help="write the figures to this JSON file too (scale.py --serve reads it)")
    args = ap.parse_args()
    questions = [json.loads(line)["question"] for line in Path(args.questions).read_text().splitlines() if line.strip()]
    methods = args.methods.split(",")
    port = _free_port()
    cmd = [sys.executable, "-m", "llama_index_graphrag_suite.cli", "serve", args.index, "--port", str(port), "--read-only"]
    if args.embed:
        cmd += ["--embed", args.embed]
    if args.mapped_mb is not None:
        cmd += ["--mapped-mb", str(args.mapped_mb)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        while True:
            if server.poll() is not None:
                sys.exit(f"the server stopped: {server.stderr.read()[-3000:]}")
            try:
                with request.urlopen(f"{base}/health", timeout=5):
                    break
            except OSError:
                time.sleep(0.2)
        ready_s = time.perf_counter() - start
        loaded = _memory_mb(server.pid)
        times: dict[str, list[float]] = {m: [] for m in methods}
        for i in range(args.count):
            method = methods[i % len(methods)]
            t = time.perf_counter()
            _post(f"{base}/retrieve", {"question": questions[i % len(questions)], "method": method, "top_k": 5,
                                       "graph": False})
            times[method].append((time.perf_counter() - t) * 1000)
        time.sleep(0.5)  # the last answer's after-question step (it runs once the answer is sent)
        after = _memory_mb(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=30)
    lines = [f"`{' '.join(['python', 'benchmarks/serve_memory.py', *sys.argv[1:]])}` "
             f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", "",
             f"- ready (/health answers) {ready_s:.1f} s after start; RSS then {loaded['VmRSS']} MB (anonymous "
             f"{loaded['RssAnon']} MB, file-backed {loaded['RssFile']} MB)",
             f"- after {args.count} questions: RSS {after['VmRSS']} MB (anonymous {after['RssAnon']} MB, file-backed "
             f"{after['RssFile']} MB: mapped index pages and libraries), peak {after['VmHWM']} MB", "",
             "| method | questions | median ms (HTTP round trip, embedding included) | max ms |", "|---|---:|---:|---:|"]
    for m, ms in times.items():
        if ms:
            lines.append(f"| {m} | {len(ms)} | {statistics.median(ms):.1f} | {max(ms):.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps({
            "questions": args.count, "ready_s": round(ready_s, 2), "loaded_mb": loaded, "after_mb": after,
            "methods": {m: {"questions": len(ms), "median_ms": round(statistics.median(ms), 1),
                            "max_ms": round(max(ms), 1)} for m, ms in times.items() if ms}}, indent=1) + "\n")
    if args.out:
        if not Path(args.out).exists():
            Path(args.out).write_text("# A served index: memory and latency over HTTP\n\n" + " ".join(
                __doc__.split("\n\n")[-1].split()) + "\n\n", encoding="utf-8")
        with open(args.out, "a", encoding="utf-8") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
