"""Where a run's Dask client comes from.

A client passed in is used as is; an address or a scheduler file connects to a
running cluster (``dask scheduler`` / ``dask worker``), as does Dask's own
``scheduler-address`` setting (``DASK_SCHEDULER_ADDRESS``, which the Dask
Kubernetes operator sets in its pods) when neither is given. Otherwise the
work runs on an embedded LocalCluster: without keywords the process's one
shared cluster (``embedded_client``: started at first use, reused by every later
call, closed at exit), an in-process worker with a thread per core (no
spawned processes, so an unguarded script works; no serialisation); with
embedded keywords (``n_workers``: worker processes) a cluster of their own,
closed with the call. The embedded cluster is private: its scheduler, workers,
nannies and dashboard listen on 127.0.0.1 only (its dashboard elsewhere when
``dashboard_address`` says so), and its worker processes leave Ctrl-C and
SIGTERM to the driver (``dscir.engine.interrupts``). ``security`` (a
``distributed.Security``, or the CA, certificate and key files of
``tls_security``) makes the connection, or the embedded cluster, use mutual TLS;
without it the ``distributed.comm.tls`` settings of the Dask configuration apply.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import logging
import os
import threading
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import urlsplit

import dask
from distributed import Client, LocalCluster, Security

from dscir.engine.interrupts import signals_to_driver, deferred
from dscir.errors import ClusterError, DscirError

log = logging.getLogger(__name__)

#: Where the embedded cluster listens: the loopback interface only.
PRIVATE_HOST = "127.0.0.1"
#: Its dashboard by default: a free port of the loopback interface.
PRIVATE_DASHBOARD = f"{PRIVATE_HOST}:0"


#: Dask keeps each connection's recent messages under 1 MB for debugging,
#: ``distributed.admin.low-level-log-length`` of them (1,000 by default). A
#: driver's task messages carry phi columns, so at the default the driver
#: process held up to ~1 GB of old ones; dscir's own clients and embedded
#: clusters keep at most this many.
MESSAGE_LOG_LENGTH = 100


def _capped_message_logs():
    """Config for creating clients and clusters: the message logs capped."""
    key = "distributed.admin.low-level-log-length"
    return dask.config.set({key: min(dask.config.get(key), MESSAGE_LOG_LENGTH)})


class _AbandonedGathers(logging.Filter):
    """Drops asyncio's "Task exception was never retrieved" of Dask's ``AllExit``:
    the waits of a gather the driver left (interrupted) whose futures the closing
    client cancelled. Nothing is wrong and nothing can be done about it."""

    def filter(self, record: logging.LogRecord) -> bool:
        from distributed.client import AllExit

        return not (record.exc_info and isinstance(record.exc_info[1], AllExit))


class _ForgottenGathers(logging.Filter):
    """Drops the scheduler's "Couldn't gather keys" when every key is forgotten:
    the driver released them (an interrupted fit unwinding) while its gather was
    on the way. Any gather that fails also fails in the caller, with its error."""

    def filter(self, record: logging.LogRecord) -> bool:
        states = record.args  # a record of one mapping argument holds the mapping itself
        return not (str(record.msg).startswith("Couldn't gather keys")
                    and isinstance(states, dict) and states
                    and all(s == "forgotten" for s in states.values()))


def _quiet_abandoned_gathers() -> None:
    """Install ``_AbandonedGathers`` on asyncio's logger and ``_ForgottenGathers``
    on the scheduler's (once)."""
    for name, kind in (("asyncio", _AbandonedGathers),
                       ("distributed.scheduler", _ForgottenGathers)):
        log = logging.getLogger(name)
        if not any(isinstance(f, kind) for f in log.filters):
            log.addFilter(kind())


def _worker_env(threads: int) -> dict[str, str]:
    """Environment of a worker process with ``threads`` threads: numba's and
    OpenMP's thread pools of that size."""
    return {"NUMBA_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}


@contextlib.contextmanager
def dask_client(
    client: Client | None = None,
    *,
    address: str | None = None,
    scheduler_file: str | None = None,
    n_workers: int | None = None,
    threads_per_worker: int | None = None,
    processes: bool | None = None,
    dashboard_address: str | None = PRIVATE_DASHBOARD,
    security: Security | Mapping[str, str] | None = None,
) -> Iterator[Client]:
    """Yield a connected client; close only what this function opened.

    Without a client, address, scheduler file or embedded keywords, the client
    of the process's shared embedded cluster (``embedded_client``), left open.
    With embedded keywords, a LocalCluster of their own, closed at the end:
    ``n_workers`` (or ``processes=True``) asks for worker processes, one thread
    each unless ``threads_per_worker`` says otherwise, one per core (at most 4)
    unless ``n_workers`` says; ``processes=False`` one in-process worker with
    a thread per core. A worker process's numba (and OpenMP) threads are capped
    at its own threads, as the cluster recipes do, so the workers' parallel
    kernels do not contend for the same cores. Results do not depend on the form
    (streams are per document). Every socket of the embedded cluster is on
    ``PRIVATE_HOST``; ``dashboard_address`` (``HOST:PORT`` or ``:PORT``, all
    interfaces; None: no dashboard) serves the dashboard elsewhere. ``security``
    is a ``Security`` or a mapping ``{"ca_file", "cert", "key"}`` of PEM files
    (see ``tls_security``).
    """
    if n_workers is not None and not n_workers >= 1:
        raise DscirError(f"n_workers (--workers) must be at least 1, got {n_workers!r}")
    given = sum(x is not None for x in (client, address, scheduler_file))
    if given > 1:
        raise DscirError("give at most one of client, address and scheduler_file")
    if security is not None and not isinstance(security, Security):
        security = tls_security(**security)
    check_dashboard_address(dashboard_address)
    _quiet_abandoned_gathers()
    if client is None and address is None and scheduler_file is None:
        address = dask.config.get("scheduler-address", None)
    running = client is not None or address is not None or scheduler_file is not None
    if dashboard_address != PRIVATE_DASHBOARD and running:
        raise DscirError("dashboard_address (--dashboard-address) applies to the embedded "
                         "cluster, not to a running one (client, address, scheduler_file)")
    if client is not None:
        if security is not None:
            raise DscirError("security applies to address, scheduler_file or the embedded "
                             "cluster; a given client is already connected")
        yield client
        return
    if running:
        with _connect(address, scheduler_file, security) as c:
            yield c
        return
    form = (n_workers, threads_per_worker, processes)
    if form == (None,) * 3 and security is None and dashboard_address == PRIVATE_DASHBOARD:
        yield embedded_client()
        return
    with _embedded(_form(*form), dashboard_address, security) as c:
        yield c


def _form(n_workers: int | None, threads_per_worker: int | None,
          processes: bool | None) -> dict:
    """The LocalCluster's workers for the embedded keywords given (see ``dask_client``);
    none given: one in-process worker with a thread per core, or (where numba's
    threading layer is not thread-safe) today's single-threaded worker processes."""
    cores = os.cpu_count() or 1
    if processes is None:
        processes = n_workers is not None or not numba_threadsafe()
    if processes:
        n_workers = n_workers or max(1, min(cores, 4))
        return dict(n_workers=n_workers, threads_per_worker=threads_per_worker or 1,
                    processes=True)
    n_workers = n_workers or 1
    return dict(n_workers=n_workers, processes=False,
                threads_per_worker=threads_per_worker or max(1, cores // n_workers))


#: numba's thread-safe threading layers, in the order its default choice tries them.
THREADSAFE_LAYERS = ("tbb", "omp")


def numba_threadsafe() -> bool:
    """Whether numba's parallel kernels may run in several threads of this process
    at once: its threading layer is (or, not started yet, will be) TBB or OpenMP.
    Its workqueue layer aborts the process on concurrent use, so without TBB or
    OpenMP the embedded workers are processes (logged, with the fix)."""
    import importlib

    import numba

    try:
        return numba.threading_layer() in THREADSAFE_LAYERS
    except ValueError:  # not started: the layer its setting will choose
        pass
    setting = str(numba.config.THREADING_LAYER)
    layers = {"default": THREADSAFE_LAYERS, "threadsafe": THREADSAFE_LAYERS,
              "safe": ("tbb",)}.get(setting, (setting,))
    for layer in layers:
        if layer in THREADSAFE_LAYERS:
            try:
                importlib.import_module(f"numba.np.ufunc.{layer}pool")
                return True
            except (ImportError, OSError):
                continue
    log.warning("numba's threading layer here is not thread-safe (no TBB or OpenMP "
                "library): the embedded cluster runs worker processes, so a script "
                "needs `if __name__ == \"__main__\":`; `pip install tbb` gives an "
                "in-process worker")
    return False

#: The shared embedded cluster and its client, and the process that started them.
_shared: dict = {}
_shared_lock = threading.Lock()


def embedded_client() -> Client:
    """The client of this process's shared embedded cluster, started at the first
    call (``_form()``'s workers, every socket private) and reused by every later
    one; closed at exit, or by ``close_embedded``. Not made Dask's default
    client: computations of your own do not land on it unless you pass it."""
    with _shared_lock:
        c = _shared.get("client")
        if c is not None and _shared["pid"] == os.getpid() and c.status == "running":
            return c
        if c is not None and _shared["pid"] == os.getpid():
            _close_shared()
        _shared.clear()
        cluster, c = _start(_form(None, None, None), PRIVATE_DASHBOARD, None, default=False)
        _shared.update(cluster=cluster, client=c, pid=os.getpid())
        return c


def close_embedded() -> None:
    """Close this process's shared embedded cluster, if it started one (run at exit;
    the next call without a cluster starts a new one)."""
    with _shared_lock:
        if _shared.get("pid") == os.getpid():
            _close_shared()
        _shared.clear()


def _close_shared() -> None:
    _shared["client"].close()
    _shared["cluster"].close()


atexit.register(close_embedded)


def _start(form: dict, dashboard_address: str | None, security: Security | None,
           default: bool = True) -> tuple[LocalCluster, Client]:
    """A new LocalCluster of ``form``'s workers and its client (made Dask's default
    client unless ``default`` is False); a signal while they start is raised once
    both are made, or the cluster closed."""
    processes = form["processes"]
    with _capped_message_logs(), signals_to_driver(), deferred():
        cluster = LocalCluster(
            **form,
            dashboard_address=dashboard_address,
            silence_logs=40,
            security=security,
            # in-process: no sockets but the scheduler's and the worker's HTTP ones
            # (unless TLS asks for them), the worker's bound to the loopback too
            **({"host": PRIVATE_HOST} if processes or security is not None
               else {"worker_dashboard_address": PRIVATE_DASHBOARD}),
            **({"env": _worker_env(form["threads_per_worker"])} if processes else {}),
        )
        try:
            c = Client(cluster, set_as_default=default)
        except BaseException:
            cluster.close()
            raise
    host = (dashboard_address or "").rpartition(":")[0]
    if host and not processes and security is None:
        _DASHBOARD_HOSTS[cluster] = host
    return cluster, c


#: The host an in-process cluster's dashboard listens on, by cluster: Dask's link
#: names the host of its scheduler's in-process address, the machine's address.
_DASHBOARD_HOSTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def _embedded(form: dict, dashboard_address: str | None,
              security: Security | None) -> Iterator[Client]:
    """A client of a new LocalCluster of ``form``'s workers, both closed at the end."""
    cluster, c = _start(form, dashboard_address, security)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def check_dashboard_address(address: str | None) -> None:
    """Raise unless ``address`` is None or ``[HOST]:PORT`` with a port in 0..65535."""
    if address is None:
        return
    host, sep, port = str(address).rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535 or " " in host:
        raise DscirError(f"dashboard_address (--dashboard-address) must be HOST:PORT or "
                         f":PORT (port 0: any free one), got {address!r}")


@contextlib.contextmanager
def _connect(address: str | None, scheduler_file: str | None,
             security: Security | None) -> Iterator[Client]:
    """A client of a running scheduler; a failed connect is one ``DscirError``."""
    try:
        with _capped_message_logs():
            c = Client(address=address, scheduler_file=scheduler_file, security=security,
                       timeout=dask.config.get("distributed.comm.timeouts.connect"))
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        error = ClusterError(f"cannot connect to the Dask scheduler at "
                             f"{address or scheduler_file}: {exc}")
    else:
        error = None
    if error is not None:
        # The half-started Client lives on in the traceback; collected at
        # some later moment, its __del__ can run inside the next client's
        # event-loop thread and stall that client's start for 10 s. Free
        # and collect it here instead.
        gc.collect()
        raise error
    try:
        yield c
    finally:
        c.close()


def tls_security(ca_file: str | Path | None = None, cert: str | Path | None = None,
                 key: str | Path | None = None, *,
                 names: tuple[str, str, str] = ("ca_file", "cert", "key")) -> Security | None:
    """Mutual-TLS ``Security`` from a CA file and one certificate/key pair (PEM).

    All three or none (None); a partial set, or a file that is missing, is a
    ``DscirError`` naming it by ``names`` (the CLI passes its option names).
    The pair serves every role (client, and scheduler and worker of an
    embedded cluster), so for a LocalCluster it must be valid for both server
    and client authentication, as the certificates of
    ``clusters/tls/make-certs.sh`` are.
    """
    files = dict(zip(names, (ca_file, cert, key)))
    if all(v is None for v in files.values()):
        return None
    absent = [name for name, v in files.items() if v is None]
    if absent:
        raise DscirError(f"TLS needs {', '.join(names[:2])} and {names[2]} together; "
                         f"missing: {', '.join(absent)}")
    missing = [f"{name} {v}" for name, v in files.items() if not Path(v).is_file()]
    if missing:
        raise DscirError(f"TLS file not found: {'; '.join(missing)}")
    ca, c, k = (str(v) for v in files.values())
    return Security(require_encryption=True, tls_ca_file=ca,
                    tls_client_cert=c, tls_client_key=k,
                    tls_scheduler_cert=c, tls_scheduler_key=k,
                    tls_worker_cert=c, tls_worker_key=k)


def current_client() -> Client | None:
    """The running client this process made current (the latest one created,
    or the one of a ``Client.as_current()`` block), if there is one."""
    try:
        client = Client.current()
    except ValueError:
        return None
    return client if client.status == "running" else None


def dashboard_link(client: Client) -> str | None:
    """The dashboard URL of the client's scheduler, if it serves one (for an
    in-process embedded cluster, on the host its dashboard listens on)."""
    try:
        link = client.dashboard_link
    except (AttributeError, KeyError):
        return None
    cluster = getattr(client, "cluster", None)
    host = _DASHBOARD_HOSTS.get(cluster) if cluster is not None else None
    if not link or host is None:
        return link
    parts = urlsplit(link)
    return parts._replace(netloc=f"{host}:{parts.port}").geturl()
