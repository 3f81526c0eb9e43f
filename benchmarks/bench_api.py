"""Load test of the REST API: N concurrent clients against a real uvicorn server.

    .venv/bin/python benchmarks/bench_api.py                       # 50 clients, 60 s
    .venv/bin/python benchmarks/bench_api.py --duration 10 --clients 20
    .venv/bin/python benchmarks/bench_api.py --think-time 0.5         # 50 users pausing 0.5 s on average

What runs: a fresh PostgreSQL database (created through ``TRACEDRAFT_TEST_PG_URL``, default the trust-auth
``postgres`` user on 127.0.0.1:5432, or ``--database-url``; migrated, and dropped at the end), one
organization with an API key, and the API as deployed, ``tracedraft serve`` (uvicorn; ``--workers``
processes, default ``TRACEDRAFT_API_WORKERS``: one per usable CPU, at most 4) on 127.0.0.1 in a subprocess
with ``pipeline=celery`` (jobs are really enqueued on a Redis database of their own, ``--broker-url``,
flushed at the end; no worker consumes them, so no ML runs), log level WARNING and the job rate limit off.
Each client sends its next request when the previous answer arrived (closed loop), after a pause when
``--think-time`` is set (below), over a weighted mix: create a job (with an Idempotency-Key), list jobs (with
a metadata filter, paging), read a job, read a job's events, and (``--upload-share``) upload a small dataset.
Reported: requests, errors (any non-2xx or transport error), p50/p90/p99/max latency per operation and for all
non-upload calls, throughput, the load average before and after (the machine may be shared), and the CPU
seconds per request of the server processes, of this client process and of PostgreSQL during the load (Linux
/proc), and from those the throughput the CPUs could give if nothing else ran on them (the capacity: measured
anew by every run, so a share of it compares runs on one machine only roughly).
Goal: zero errors and p99 under 200 ms for non-upload calls.

``--think-time S`` gives each client a pause between an answer and its next request, drawn from an
exponential distribution of mean S seconds (the "users with a wait time" model of locust): the latency then
measures the service at an offered load of about clients / (S + latency) requests/s instead of the queue of
a saturated server. Both are worth reading: S = 0 gives the capacity, S > 0 the latency users see at a
given load; the printed offered rate says which regime a run was in.

Closed loop means Little's law holds: mean latency = clients / throughput. With 50 clients, a p99 under
200 ms needs a throughput of roughly 50 / 0.1 s = 500 requests/s, i.e. about 4 ms of CPU per request for
client, server and database together on 2 CPUs that nothing else uses.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PG_ADMIN = os.environ.get("TRACEDRAFT_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def traces(n: int, tag: str) -> bytes:
    lines = []
    for i in range(n):
        lines.append(json.dumps({"messages": [
            {"role": "user", "content": f"list dir{i}{tag}"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function", "function": {
                "name": "ls", "arguments": json.dumps({"path": f"/d{i}{tag}"})}}]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "a.py"},
            {"role": "assistant", "content": "done"}]}))
    return ("\n".join(lines) + "\n").encode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _proc_stats() -> dict[int, tuple[int, str, float]]:
    """pid -> (parent pid, command name, CPU seconds used) for every process (Linux /proc; {} elsewhere)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    out = {}
    for d in Path("/proc").glob("[0-9]*") if Path("/proc/self/stat").exists() else []:
        try:
            raw = (d / "stat").read_text()
        except OSError:
            continue
        name = raw[raw.index("(") + 1:raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2:].split()
        out[int(d.name)] = (int(fields[1]), name, (int(fields[11]) + int(fields[12])) / tick)
    return out


def cpu_seconds(server_pid: int) -> dict[str, float]:
    """CPU seconds used so far by the server's process tree, this process, and PostgreSQL's processes."""
    stats = _proc_stats()
    tree, todo = set(), [server_pid]
    while todo:
        pid = todo.pop()
        tree.add(pid)
        todo += [p for p, (ppid, _, _) in stats.items() if ppid == pid and p not in tree]
    return {"server": sum(stats[p][2] for p in tree if p in stats),
            "client": stats.get(os.getpid(), (0, "", 0.0))[2],
            "postgres": sum(c for _, name, c in stats.values() if name in ("postgres", "postmaster"))}


def worst_seconds(timeline: list[tuple[float, float, str]], n: int = 3, slow_s: float = 0.2) -> list[dict]:
    """The ``n`` seconds of the run (by request start) with the most non-upload requests slower than
    ``slow_s``: where a stall sits in time, which a whole-run percentile hides."""
    by_sec: dict[int, list[float]] = {}
    for start, lat, op in timeline:
        if op != "upload":
            by_sec.setdefault(int(start), []).append(lat)
    rows = [{"second": sec, "requests": len(lats), "slow": sum(x > slow_s for x in lats),
             "max_ms": round(max(lats) * 1e3, 1)} for sec, lats in by_sec.items()]
    rows.sort(key=lambda r: (r["slow"], r["max_ms"]), reverse=True)
    return [r for r in rows[:n] if r["slow"]]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    k = min(len(values) - 1, max(0, round(q / 100 * (len(values) - 1))))
    return values[k]


class Stats:
    def __init__(self) -> None:
        self.lat: dict[str, list[float]] = {}
        self.errors: dict[str, int] = {}
        self.samples: list[str] = []
        self.t0 = time.perf_counter()
        self.timeline: list[tuple[float, float, str]] = []  # (start - t0, latency, op), every request

    def add(self, op: str, start: float, seconds: float, ok: bool, detail: str = "") -> None:
        self.lat.setdefault(op, []).append(seconds)
        self.timeline.append((start - self.t0, seconds, op))
        if not ok:
            self.errors[op] = self.errors.get(op, 0) + 1
            if len(self.samples) < 5:
                self.samples.append(f"{op}: {detail[:200]}")


def make_clients(n: int, base: str, key: str) -> list[httpx.AsyncClient]:
    """``n`` clients of one connection each, built before the clock starts and sharing one SSL context:
    httpx builds a context per client otherwise (~65 ms of CPU each, CA bundle included, even for http://),
    which, done inside the timed loop, blocked this event loop for ~2.6 s at the start of every run and
    showed up as a ~600 ms 'stall' of every request in flight."""
    ctx = httpx.create_ssl_context()
    headers = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    return [httpx.AsyncClient(base_url=base, headers=headers, timeout=30, limits=limits, verify=ctx)
            for _ in range(n)]


async def client_loop(i: int, http: httpx.AsyncClient, dataset_id: str, job_ids: list[str], deadline: float,
                      stats: Stats, upload_share: float, think_time: float = 0.0) -> None:
    rng = random.Random(i)
    async with http:
        while time.perf_counter() < deadline:
            if think_time > 0:
                await asyncio.sleep(min(rng.expovariate(1.0 / think_time), max(0.0, deadline - time.perf_counter())))
                if time.perf_counter() >= deadline:
                    break
            r = rng.random()
            if r < upload_share:
                op = "upload"
                req = http.post("/v1/datasets?filename=t.jsonl", content=traces(20, f"{i}-{rng.random()}"),
                                headers={"Content-Type": "application/jsonl"})
            elif r < upload_share + 0.15:
                op = "create_job"
                body = {"dataset_id": dataset_id, "target": {"model": "smollm2-135m-instruct"},
                        "recipe": {"max_steps": rng.randint(1, 1000)}, "metadata": {"client": str(i)}}
                req = http.post("/v1/jobs", json=body, headers={"Idempotency-Key": uuid.uuid4().hex})
            elif r < upload_share + 0.45:
                op = "list_jobs"
                params = {"limit": 20} if rng.random() < 0.5 else {"limit": 20, "metadata.client": str(i)}
                req = http.get("/v1/jobs", params=params)
            elif r < upload_share + 0.65:
                op = "get_job"
                req = http.get(f"/v1/jobs/{rng.choice(job_ids)}")
            else:
                op = "events"
                req = http.get(f"/v1/jobs/{rng.choice(job_ids)}/events", params={"after": 0, "limit": 50})
            t0 = time.perf_counter()
            try:
                resp = await req
                ok, detail = resp.status_code < 300, f"{resp.status_code} {resp.text}"
                if op == "create_job" and ok and len(job_ids) < 5000:
                    job_ids.append(resp.json()["id"])
            except httpx.HTTPError as exc:
                ok, detail = False, f"{type(exc).__name__}: {exc}"
            stats.add(op, t0, time.perf_counter() - t0, ok, detail)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of load (default 60)")
    ap.add_argument("--clients", type=int, default=50, help="concurrent clients (default 50)")
    ap.add_argument("--workers", type=int, default=None,
                    help="API worker processes (default: TRACEDRAFT_API_WORKERS, 0 = one per usable CPU)")
    ap.add_argument("--upload-share", type=float, default=0.02, help="fraction of calls that upload (0.02)")
    ap.add_argument("--database-url", default=None, help="use this (migrated) database instead of a fresh one")
    ap.add_argument("--broker-url", default="redis://127.0.0.1:6379/13", help="Redis for the Celery queues")
    ap.add_argument("--think-time", type=float, default=0.0,
                    help="mean seconds a client waits between an answer and its next request (exponential; "
                         "default 0: closed loop, the server saturated)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args()

    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    from service.auth import create_api_key, create_org
    from service.cli.ops import api_workers, usable_cpus
    from service.db.session import make_engine, session_factory, upgrade
    from service.settings import Settings

    workers = args.workers or api_workers(Settings().api_workers)

    created_db = None
    url = args.database_url
    if url is None:
        created_db = f"tracedraft_bench_{uuid.uuid4().hex[:10]}"
        admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
        with admin.connect() as c:
            c.exec_driver_sql(f'CREATE DATABASE "{created_db}"')
        admin.dispose()
        url = make_url(PG_ADMIN).set(database=created_db).render_as_string(hide_password=False)
        upgrade(url)
    home = Path(tempfile.mkdtemp(prefix="bench-api-"))
    engine = make_engine(url)
    with session_factory(engine)() as s:
        org = create_org(s, f"bench-{uuid.uuid4().hex[:6]}")
        key, _ = create_api_key(s, org, "bench", "admin")
    engine.dispose()

    port = free_port()
    env = {**os.environ, "TRACEDRAFT_DATABASE_URL": url, "TRACEDRAFT_HOME": str(home),
           "TRACEDRAFT_PIPELINE": "celery", "TRACEDRAFT_BROKER_URL": args.broker_url,
           "TRACEDRAFT_JOB_RATE_LIMIT_PER_MINUTE": "0", "TRACEDRAFT_LOG_LEVEL": "WARNING",
           "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
         "--workers", str(workers)], env=env, cwd=ROOT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        else:
            raise SystemExit("the server did not become ready")
        h = {"Authorization": f"Bearer {key}"}
        ds = httpx.post(f"{base}/v1/datasets?filename=seed.jsonl", content=traces(40, "seed"),
                        headers={**h, "Content-Type": "application/jsonl"}, timeout=30).json()
        job_ids = []
        for i in range(20):  # jobs with some events to read
            body = {"dataset_id": ds["id"], "target": {"model": "smollm2-135m-instruct"}, "metadata": {"seed": str(i)}}
            job_ids.append(httpx.post(f"{base}/v1/jobs", json=body, headers=h, timeout=30).json()["id"])
        from service import jobs as jobs_mod

        engine = make_engine(url)
        with session_factory(engine)() as s:
            for jid in job_ids:
                for k in range(30):
                    jobs_mod.add_event(s, jid, "info", "metrics", f"step {k}", {"step": k, "loss": 1.0 / (k + 1)},
                                       commit=False)
            s.commit()
        engine.dispose()

        stats = Stats()

        async def run() -> float:
            clients = make_clients(args.clients, base, key)
            t0 = stats.t0 = time.perf_counter()
            deadline = t0 + args.duration
            await asyncio.gather(*(client_loop(i, http, ds["id"], job_ids, deadline, stats, args.upload_share,
                                               args.think_time)
                                   for i, http in enumerate(clients)))
            return time.perf_counter() - t0

        load_before = os.getloadavg()
        cpu0 = cpu_seconds(server.pid)
        elapsed = asyncio.run(run())
        cpu1 = cpu_seconds(server.pid)
        load_after = os.getloadavg()
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        if created_db:
            admin = sa.create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
            with admin.connect() as c:
                c.exec_driver_sql(f'DROP DATABASE IF EXISTS "{created_db}" WITH (FORCE)')
            admin.dispose()
        with contextlib.suppress(Exception):  # the queued (never consumed) stage messages
            import redis

            redis.Redis.from_url(args.broker_url).flushdb()

    rows = {}
    non_upload: list[float] = []
    for op, lat in sorted(stats.lat.items()):
        rows[op] = {"n": len(lat), "errors": stats.errors.get(op, 0), "p50_ms": percentile(lat, 50) * 1e3,
                    "p90_ms": percentile(lat, 90) * 1e3, "p99_ms": percentile(lat, 99) * 1e3,
                    "max_ms": max(lat) * 1e3, "mean_ms": statistics.fmean(lat) * 1e3}
        if op != "upload":
            non_upload += lat
    total = sum(len(v) for v in stats.lat.values())
    errors = sum(stats.errors.values())
    cpu_ms = {k: round(1e3 * (cpu1[k] - cpu0[k]) / max(total, 1), 2) for k in cpu0}
    # What the machine could serve if this benchmark had it alone: CPUs / CPU time per request.
    cpus = usable_cpus()
    per_request_s = sum(cpu_ms.values()) / 1e3
    capacity = round(cpus / per_request_s, 1) if per_request_s > 0 else None
    min_latency_ms = round(1e3 * args.clients / capacity, 1) if capacity else None
    summary = {"clients": args.clients, "think_time_s": args.think_time, "duration_s": round(elapsed, 1),
               "workers": workers,
               "requests": total, "errors": errors, "rps": round(total / elapsed, 1),
               "load_avg_before": [round(x, 2) for x in load_before],
               "load_avg_after": [round(x, 2) for x in load_after], "cpu_ms_per_request": cpu_ms,
               "cpus": cpus, "capacity_rps": capacity, "min_mean_latency_ms": min_latency_ms,
               "non_upload_p50_ms": round(percentile(non_upload, 50) * 1e3, 1),
               "non_upload_p99_ms": round(percentile(non_upload, 99) * 1e3, 1), "ops": rows,
               "worst_seconds": worst_seconds(stats.timeline), "error_samples": stats.samples}
    if args.think_time > 0 and capacity:
        summary["offered_share_of_capacity"] = round(summary["rps"] / capacity, 3)
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    regime = (f"think time {args.think_time} s (offered load {summary['rps']} req/s = "
              f"{summary['rps'] / capacity:.0%} of capacity)" if args.think_time > 0 and capacity
              else "closed loop, no think time")
    print(f"{args.clients} clients, {regime}, {elapsed:.1f} s, API workers={workers}: {total} requests "
          f"({summary['rps']} req/s), {errors} errors")
    print("load average (1/5/15 min) before {} after {}; CPU ms per request: server {server}, client {client}, "
          "postgres {postgres}".format(" ".join(f"{x:.2f}" for x in load_before),
                                       " ".join(f"{x:.2f}" for x in load_after), **cpu_ms))
    if summary["capacity_rps"]:
        print(f"capacity if the {summary['cpus']} CPUs ran nothing else: {summary['capacity_rps']} req/s at "
              f"{sum(cpu_ms.values()):.2f} CPU ms per request, so a mean latency of at least "
              f"{summary['min_mean_latency_ms']} ms for {args.clients} closed-loop clients (Little's law)")
    print(f"{'operation':<12}{'n':>7}{'err':>5}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    for op, r in rows.items():
        print(f"{op:<12}{r['n']:>7}{r['errors']:>5}{r['p50_ms']:>9.1f}{r['p90_ms']:>9.1f}{r['p99_ms']:>9.1f}"
              f"{r['max_ms']:>9.1f}")
    print(f"non-upload calls: p50 {summary['non_upload_p50_ms']} ms, p99 {summary['non_upload_p99_ms']} ms "
          f"(goal: 0 errors, p99 < 200 ms)")
    for r in summary["worst_seconds"]:
        print(f"  second {r['second']} of the load: {r['slow']} of {r['requests']} non-upload requests over 200 ms "
              f"(max {r['max_ms']} ms)")
    for s in stats.samples:
        print("  error sample:", s)


if __name__ == "__main__":
    main()
