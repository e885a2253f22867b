"""Fairness of the HTTP service: a tenant's small upload behind another tenant's large one, and
other tenants' keys during a flood of wrong secrets.

Usage: python bench/service_fairness.py [--files 40] [--flood-threads 8] [--probes 20] [--out NAME]

In process (FastAPI's TestClient, the packaged MiniLM embedder, parsing in the calling process),
over a temporary data directory:

1. **Queue**: tenant ``acme`` uploads ``--files`` Markdown notes, then tenant ``globex`` one
   40-byte note; reports the seconds until globex's job finished and until acme's did.
2. **Flood**: ``--flood-threads`` threads of one address send wrong secrets for a known key id
   back to back while another address, ``--probes`` times (0.2 s apart), tries a brand-new key of
   a new tenant and the flooded id's own (already verified) key.
   Reports the statuses of both, and ``ragstrata_rate_limited_total`` against the number of 429
   responses.

Prints a Markdown table and writes bench/results/<out>.json (default ``service_fairness``).
Runs against whatever ``ragstrata`` is importable, so the same script measures a before and an
after (``PYTHONPATH=<checkout>/src``).
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def _wait(client: Any, headers: dict[str, str], job_id: str) -> dict[str, Any]:
    while True:
        job: dict[str, Any] = client.get(f"/v1/jobs/{job_id}", headers=headers).json()
        if job["state"] in ("succeeded", "partial", "failed", "cancelled"):
            return job
        time.sleep(0.05)


def _queue(service: Any, client: Any, files: int) -> dict[str, Any]:
    acme = {"Authorization": "Bearer " + service.keys.create("acme")[0]}
    globex = {"Authorization": "Bearer " + service.keys.create("globex")[0]}
    docs = [
        {
            "name": f"note-{i:03d}.md",
            "text": f"# Note {i}\n\nLedger entry {i}: {i * 7} crates to warehouse {i % 5}. " * 20,
        }
        for i in range(files)
    ]
    started = time.perf_counter()
    large = client.post("/v1/collections/ledger/documents", headers=acme, json={"documents": docs})
    small = client.post(
        "/v1/collections/notes/documents",
        headers=globex,
        json={"documents": [{"name": "hello.md", "text": "# Hello\n\nA forty-byte note."}]},
    )
    assert large.status_code == 202 and small.status_code == 202, (large.text, small.text)
    small_job = _wait(client, globex, small.json()["job_id"])
    small_s = time.perf_counter() - started
    large_job = _wait(client, acme, large.json()["job_id"])
    large_s = time.perf_counter() - started
    return {
        "large_files": files,
        "small_upload_done_s": round(small_s, 2),
        "large_upload_done_s": round(large_s, 2),
        "states": [small_job["state"], large_job["state"]],
    }


def _flood(service: Any, app: Any, attackers: int, probes: int) -> dict[str, Any]:
    from fastapi.testclient import TestClient
    from prometheus_client.parser import text_string_to_metric_families

    attacker = TestClient(app, client=("10.0.0.66", 40000))
    legit = TestClient(app, client=("10.0.0.7", 40001))
    key = service.keys.create("victim")[0]
    victim = {"Authorization": f"Bearer {key}"}
    assert legit.get("/v1/collections", headers=victim).status_code == 200
    wrong = {"Authorization": f"Bearer {key[:-4]}{'AAAA' if not key.endswith('AAAA') else 'BBBB'}"}
    flood: Counter[int] = Counter()
    fresh: Counter[int] = Counter()
    known: Counter[int] = Counter()
    stop = threading.Event()
    lock = threading.Lock()

    def attack() -> None:
        while not stop.is_set():
            status = attacker.get("/v1/collections", headers=wrong).status_code
            with lock:
                flood[status] += 1

    threads = [threading.Thread(target=attack) for _ in range(attackers)]
    for thread in threads:
        thread.start()
    time.sleep(1.0)  # the flood is on before the first legitimate try
    flood_started = time.perf_counter() - 1.0
    for i in range(probes):
        new = {"Authorization": "Bearer " + service.keys.create(f"t{i}")[0]}
        fresh[legit.get("/v1/collections", headers=new).status_code] += 1
        known[legit.get("/v1/collections", headers=victim).status_code] += 1
        time.sleep(0.2)
    stop.set()
    for thread in threads:
        thread.join()
    flood_s = time.perf_counter() - flood_started
    from ragstrata.errors import ConfigError

    metrics_key = None
    try:
        metrics_key = service.keys.create("ops", scopes=("metrics",))[0]
    except ConfigError:  # a version without the metrics scope: /metrics is public there
        metrics_key = None
    headers = {"Authorization": f"Bearer {metrics_key}"} if metrics_key else {}
    text = legit.get("/metrics", headers=headers).text
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples]
    counted = sum(s.value for s in samples if s.name == "ragstrata_rate_limited_total")
    answered = sum(
        s.value
        for s in samples
        if s.name == "ragstrata_http_requests_total" and s.labels.get("status") == "429"
    )
    return {
        "flood_threads": attackers,
        "flood_requests": sum(flood.values()),
        "flood_per_s": round(sum(flood.values()) / flood_s, 1),
        "flood_statuses": dict(sorted(flood.items())),
        "new_keys_of_other_tenants": dict(sorted(fresh.items())),
        "known_key_of_flooded_id": dict(sorted(known.items())),
        "responses_429": int(answered),
        "rate_limited_total": int(counted),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--flood-threads", type=int, default=8)
    parser.add_argument("--probes", type=int, default=20)
    parser.add_argument("--out", default="service_fairness")
    args = parser.parse_args()

    from fastapi.testclient import TestClient

    import ragstrata
    from ragstrata.config import IngestConfig, RagConfig, ServiceConfig
    from ragstrata.embed.local import MiniLMEmbedder
    from ragstrata.service.app import create_app

    embedder = MiniLMEmbedder()
    embedder.embed_documents(["warm up"])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cfg = RagConfig(
            home=root / "home",
            ingest=IngestConfig(workers=0),
            service=ServiceConfig(rate_limit_per_s=10_000.0, rate_limit_burst=10_000),
        )
        app = create_app(cfg, embedder=embedder, data_dir=root / "data")
        with TestClient(app) as client:
            service = app.state.service
            queue = _queue(service, client, args.files)
            flood = _flood(service, app, args.flood_threads, args.probes)
    result = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "ragstrata": ragstrata.__file__,
        "machine": platform.platform(),
        "queue": queue,
        "flood": flood,
    }
    print("| measure | value |\n| --- | --- |")
    for section in (queue, flood):
        for name, value in section.items():
            print(f"| {name} | {value} |")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
