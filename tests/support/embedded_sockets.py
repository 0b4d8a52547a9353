"""Helper of tests/engine/test_private_cluster.py: start dscir's embedded cluster as a fit
does (``dscir.api.session`` with cluster keywords, the JSON of argv[1], none: the
shared in-process one) and print,
as one JSON line, every socket its processes bind (TCP listening, UDP bound)
with the dashboard's link; with ``--control`` also the port of a control socket
this process opens on every interface afterwards (so a test can tell a refused
connection from a missing network). Runs until stdin closes.
"""

from __future__ import annotations

import json
import os
import socket
import sys

import psutil


def bound_sockets(pid: int) -> list[dict]:
    """The listening TCP and bound UDP sockets of ``pid`` and its descendants."""
    root = psutil.Process(pid)
    found = []
    for proc in [root, *root.children(recursive=True)]:
        try:
            conns = proc.net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        for c in conns:
            tcp = c.type == socket.SOCK_STREAM
            if (tcp and c.status == psutil.CONN_LISTEN) or (not tcp and not c.raddr):
                found.append({"pid": proc.pid, "ip": c.laddr.ip, "port": c.laddr.port,
                              "tcp": tcp})
    return found


def main() -> None:
    from dscir.api.session import session
    from dscir.engine.cluster import dashboard_link

    kwargs = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    with session(**kwargs) as client:
        client.wait_for_workers(kwargs.get("n_workers", 1))
        report = {"sockets": bound_sockets(os.getpid()), "dashboard": dashboard_link(client)}
        control = None
        if "--control" in sys.argv:
            control = socket.create_server(("0.0.0.0", 0))
            report["control"] = control.getsockname()[1]
        print(json.dumps(report), flush=True)
        sys.stdin.read()
        if control is not None:
            control.close()


if __name__ == "__main__":
    main()
