"""The cluster recipes of clusters/: the local and TLS ones run here on loopback
(real `dask scheduler` / `dask worker` processes, certificates made by the
recipe's own script); the others (SSH, SLURM, PBS, Kubernetes) need machines
this test suite does not have, so their files are only checked to parse."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dask
import numpy as np
import pytest
import yaml
from distributed import Client, Security

from dscir.api import LDA
from dscir.cli import main
from dscir.cli.quickstart import quickstart_store
from dscir.engine.cluster import dask_client, numba_threadsafe
from dscir.runs import Run
from dscir.errors import DscirError
from support.daskprocs import DASK, dask_processes, stop, wait_for_file

CLUSTERS = Path(__file__).resolve().parents[2] / "clusters"
RECIPES = ("local", "ssh", "slurm", "pbs", "kubernetes", "tls", "netns")
BIN = Path(sys.executable).parent
needs_dask = pytest.mark.skipif(DASK is None, reason="the `dask` command is not installed")
needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None,
                                   reason="openssl is not installed")
# the recipes call `dask` and `python`: the ones of this interpreter
ENV = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}", PYTHONUNBUFFERED="1")
FIT = dict(n_topics=4, n_iter=3, batch_size=40, sweeps=5, eval_sweeps=5, thin=1, seed=2,
           progress=False)
FIT_ARGS = ["--topics", "4", "--iterations", "3", "--batch-size", "40", "--sweeps", "5",
            "--eval-sweeps", "5", "--thin", "1", "--seed", "2", "--no-progress"]


def dscir(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dscir", *args], capture_output=True,
                          text=True, timeout=600, env=env or ENV)


@pytest.fixture(scope="module")
def reuters(tmp_path_factory):
    """The packaged Reuters sample (395 documents, every 10th held out)."""
    return str(quickstart_store(tmp_path_factory.mktemp("reuters") / "reuters.zarr"))


@pytest.fixture(scope="module")
def reference(reuters, one_worker, tmp_path_factory):
    """The chain every recipe must reproduce: same seed, same chain, whatever the
    cluster (an embedded one-worker LocalCluster here)."""
    path = tmp_path_factory.mktemp("reference") / "run.zarr"
    LDA(**FIT).fit(reuters, client=one_worker, out=path)
    return Run.open(path)


def same_chain(run: str | Path, reference: Run) -> bool:
    other = Run.open(run)
    return (np.array_equal(other.state["log_theta"], reference.state["log_theta"])
            and np.array_equal(other.phi_mean, reference.phi_mean))


# -- local ---------------------------------------------------------------------


def cores() -> int:
    """The cores `nproc` counts."""
    return len(os.sched_getaffinity(0))


def numba_threads(client: Client) -> set[tuple[int, str | None]]:
    """The workers' numba pool sizes and OMP_NUM_THREADS."""
    def threads():
        import numba

        return numba.config.NUMBA_NUM_THREADS, os.environ.get("OMP_NUM_THREADS")

    return set(client.run(threads).values())


@contextlib.contextmanager
def start_cluster(cluster_dir: Path, **env: str):
    """start-cluster.sh DIR with ``env`` added; yields its output and a client;
    stop-cluster.sh at the end, which must leave none of its processes."""
    recipe = CLUSTERS / "local"
    env = dict(ENV, PORT="0", DASHBOARD="none", **env)
    pids = []
    try:
        started = subprocess.run([recipe / "start-cluster.sh", cluster_dir], env=env,
                                 capture_output=True, text=True, timeout=300)
        assert started.returncode == 0, started.stderr
        pids = [int(p) for p in (cluster_dir / "pids").read_text().split()]
        with Client(scheduler_file=str(cluster_dir / "scheduler.json"), timeout="60s") as c:
            yield started, c
    finally:
        stopped = subprocess.run([recipe / "stop-cluster.sh", cluster_dir], env=env,
                                 capture_output=True, text=True, timeout=120)
    assert stopped.returncode == 0, stopped.stderr
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@needs_dask
def test_local_recipes_run_dscir(reuters, reference, tmp_path):
    """start-cluster.sh's scheduler and worker (by default one, with a thread per
    core and numba's as many) serve `dscir fit lda --scheduler-file`;
    local_cluster.py's LocalCluster serves LDA.fit(scheduler_file=); same chain."""
    recipe = CLUSTERS / "local"
    cluster_dir = tmp_path / "dask-cluster"
    # one worker of all the cores' threads where numba's threading layer allows it
    workers, threads = (1, cores()) if numba_threadsafe() else (min(cores(), 4), 1)
    with start_cluster(cluster_dir) as (started, client):
        assert f"with {workers} worker(s) of {threads} thread(s)" in started.stdout
        assert sorted(client.nthreads().values()) == [threads] * workers
        assert numba_threads(client) == {(threads, str(threads))}
        out = dscir("fit", "lda", reuters, *FIT_ARGS, "--out", str(tmp_path / "a"),
                    "--scheduler-file", str(cluster_dir / "scheduler.json"))
        assert out.returncode == 0, out.stderr
        assert "held-out perplexity" in out.stdout and "topic 3:" in out.stdout
        address = json.loads((cluster_dir / "scheduler.json").read_text())["address"]
        with dask.config.set({"scheduler-address": address}):  # DASK_SCHEDULER_ADDRESS
            with dask_client(n_workers=1) as client:
                assert client.scheduler.address == address
                assert len(client.nthreads()) == workers

    env = dict(ENV, DASHBOARD="none")
    sched_file = tmp_path / "local.json"
    proc = subprocess.Popen(
        [sys.executable, recipe / "local_cluster.py", "--port", "0",
         "--dashboard", "none", "--scheduler-file", sched_file],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_file(sched_file, proc, "local_cluster.py")
        LDA(**FIT).fit(reuters, scheduler_file=str(sched_file), out=tmp_path / "b")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        assert not sched_file.exists()
    finally:
        stop([proc])
    assert same_chain(tmp_path / "a", reference) and same_chain(tmp_path / "b", reference)


@needs_dask
@pytest.mark.parametrize("env, form", [
    ({"NWORKERS": "2", "NTHREADS": "1"}, (2, 1)),  # the single-threaded form, asked for
    # a threading layer that is not thread-safe: single-threaded workers, said so
    ({"NUMBA_THREADING_LAYER": "workqueue"}, (min(cores(), 4), 1)),
], ids=["workers-and-threads", "not-thread-safe"])
def test_local_start_cluster_takes_workers_and_threads(env, form, tmp_path):
    """NWORKERS and NTHREADS override start-cluster.sh's one worker of all the
    cores' threads, and its workers' numba threads follow; where numba's threading
    layer is not thread-safe it starts single-threaded workers instead."""
    workers, threads = form
    with start_cluster(tmp_path / "dask-cluster", **env) as (started, client):
        assert f"with {workers} worker(s) of {threads} thread(s)" in started.stdout
        assert ("not thread-safe" in started.stderr) == ("NUMBA_THREADING_LAYER" in env)
        assert sorted(client.nthreads().values()) == [threads] * workers
        assert numba_threads(client) == {(threads, str(threads))}


# -- TLS -------------------------------------------------------------------------


def make_certs(out: Path, *hosts: str) -> Path:
    done = subprocess.run([CLUSTERS / "tls" / "make-certs.sh", out, *hosts], env=ENV,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return out


def tls_args(certs: Path, role: str = "client") -> list[str]:
    return ["--tls-ca-file", str(certs / "ca.pem"), "--tls-cert", str(certs / f"{role}.pem"),
            "--tls-key", str(certs / f"{role}-key.pem")]


@pytest.fixture(scope="module")
def tls_cluster(tmp_path_factory):
    """`dask scheduler` and one `dask worker` on tls://127.0.0.1 with the recipe's
    certificates; yields (address, certificate directory)."""
    if DASK is None or shutil.which("openssl") is None:
        pytest.skip("needs the `dask` command and openssl")
    tmp = tmp_path_factory.mktemp("tls")
    certs = make_certs(tmp / "certs")
    with dask_processes(tmp, 1, host="tls://127.0.0.1", env=ENV,
                        scheduler_args=("--no-dashboard", *tls_args(certs, "scheduler")),
                        worker_args=tls_args(certs, "worker")) as address:
        assert address.startswith("tls://127.0.0.1:")
        client_security = Security(
            require_encryption=True, tls_ca_file=str(certs / "ca.pem"),
            tls_client_cert=str(certs / "client.pem"),
            tls_client_key=str(certs / "client-key.pem"))
        with Client(address, security=client_security, timeout="30s") as client:
            client.wait_for_workers(1, timeout=120)
            assert all(w.startswith("tls://") for w in client.scheduler_info()["workers"])
        yield address, certs


def test_tls_fit_by_cli_and_api(tls_cluster, reuters, reference, tmp_path):
    """`--tls-*` options, the recipe's Dask config (DASK_CONFIG) and the API's
    security= all reach the TLS cluster, and give the same chain."""
    address, certs = tls_cluster
    out = dscir("fit", "lda", reuters, *FIT_ARGS, "--address", address, *tls_args(certs),
                "--out", str(tmp_path / "cli"))
    assert out.returncode == 0, out.stderr
    assert "held-out perplexity" in out.stdout and "topic 3:" in out.stdout
    evaluated = dscir("evaluate", str(tmp_path / "cli"), "--address", address,
                      env=dict(ENV, DASK_CONFIG=str(certs)))
    assert evaluated.returncode == 0, evaluated.stderr
    assert "held-out perplexity" in evaluated.stdout

    security = {"ca_file": certs / "ca.pem", "cert": certs / "client.pem",
                "key": certs / "client-key.pem"}
    model = LDA(**FIT).fit(reuters, address=address, security=security,
                           out=tmp_path / "api")
    assert same_chain(tmp_path / "cli", reference) and same_chain(tmp_path / "api", reference)
    perplexity = model.perplexity(address=address, security=security)
    assert f"{perplexity:.2f}" in evaluated.stdout


def test_tls_cluster_refuses_clients_without_its_certificates(tls_cluster, reuters, tmp_path):
    address, certs = tls_cluster
    plain = address.replace("tls://", "tcp://")
    rogue = make_certs(tmp_path / "rogue")  # valid certificates of another CA
    with dask.config.set({"distributed.comm.timeouts.connect": "5s"}):
        for kwargs in ({"address": address}, {"address": plain},
                       {"address": address, "security": {
                           "ca_file": rogue / "ca.pem", "cert": rogue / "client.pem",
                           "key": rogue / "client-key.pem"}},
                       {"address": address, "security": {  # our CA, a stranger's key
                           "ca_file": certs / "ca.pem", "cert": rogue / "client.pem",
                           "key": rogue / "client-key.pem"}}):
            with pytest.raises(DscirError, match="cannot connect to the Dask scheduler"):
                with dask_client(**kwargs):
                    pass
    env = dict(ENV, DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="5s")
    for target in (address, plain):
        out = dscir("fit", "lda", reuters, *FIT_ARGS, "--address", target,
                    "--out", str(tmp_path / "run"), env=env)
        assert out.returncode == 1  # a runtime failure
        assert "cannot connect to the Dask scheduler" in out.stderr
        assert not (tmp_path / "run").exists()


def test_embedded_cluster_with_tls(tls_cluster):
    """--tls-* without an address: the embedded LocalCluster itself runs on tls://."""
    _, certs = tls_cluster
    security = {"ca_file": certs / "ca.pem", "cert": certs / "client.pem",
                "key": certs / "client-key.pem"}
    with dask_client(n_workers=1, security=security) as client:
        assert client.scheduler.address.startswith("tls://")
        assert all(w.startswith("tls://") for w in client.nthreads())
        assert client.submit(sum, [1, 2]).result() == 3


@needs_openssl
def test_make_certs_refuses_to_overwrite(tmp_path):
    certs = make_certs(tmp_path / "certs", "node1", "10.1.2.3")
    text = subprocess.run(["openssl", "x509", "-in", certs / "worker.pem", "-noout", "-text"],
                          capture_output=True, text=True, check=True).stdout
    assert "DNS:node1" in text and "IP Address:10.1.2.3" in text
    config = yaml.safe_load((certs / "dask-tls.yaml").read_text())
    assert config["distributed"]["comm"]["tls"]["ca-file"] == str(certs / "ca.pem")
    again = subprocess.run([CLUSTERS / "tls" / "make-certs.sh", certs], env=ENV,
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "exists" in again.stderr


# -- SLURM and PBS batch scripts on this machine ----------------------------------------
# No SLURM or PBS here: the batch scripts run as given, with `srun` (SLURM) and
# the ssh launcher (PBS) replaced by stand-ins that start their command on this
# machine, and the job's environment variables set as the batch system would.

SRUN = """#!/bin/bash
# stand-in for srun: start the command --ntasks times on this machine
echo "srun $* (NUMBA_NUM_THREADS=$NUMBA_NUM_THREADS OMP_NUM_THREADS=$OMP_NUM_THREADS)" >&2
n=1
while [[ $1 == -* ]]; do [[ $1 == --ntasks=* ]] && n=${1#*=}; shift; done
trap 'kill $(jobs -p) 2>/dev/null' TERM EXIT
for _ in $(seq "$n"); do "$@" & done
wait
"""
SSH = """#!/bin/bash
# stand-in for `ssh HOST COMMAND`: run COMMAND on this machine
echo "ssh $1: $2" >&2
trap 'kill $(jobs -p) 2>/dev/null' TERM EXIT
bash -c "$2" &
wait
"""


def run_batch(script: Path, args: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess:
    """Run a batch script in its own process group; kill whatever it leaves."""
    proc = subprocess.Popen(["bash", script, *args], env=env, cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=600)
    finally:
        for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            for _ in range(wait * 10):
                try:
                    os.killpg(proc.pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
        proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def stand_in(tmp_path: Path, name: str, text: str) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / name).write_text(text)
    (bin_dir / name).chmod(0o755)
    return bin_dir


@needs_dask
@pytest.mark.parametrize("nthreads", [None, pytest.param("1", marks=pytest.mark.slow)],
                         ids=["default", "NTHREADS=1"])
def test_slurm_batch_script_runs_with_a_local_srun(nthreads, reuters, reference, tmp_path):
    """By default one worker per task with a thread per CPU of the task (where
    numba's threading layer is thread-safe) and numba's threads as many; with
    NTHREADS=1 a single-threaded worker per CPU. Either gives the chain."""
    bin_dir = stand_in(tmp_path, "srun", SRUN)
    cpus = cores()
    env = dict(ENV, PATH=f"{bin_dir}{os.pathsep}{ENV['PATH']}", STORE=reuters,
               SLURM_JOB_ID="4242", SLURM_NTASKS="1", SLURM_CPUS_PER_TASK=str(cpus),
               SLURM_MEM_PER_CPU="1024", TMPDIR=str(tmp_path))
    if nthreads is not None:
        env["NTHREADS"] = nthreads
    threads = int(nthreads or (cpus if numba_threadsafe() else 1))
    done = run_batch(CLUSTERS / "slurm" / "dscir-lda.sbatch", FIT_ARGS, env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert (f"srun --ntasks=1 --cpus-per-task={cpus} --kill-on-bad-exit=0 dask worker "
            f"--scheduler-file {tmp_path / 'dask-scheduler-4242.json'} "
            f"--nworkers {cpus // threads} --nthreads {threads} "
            f"--memory-limit {1024 * threads}MiB ") in done.stderr
    assert f"(NUMBA_NUM_THREADS={threads} OMP_NUM_THREADS={threads})" in done.stderr
    assert "topic 3:" in done.stdout
    assert same_chain(tmp_path / "run-4242.zarr", reference)
    assert not (tmp_path / "dask-scheduler-4242.json").exists()


@needs_dask
@pytest.mark.slow  # the Slurm script's run holds the batch recipes in the default run
def test_pbs_batch_script_runs_with_a_local_launcher(reuters, reference, tmp_path):
    """One worker per node with a thread per line of the node in $PBS_NODEFILE
    (where numba's threading layer is thread-safe; else a single-threaded worker
    per line), numba's threads as many, here and through the launcher."""
    bin_dir = stand_in(tmp_path, "fake-ssh", SSH)
    nodefile = tmp_path / "nodefile"
    here = os.uname().nodename
    nodefile.write_text(f"{here}\nnode2.example\n{here}\n")
    env = dict(ENV, PATH=f"{bin_dir}{os.pathsep}{ENV['PATH']}", STORE=reuters,
               PBS_JOBID="4343.pbs-server", PBS_NODEFILE=str(nodefile),
               PBS_O_WORKDIR=str(tmp_path), WORKER_LAUNCHER="fake-ssh",
               DSCIR_ARGS=" ".join(FIT_ARGS), TMPDIR=str(tmp_path))
    done = run_batch(CLUSTERS / "pbs" / "dscir-lda.pbs", [], env, tmp_path)
    assert done.returncode == 0, done.stderr
    if numba_threadsafe():
        assert f"{here}: 1 dask worker(s) of 2 thread(s)" in done.stderr
    else:
        assert f"{here}: 2 dask worker(s) of 1 thread(s)" in done.stderr
    assert "node2.example: 1 dask worker(s) of 1 thread(s)" in done.stderr
    assert ("ssh node2.example: export OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1; exec "
            in done.stderr)
    assert "topic 3:" in done.stdout
    assert same_chain(tmp_path / "run-4343.zarr", reference)


@pytest.mark.parametrize("system, directive", [("slurm", "#SBATCH"), ("pbs", "#PBS")])
def test_jobqueue_launcher_renders_the_worker_job(system, directive, tmp_path):
    """The dask-jobqueue launcher and jobqueue.yaml give a worker job of one
    worker of 8 threads, numba's as many (--dry-run: the job is printed, not
    submitted)."""
    pytest.importorskip("dask_jobqueue")
    done = subprocess.run([sys.executable, CLUSTERS / "jobqueue_cluster.py", system,
                           "--dry-run"], capture_output=True, text=True, timeout=300,
                          env=ENV, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    script = done.stdout
    assert f"{directive} -l walltime=02:00:00" in script or "#SBATCH -t 02:00:00" in script
    assert "--nthreads 8 --memory-limit 32.00GiB --nanny" in script
    assert "--nworkers" not in script
    assert "export OMP_NUM_THREADS=8 NUMBA_NUM_THREADS=8" in script


# -- bad TLS options ----------------------------------------------------------------


@pytest.mark.parametrize("command", [["fit", "lda", "STORE"], ["fit", "dpmm", "STORE"],
                                     ["evaluate", "RUN"], ["coherence", "RUN"]])
def test_bad_tls_options_are_one_clear_error(command, reuters, tmp_path, capsys):
    command = [reuters if a == "STORE" else str(tmp_path / "r") if a == "RUN" else a
               for a in command]
    ca = tmp_path / "ca.pem"
    ca.write_text("not used")
    out = ["--out", str(tmp_path / "out")] if command[1] == "lda" else []
    assert main([*command, *out, "--tls-ca-file", str(ca)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "missing: --tls-cert, --tls-key" in err
    assert main([*command, *out, "--tls-ca-file", str(ca), "--tls-cert", str(ca),
                 "--tls-key", str(tmp_path / "nokey.pem")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"TLS file not found: --tls-key {tmp_path / 'nokey.pem'}" in err
    assert not (tmp_path / "out").exists()


def test_security_for_a_given_client_is_an_error(tmp_path):
    with pytest.raises(DscirError, match="a given client is already connected"):
        with dask_client(object(), security=Security()):
            pass
    with pytest.raises(DscirError, match="missing: ca_file"):
        with dask_client(address="tls://127.0.0.1:1",
                         security={"cert": tmp_path / "c", "key": tmp_path / "k"}):
            pass


# -- every recipe's files --------------------------------------------------------------


def test_recipe_files_are_valid():
    folders = sorted(p.name for p in CLUSTERS.iterdir()
                     if p.is_dir() and not p.name.startswith(("_", ".")))
    assert folders == sorted(RECIPES)
    for folder in [CLUSTERS] + [CLUSTERS / name for name in RECIPES]:
        readme = (folder / "README.md").read_text()
        for f in sorted(f for f in folder.iterdir() if f.is_file() and f.name != "README.md"):
            assert f.name in readme, f"{folder.name}/README.md does not mention {f.name}"
            if f.suffix in (".yaml", ".yml"):
                docs = [d for d in yaml.safe_load_all(f.read_text()) if d is not None]
                assert docs, f
            elif f.suffix == ".py":
                compile(f.read_text(), str(f), "exec")
            elif f.suffix in (".sh", ".sbatch", ".pbs"):
                assert os.access(f, os.X_OK), f"{f} is not executable"
                check = subprocess.run(["bash", "-n", f], capture_output=True, text=True)
                assert check.returncode == 0, check.stderr


def test_kubernetes_manifests_fit_together():
    folder = CLUSTERS / "kubernetes"
    cluster, = yaml.safe_load_all((folder / "daskcluster.yaml").read_text())
    job, = yaml.safe_load_all((folder / "dscir-job.yaml").read_text())
    claim, = yaml.safe_load_all((folder / "data-pvc.yaml").read_text())
    assert (cluster["apiVersion"], cluster["kind"]) == ("kubernetes.dask.org/v1", "DaskCluster")
    name = cluster["metadata"]["name"]
    worker, = cluster["spec"]["worker"]["spec"]["containers"]
    assert worker["args"][:2] == ["dask", "worker"] and "$(DASK_WORKER_NAME)" in worker["args"]
    # one worker of a thread per CPU of its pod, numba's (and OpenMP's) as many
    assert worker["args"][worker["args"].index("--nthreads") + 1] == "$(NUMBA_NUM_THREADS)"
    env = {e["name"]: e["valueFrom"]["resourceFieldRef"] for e in worker["env"]}
    assert env == dict.fromkeys(("NUMBA_NUM_THREADS", "OMP_NUM_THREADS"),
                                {"containerName": worker["name"], "resource": "limits.cpu"})
    assert worker["resources"]["requests"] == worker["resources"]["limits"]
    assert int(worker["resources"]["limits"]["cpu"]) > 1
    scheduler = cluster["spec"]["scheduler"]
    assert scheduler["spec"]["containers"][0]["args"] == ["dask", "scheduler"]
    assert scheduler["service"]["selector"]["dask.org/cluster-name"] == name
    assert {p["port"] for p in scheduler["service"]["ports"]} == {8786, 8787}
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    pod = job["spec"]["template"]["spec"]
    script = pod["containers"][0]["args"][0]
    assert f"tcp://{name}-scheduler.$POD_NAMESPACE.svc.cluster.local:8786" in script
    assert subprocess.run(["sh", "-n"], input=script, text=True).returncode == 0
    claims = {v["persistentVolumeClaim"]["claimName"]
              for spec in (pod, cluster["spec"]["worker"]["spec"]) for v in spec["volumes"]}
    assert claims == {claim["metadata"]["name"]}
    dockerfile = (folder / "Dockerfile").read_text()
    assert dockerfile.startswith("#") and "pip install --no-cache-dir /src" in dockerfile
    # numba's OpenMP layer, thread-safe, and the image checks it loads
    assert "libgomp1" in dockerfile and "import numba.np.ufunc.omppool" in dockerfile
    assert "NUMBA_NUM_THREADS=1" not in dockerfile


def test_embedded_workers_cap_numba_threads_at_their_own():
    """The embedded LocalCluster's worker processes run numba's parallel kernels on
    as many threads as each worker has (as the cluster recipes export), not on
    every core: guards against workers contending for the cores (on 2 cores, 2
    workers' block steps scale worse uncapped: docs/benchmarks/scale.md)."""
    def threads():
        import numba

        return numba.config.NUMBA_NUM_THREADS, os.environ.get("OMP_NUM_THREADS")

    with dask_client(n_workers=1, threads_per_worker=1, dashboard_address=None) as client:
        assert set(client.run(threads).values()) == {(1, "1")}


@pytest.mark.parametrize("n_workers", [0, -1])
def test_a_cluster_without_workers_is_refused_before_it_starts(n_workers, monkeypatch):
    """``--workers 0`` once started a LocalCluster that waited forever for a worker
    to run its first task; it is one clear error, and no cluster is started."""
    from dscir.engine import cluster as cluster_module

    started = []
    monkeypatch.setattr(cluster_module, "LocalCluster", lambda *a, **k: started.append(k))
    with pytest.raises(DscirError, match="--workers"):
        with cluster_module.dask_client(n_workers=n_workers):
            pass
    assert started == []


def test_the_schedulers_forgotten_gathers_are_dropped_and_no_other_error():
    """An interrupted fit's released keys make the scheduler log "Couldn't gather
    keys" with every key forgotten: dropped. Guards against hiding a gather that
    failed for another reason (a key erred or still waiting) or another error."""
    from dscir.engine.cluster import _ForgottenGathers

    def record(msg, *args):
        return logging.LogRecord("distributed.scheduler", logging.ERROR, __file__, 1, msg,
                                 args, None)

    keep = _ForgottenGathers().filter
    assert not keep(record("Couldn't gather keys: %s", {("a", 1): "forgotten"}))
    assert keep(record("Couldn't gather keys: %s", {("a", 1): "forgotten", "b": "erred"}))
    assert keep(record("Couldn't gather keys: %s", {}))
    assert keep(record("Some other error: %s", {("a", 1): "forgotten"}))
