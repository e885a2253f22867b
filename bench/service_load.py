"""Load test of the HTTP service on loopback: 50 concurrent clients on search, then on ask.

Usage: python bench/service_load.py [--duration 60] [--clients 50] [--docs DIR]

Starts ``ragstrata serve`` as a subprocess on 127.0.0.1 (a free port, a temporary data
directory, a per-key rate limit high enough not to interfere), creates an API key, uploads the
Markdown files of ``--docs`` (default: the repository's docs/) and waits for the ingestion job.
Then, for each phase (``search``, then ``ask``), ``--clients`` asyncio clients (httpx) send
requests back to back for ``--duration`` seconds; a request counts as an error when it fails or
its status is not 200. Every phase is bounded: it stops sending at the deadline and waits at most
``--timeout`` seconds for requests in flight. Prints a Markdown table (requests, errors,
p50/p95/p99 latency, requests/s) and writes bench/results/service_load.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
HOST = "127.0.0.1"  # loopback only, never configurable

QUESTIONS = (
    "What does error RS503 mean?",
    "How is BM25 scored?",
    "What happens when an ingest is killed?",
    "Which embedder is the default?",
    "How are chunks split?",
    "When does ask refuse to answer?",
    "What is reciprocal rank fusion?",
    "How large is a chunk in tokens?",
    "How are code blocks and tables chunked?",
    "What does the journal file hold?",
    "Which file formats can be ingested?",
    "How are accents handled by the analyzer?",
    "What is the overlap between chunks?",
    "How does the single writer lock work?",
    "What does the explain output show?",
    "How is the document id computed?",
)


def _shown(path: Path) -> str:
    """``path`` relative to the repository when inside it (results stay machine-neutral)."""
    resolved = path.resolve()
    return resolved.relative_to(ROOT).as_posix() if resolved.is_relative_to(ROOT) else str(path)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _ragstrata() -> list[str]:
    script = Path(sys.executable).with_name("ragstrata")
    return [str(script)] if script.exists() else [sys.executable, "-m", "ragstrata.cli"]


def start_server(work: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    """``ragstrata serve`` on a free loopback port; returns (process, base URL, API key)."""
    data = work / "data"
    env = os.environ | {
        "RAGSTRATA_HOME": str(work / "home"),
        "RAGSTRATA_SERVICE_RATE_LIMIT_PER_S": "1000000",
        "RAGSTRATA_SERVICE_RATE_LIMIT_BURST": "1000000",
    }
    key = subprocess.run(
        [*_ragstrata(), "keys", "create", "--tenant", "bench", "--data-dir", str(data)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    ).stdout.strip()
    port = _free_port()
    log = open(work / "server.log", "wb")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen(
        [
            *_ragstrata(),
            "serve",
            "--host",
            HOST,
            "--port",
            str(port),
            "--data-dir",
            str(data),
            "--log-level",
            "warning",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    base = f"http://{HOST}:{port}"
    deadline = time.monotonic() + 300
    while True:
        if proc.poll() is not None:
            raise SystemExit((work / "server.log").read_text(encoding="utf-8"))
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return proc, base, key
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            proc.kill()
            raise SystemExit("the server did not start within 300 s")
        time.sleep(0.3)


def ingest(base: str, key: str, docs: Path) -> dict[str, Any]:
    """Upload the Markdown files of ``docs`` to collection ``docs``; returns the final job."""
    paths = sorted(p for p in docs.glob("*.md") if p.is_file())
    files = [("files", (p.name, p.read_bytes(), "text/markdown")) for p in paths]
    headers = {"Authorization": f"Bearer {key}"}
    response = httpx.post(
        f"{base}/v1/collections/docs/documents", headers=headers, files=files, timeout=120
    )
    response.raise_for_status()
    job: dict[str, Any] = response.json()
    while job["state"] in ("queued", "running"):
        time.sleep(0.5)
        job = httpx.get(f"{base}/v1/jobs/{job['job_id']}", headers=headers, timeout=30).json()
    if job["state"] != "succeeded":
        raise SystemExit(f"ingestion failed: {json.dumps(job, indent=1)}")
    return job


async def phase(
    base: str, key: str, op: str, *, clients: int, duration: float, timeout: float
) -> dict[str, Any]:
    """``clients`` loops sending ``op`` requests for ``duration`` seconds."""
    latencies: list[float] = []
    errors: list[str] = []
    headers = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    url = f"{base}/v1/collections/docs/{op}"
    field = "query" if op == "search" else "question"

    async with httpx.AsyncClient(limits=limits, timeout=timeout, headers=headers) as client:
        # warm-up: one request per op, not timed
        await client.post(url, json={field: QUESTIONS[0]})
        started = time.perf_counter()
        deadline = started + duration

        async def worker(n: int) -> None:
            i = n
            while time.perf_counter() < deadline:
                body = {field: QUESTIONS[i % len(QUESTIONS)]}
                i += clients
                t = time.perf_counter()
                try:
                    response = await client.post(url, json=body)
                    ok = response.status_code == 200
                    detail = f"HTTP {response.status_code}"
                except httpx.HTTPError as exc:
                    ok, detail = False, f"{type(exc).__name__}: {exc}"
                if ok:
                    latencies.append((time.perf_counter() - t) * 1000)
                else:
                    errors.append(detail)

        await asyncio.wait_for(
            asyncio.gather(*(worker(n) for n in range(clients))), duration + timeout + 5
        )
        wall = time.perf_counter() - started
    done = len(latencies) + len(errors)
    return {
        "op": op,
        "clients": clients,
        "seconds": round(wall, 1),
        "requests": done,
        "errors": len(errors),
        "error_samples": sorted(set(errors))[:5],
        "p50_ms": round(percentile(latencies, 0.50), 1) if latencies else None,
        "p95_ms": round(percentile(latencies, 0.95), 1) if latencies else None,
        "p99_ms": round(percentile(latencies, 0.99), 1) if latencies else None,
        "requests_per_s": round(done / wall, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds per phase")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--timeout", type=float, default=120.0, help="per-request timeout, s")
    parser.add_argument("--docs", type=Path, default=ROOT / "docs")
    parser.add_argument("--ops", default="search,ask", help="phases, in order")
    parser.add_argument("--out", type=Path, default=RESULTS / "service_load.json")
    parser.add_argument("--server-log", type=Path, help="also keep the server's log here")
    args = parser.parse_args()

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ragstrata-load-") as tmp:
        proc, base, key = start_server(Path(tmp))
        try:
            job = ingest(base, key, args.docs)
            rows = [
                asyncio.run(
                    phase(
                        base,
                        key,
                        op,
                        clients=args.clients,
                        duration=args.duration,
                        timeout=args.timeout,
                    )
                )
                for op in args.ops.split(",")
            ]
            stats = httpx.get(
                f"{base}/v1/collections/docs", headers={"X-API-Key": key}, timeout=30
            ).json()
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
            server_log = (Path(tmp) / "server.log").read_text(encoding="utf-8", errors="replace")
            if args.server_log is not None:
                args.server_log.write_text(server_log, encoding="utf-8")

    print(f"corpus: {stats['documents']} documents, {stats['chunks']} chunks ({args.docs})")
    print(f"load average before/after: {load_before[0]:.1f} / {os.getloadavg()[0]:.1f}")
    print("| op | clients | seconds | requests | errors | p50 ms | p95 ms | p99 ms | req/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['op']} | {r['clients']} | {r['seconds']} | {r['requests']} | {r['errors']} "
            f"| {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} | {r['requests_per_s']} |"
        )
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            # other jobs share the machine: the 1/5/15-min load averages frame the figures
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        },
        "command": "python bench/service_load.py " + " ".join(sys.argv[1:]),
        "corpus": {
            "path": _shown(args.docs),
            "documents": stats["documents"],
            "chunks": stats["chunks"],
        },
        "ingest_seconds": job["report"]["seconds"] if job.get("report") else None,
        "phases": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if any(r["errors"] for r in rows):
        print("errors:", [r["error_samples"] for r in rows])
        print("server log (end):", server_log[-3000:])
        raise SystemExit(1)


if __name__ == "__main__":
    main()
