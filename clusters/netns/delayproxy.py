"""A TCP proxy that adds a fixed one-way delay to each direction of every connection.

The kernel here has no ``netem`` queueing discipline, so delay comes from this
proxy instead: every chunk read from one side is written to the other
``--delay-ms`` later, in order, so each direction of the connection is delayed
by that much and a request/response round trip by twice that. Bandwidth is
not limited. One process serves several ``LISTEN=TARGET`` pairs; it prints
``ready`` once all of them listen.

    python delayproxy.py --delay-ms 5 198.18.0.1:8787=198.18.0.1:8786 ...
"""

from __future__ import annotations

import argparse
import asyncio

CHUNK = 1 << 16


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                delay: float) -> None:
    """Copy ``reader`` to ``writer``, each chunk ``delay`` seconds after it arrived."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()

    async def later():
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                return
            writer.write(data)
            await writer.drain()

    sender = asyncio.create_task(later())
    try:
        while True:
            data = await reader.read(CHUNK)
            queue.put_nowait((loop.time() + delay, data))
            if not data:
                break
        await sender
    except (ConnectionError, OSError):
        sender.cancel()
    finally:
        writer.close()


def _serve(target: tuple[str, int], delay: float):
    async def handle(reader, writer):
        try:
            up_reader, up_writer = await asyncio.open_connection(*target)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pump(reader, up_writer, delay), _pump(up_reader, writer, delay),
                             return_exceptions=True)
    return handle


def _hostport(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


async def main(pairs: list[str], delay: float) -> None:
    servers = []
    for pair in pairs:
        listen, _, target = pair.partition("=")
        host, port = _hostport(listen)
        servers.append(await asyncio.start_server(_serve(_hostport(target), delay), host, port))
    print("ready", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--delay-ms", type=float, default=0.0, help="one-way delay per direction")
    p.add_argument("pairs", nargs="+", metavar="LISTEN=TARGET", help="HOST:PORT=HOST:PORT")
    args = p.parse_args()
    asyncio.run(main(args.pairs, args.delay_ms / 1000))
