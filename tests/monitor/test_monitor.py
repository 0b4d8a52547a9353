"""Monitoring: task names, events, the scheduler's /dscir/ page and /metrics, over HTTP
against a real `dask scheduler` process (preloaded) and an embedded LocalCluster
(plugin registered by the driver)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from distributed import Client, LocalCluster

import dscir
from dscir import monitor
from support.daskprocs import DASK, dask_processes


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, str, str]:
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status, r.headers.get("Content-Type", ""), r.read().decode()


def _metric(text: str, name: str, run: str) -> float:
    m = re.search(rf'^{name}\{{[^}}]*run="{run}"[^}}]*\}} (\S+)$', text, re.M)
    assert m, f"{name} for {run} not in /metrics"
    return float(m.group(1))


@pytest.fixture(scope="module")
def preloaded_scheduler(tmp_path_factory):
    """`dask scheduler --preload dscir.monitor` with a dashboard, one worker."""
    if DASK is None:
        pytest.skip("the `dask` command is not installed")
    http = f"127.0.0.1:{_free_port()}"
    with dask_processes(tmp_path_factory.mktemp("monitor"), 1, scheduler_args=(
            "--dashboard-address", http, "--preload", "dscir.monitor")) as address:
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(1, timeout=120)
            yield client, f"http://{http}"


def test_preloaded_scheduler_serves_page_json_and_metrics(preloaded_scheduler,
                                                          synthetic_store):
    client, base = preloaded_scheduler
    store, _ = synthetic_store
    # Before any run: the page and an empty list are already served (preload).
    status, ctype, page = _get(base + "/dscir/")
    assert status == 200 and ctype.startswith("text/html") and "dscir runs" in page
    assert _get(base + "/dscir")[2] == page  # redirected to the trailing slash
    before = {r["run"] for r in json.loads(_get(base + "/dscir/api/runs")[2])["runs"]}

    events: list[dict] = []
    done = threading.Event()

    def on_event(msg: dict) -> None:
        events.append(msg)
        if msg["event"] == "finish":
            done.set()

    monitor.subscribe(client, on_event)
    try:
        model = dscir.LDA(n_topics=4, n_iter=6, eval_every=3, batch_size=30, sweeps=6,
                          eval_sweeps=6, seed=2, progress=False).fit(store, client=client)
        assert done.wait(30), "the finish event did not reach the subscriber"
    finally:
        client.unsubscribe_topic(monitor.TOPIC)

    kinds = [e["event"] for e in events]
    assert kinds == ["start"] + ["iteration"] * 3 + ["evaluation"] + ["iteration"] * 3 \
        + ["evaluation", "finish"]
    run = events[0]["run"]
    assert {e["run"] for e in events} == {run} and run not in before
    assert [e["iteration"] for e in events if e["event"] == "iteration"] == list(range(1, 7))
    scores = [e["score"] for e in events if e["event"] == "evaluation"]
    assert scores == [ev.perplexity for ev in model.evaluations_]
    history = model.history_
    assert [e["n_tokens"] for e in events if e["event"] == "iteration"] == \
        history["n_tokens"].tolist()

    runs = {r["run"]: r for r in json.loads(_get(base + "/dscir/api/runs")[2])["runs"]}
    r = runs[run]
    assert (r["status"], r["iteration"], r["n_iter"], r["model"], r["sampler"]) == \
        ("finished", 6, 6, "lda", "scir")
    assert r["score"] == scores[-1] and r["tokens_per_second"] > 0
    detail = json.loads(_get(base + f"/dscir/api/runs/{run}")[2])
    assert [i["iteration"] for i in detail["iterations"]] == list(range(1, 7))
    assert {"compute", "compute_sum", "transfer", "queue", "update", "n_docs"} <= \
        set(detail["iterations"][0])
    with pytest.raises(urllib.error.HTTPError) as err:
        _get(base + "/dscir/api/runs/no-such-run")
    assert err.value.code == 404

    metrics = _get(base + "/metrics")[2]
    assert _metric(metrics, "dscir_iteration", run) == 6
    assert _metric(metrics, "dscir_run_running", run) == 0
    assert _metric(metrics, "dscir_tokens_per_second", run) == pytest.approx(
        r["tokens_per_second"])
    assert _metric(metrics, "dscir_heldout_score", run) == pytest.approx(scores[-1])
    assert re.search(rf'dscir_heldout_score\{{[^}}]*metric="perplexity"[^}}]*run="{run}"',
                     metrics)

    # Tasks read as dscir steps in the task stream and progress panes.
    prefixes = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    # (the Gibbs rounds, and the scoring of resident documents, go through the runners)
    assert {"dscir-lda-shard", "dscir-lda-runner"} <= set(prefixes)


def test_dp_mixture_reports_clusters(preloaded_scheduler, dpmm_store):
    client, base = preloaded_scheduler
    path, _ = dpmm_store
    model = dscir.DPMixture(batch_size=100, n_iter=4, eval_every=2, burn_in=0, thin=2,
                            progress=False).fit(path, client=client)
    for _ in range(100):  # events are delivered asynchronously
        runs = [r for r in json.loads(_get(base + "/dscir/api/runs")[2])["runs"]
                if r["model"] == "dpmm" and r["status"] == "finished"]
        if runs:
            break
        time.sleep(0.1)
    (r,) = runs
    assert r["metric"] == "log_predictive" and r["iteration"] == 4
    assert r["n_clusters"] == model.history_["n_clusters"][-1]
    assert r["score"] == pytest.approx(model.score())
    metrics = _get(base + "/metrics")[2]
    assert _metric(metrics, "dscir_occupied_clusters", r["run"]) == r["n_clusters"]
    prefixes = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    assert {"dscir-dpmm-read", "dscir-dpmm-allocation", "dscir-dpmm-score"} <= set(prefixes)


def test_driver_registers_the_monitor_on_a_local_cluster(synthetic_store):
    store, _ = synthetic_store
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address="127.0.0.1:0",
                      silence_logs=40) as cluster, Client(cluster) as client:
        base = client.dashboard_link.rsplit("/", 1)[0]
        with pytest.raises(urllib.error.HTTPError):
            _get(base + "/dscir/api/runs")  # nothing registered yet
        dscir.LDA(n_topics=4, n_iter=2, batch_size=30, sweeps=4, progress=False).fit(
            store, client=client)
        for _ in range(100):
            runs = json.loads(_get(base + "/dscir/api/runs")[2])["runs"]
            if runs and runs[0]["status"] == "finished":
                break
            time.sleep(0.1)
        assert [(r["model"], r["iteration"], r["status"]) for r in runs] == \
            [("lda", 2, "finished")]
        assert "dscir_iteration{" in _get(base + "/metrics")[2]


def test_run_record_rates_and_foreign_events():
    m = monitor.DscirMonitor()
    m.log_event("other-topic", {"run": "x"})
    m.log_event(monitor.TOPIC, "not a dict")
    assert m.summaries() == []
    m.log_event(monitor.TOPIC, {"run": "r", "event": "start", "model": "lda", "n_iter": 3,
                                "iteration": 0, "time": 1.0})
    for i, (docs, tokens, wall) in enumerate([(10, 100, 1.0), (30, 300, 1.0)], 1):
        m.log_event(monitor.TOPIC, {"run": "r", "event": "iteration", "iteration": i,
                                    "n_docs": docs, "n_tokens": tokens, "wall": wall})
    (s,) = m.summaries()
    assert (s["iteration"], s["docs_per_second"], s["tokens_per_second"]) == (2, 20.0, 200.0)
    assert s["status"] == "running" and s["score"] is None


XSS = "<script>alert(1)</script>"


def _request(url: str, method: str, body: bytes | None = None) -> int:
    req = urllib.request.Request(url, data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as err:
        return err.code


def test_page_and_api_are_read_only_and_show_values_as_text():
    """A run whose name, store, settings and words carry markup: the JSON holds
    the raw strings, the page is the packaged file (nothing interpolated on the
    server) and puts values in the DOM as text only; only GET is served."""
    from importlib import resources

    events = [
        {"run": XSS, "event": "start", "model": "lda", "metric": "perplexity",
         "iteration": 0, "n_iter": 3, "sampler": XSS, "store": f"/data/{XSS}.zarr",
         "settings": {"vocabulary": ["<b>bold</b>", "&amp;", XSS, '"quoted"']}},
        {"run": XSS, "event": "iteration", "iteration": 1, "n_docs": 10, "n_tokens": 100,
         "wall": 1.0},
        {"run": XSS, "event": "evaluation", "iteration": 1, "score": 12.5,
         "metric": "<img src=x onerror=alert(1)>"},
        {"run": "diverged", "event": "evaluation", "iteration": 1, "score": float("inf"),
         "metric": "perplexity"},
        {"run": "diverged", "event": "iteration", "iteration": 1, "wall": float("nan")},
    ]
    http = f"127.0.0.1:{_free_port()}"
    with LocalCluster(n_workers=0, processes=False, dashboard_address=http,
                      silence_logs=40) as cluster, Client(cluster) as client:
        client.register_plugin(monitor.DscirMonitor(), name=monitor.PLUGIN_NAME)
        for e in events:
            client.log_event(monitor.TOPIC, e)
        base = f"http://{http}"
        for _ in range(100):  # events are delivered asynchronously
            text = _get(base + "/dscir/api/runs")[2]
            runs = json.loads(text, parse_constant=pytest.fail)["runs"]
            if len(runs) == 2 and runs[0]["score"] is not None and runs[1]["iteration"] == 1:
                break
            time.sleep(0.1)
        r, diverged = runs
        assert (r["run"], r["sampler"], r["store"]) == (XSS, XSS, f"/data/{XSS}.zarr")
        assert diverged["score"] is None  # inf is not JSON: strict parsers (JSON.parse) refuse it
        text = _get(base + "/dscir/api/runs/diverged")[2]
        assert json.loads(text, parse_constant=pytest.fail)["iterations"][0]["wall"] is None
        assert r["settings"]["vocabulary"] == events[0]["settings"]["vocabulary"]
        status, ctype, text = _get(base + "/dscir/api/runs/"
                                   + urllib.parse.quote(XSS, safe=""))
        assert status == 200 and ctype.startswith("application/json")
        detail = json.loads(text)
        assert detail["run"] == XSS and detail["evaluations"][0]["metric"] == events[2]["metric"]

        status, ctype, page = _get(base + "/dscir/")
        assert ctype.startswith("text/html")
        assert page == resources.files("dscir.monitor").joinpath("page.html").read_text("utf-8")
        assert "alert(1)" not in page and "onerror" not in page
        assert "innerHTML" not in page and "outerHTML" not in page \
            and "insertAdjacentHTML" not in page and "document.write" not in page
        assert "textContent" in page
        with urllib.request.urlopen(base + "/dscir/", timeout=30) as resp:
            policy = resp.headers["Content-Security-Policy"]
            assert resp.headers["X-Content-Type-Options"] == "nosniff"
        script = page.split("<script>", 1)[1].split("</script>", 1)[0]
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"script-src 'sha256-{digest}'" in policy and "default-src 'none'" in policy

        for url in (base + "/dscir/", base + "/dscir", base + "/dscir/api/runs",
                    base + "/dscir/api/runs/" + urllib.parse.quote(XSS, safe="")):
            for method in ("POST", "PUT", "DELETE", "PATCH"):
                assert _request(url, method, b"{}" if method != "DELETE" else None) == 405, \
                    (method, url)
        assert json.loads(_get(base + "/dscir/api/runs")[2])["runs"] == runs  # unchanged
