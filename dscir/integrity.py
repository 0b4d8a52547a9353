"""Integrity of the Zarr stores dscir writes (corpora and runs).

New arrays carry a CRC-32C checksum on every chunk (zarr's ``crc32c`` codec,
the last bytes-to-bytes codec after zstd) and are written with every chunk
present (``write_empty_chunks``), so that a flipped byte, a truncated or a
deleted chunk file is detected. Reads go through ``read``, which turns any
failure of zarr's codec pipeline into one ``DscirError`` naming the store, the
array and the damaged chunks; ``check_array`` reads every chunk of an array
(``dscir verify``). Stores written before checksums stay readable: their
damage is found by the consistency checks of the readers, where it can be.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import zarr

from dscir.errors import EXIT_DATA, DscirError

CHECKSUM = "crc32c"
#: How long removing an unfinished store waits for zarr's writes in flight.
SETTLE_SECONDS = 60.0


def array_options() -> dict[str, Any]:
    """``create_array`` keywords of every new array: zstd (zarr's default) then
    a CRC-32C checksum of each chunk, every chunk written."""
    from zarr.codecs import Crc32cCodec, ZstdCodec

    return {"compressors": [ZstdCodec(level=0), Crc32cCodec()],
            "config": {"write_empty_chunks": True}}


# Attribute of an array whose chunks are written when first used, not all at
# creation (a chain's per-document local state): a missing chunk is no damage.
WRITTEN_ON_USE = "dscir_chunks_written_on_use"


def has_checksums(array: zarr.Array) -> bool:
    """Whether the chunks of ``array`` carry a CRC-32C checksum."""
    return any(getattr(c, "__class__", type(None)).__name__ == "Crc32cCodec"
               for c in array.compressors)


class StoreDamaged(DscirError):
    """A chunk or the metadata of a store cannot be read back (checksum mismatch,
    corrupt data): exit status 3 on the command line."""

    exit_code = EXIT_DATA


def _where(array: zarr.Array) -> str:
    return f"array '{array.path or array.name}' of {store_location(array)}"


def store_location(array_or_group) -> str:
    """The root of the store holding ``array_or_group`` (a path or URL)."""
    store = array_or_group.store_path.store
    root = getattr(store, "root", None)
    return str(root) if root is not None else str(store)


def _reason(exc: BaseException) -> str:
    text = str(exc).split(". Stored:")[0].strip() or type(exc).__name__
    return text.rstrip(".")


def chunk_name(array: zarr.Array, sel: tuple[slice, ...]) -> str:
    """The chunk holding the region ``sel`` starts: its number (1-d) or grid
    coordinates joined by dots, as in its key."""
    return ".".join(str((s.start or 0) // c) for s, c in zip(sel, array.chunks))


def damaged_chunks(array: zarr.Array, region: tuple[slice, ...] | None = None,
                   limit: int = 8) -> list[tuple[str, str]]:
    """(chunk, reason) of the chunks of ``array`` (within ``region`` of the
    first axis) that cannot be read, at most ``limit``."""
    out = []
    lo, hi = (0, array.shape[0]) if region is None else (region[0].start, region[0].stop)
    for sel in array._iter_chunk_regions():
        if sel[0].stop <= lo or sel[0].start >= hi:
            continue
        try:
            array[sel]
        except MemoryError:
            raise
        except Exception as exc:  # the codec pipeline raises ValueError, RuntimeError...
            out.append((chunk_name(array, sel), _reason(exc)))
            if len(out) >= limit:
                break
    return out


def damage_message(array: zarr.Array, exc: BaseException,
                   region: tuple[slice, ...] | None = None) -> str:
    bad = []
    try:
        bad = damaged_chunks(array, region)
    except Exception:  # locating the chunk is best effort
        pass
    if bad:
        chunks = ", ".join(str(k) for k, _ in bad)
        what = f"chunk {chunks}" if len(bad) == 1 else f"chunks {chunks}"
        reason = bad[0][1]
    else:
        what, reason = "a chunk", _reason(exc)
    return (f"{_where(array)} is damaged: {what} cannot be read ({reason}); "
            f"`dscir verify {store_location(array)}` checks the whole store")


def read(array: zarr.Array, selection: Any = Ellipsis, *, coordinates: bool = False):
    """``array[selection]`` (or its coordinate selection); a damaged chunk is one
    ``StoreDamaged`` error naming the array and chunk."""
    try:
        if coordinates:
            return array.get_coordinate_selection(selection)
        return array[selection]
    except MemoryError:
        raise
    except Exception as exc:
        region = None
        if isinstance(selection, slice) and array.ndim == 1:
            region = (slice(*selection.indices(array.shape[0])[:2]),)
        elif coordinates and array.ndim == 1 and len(selection):
            region = (slice(int(selection.min()), int(selection.max()) + 1),)
        raise StoreDamaged(damage_message(array, exc, region)) from None


def metadata_error(path: str | Path, exc: BaseException, what: str) -> DscirError:
    """The error for a ``zarr.json`` that cannot be parsed or is not Zarr v3 metadata."""
    return StoreDamaged(f"{path} is not a readable {what}: its Zarr metadata is damaged or "
                        f"foreign ({_reason(exc)})")


def open_group(path: str | Path, what: str = "Zarr store", mode: str = "r") -> zarr.Group:
    """``zarr.open_group`` with damaged or foreign metadata as one error naming the file."""
    try:
        return zarr.open_group(str(path), mode=mode)
    except (FileNotFoundError, zarr.errors.GroupNotFoundError):
        raise
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise StoreDamaged(f"{_metadata_file(path)} is damaged: not valid JSON ({_reason(exc)}); "
                           f"{path} is not a readable {what}") from None
    except (ValueError, TypeError, KeyError, zarr.errors.NodeTypeValidationError) as exc:
        raise StoreDamaged(f"{_metadata_file(path)} is not Zarr v3 group metadata "
                           f"({_reason(exc)}); {path} is not a readable {what}") from None


def _metadata_file(path) -> str:
    path = str(path)
    return path.rstrip("/") + "/zarr.json"


def member(group: zarr.Group, name: str, what: str = "store"):
    """``group[name]``, with damaged member metadata as one error naming the file."""
    try:
        return group[name]
    except KeyError:
        raise
    except Exception as exc:
        root = store_location(group)
        path = f"{root}/{group.path + '/' if group.path else ''}{name}"
        raise StoreDamaged(f"{_metadata_file(path)} is damaged or foreign ({_reason(exc)}); "
                           f"{root} is not a readable {what}") from None


def missing_chunks(array: zarr.Array) -> list[str]:
    """The chunk (or shard) keys of ``array`` absent from its store."""
    from zarr.core.array import _shards_initialized
    from zarr.core.sync import sync

    present = set(sync(_shards_initialized(array._async_array)))
    return [k for k in array._iter_shard_keys() if k not in present]


def check_array(array: zarr.Array, *, require_all: bool | None = None) -> list[str]:
    """Problems of one array: chunks (shards) missing from the store (when every
    chunk was written: arrays with checksums, or ``require_all``), and every chunk
    that cannot be read (checksum mismatch, corrupt compressed data...)."""
    problems = []
    if require_all is None:
        require_all = has_checksums(array) and not array.attrs.get(WRITTEN_ON_USE, False)
    if require_all and array.size:
        missing = missing_chunks(array)
        if missing:
            problems.append(f"missing chunk files {', '.join(missing[:8])}"
                            + (" ..." if len(missing) > 8 else ""))
    for sel in array._iter_shard_regions():
        try:
            array[sel]
        except MemoryError:
            raise
        except Exception as exc:
            if array.shards is None:
                bad = [(chunk_name(array, sel), _reason(exc))]
            else:
                bad = damaged_chunks(array, sel, limit=array.shards[0] // array.chunks[0])
                bad = bad or [(chunk_name(array, sel), _reason(exc))]
            problems.extend(f"chunk {k} cannot be read ({why})" for k, why in bad)
    return problems


def walk_arrays(group: zarr.Group, prefix: str = ""):
    """(path, array) of every array below ``group``, in sorted order."""
    for name, node in sorted(group.members(), key=lambda m: m[0]):
        if isinstance(node, zarr.Array):
            yield prefix + name, node
        else:
            yield from walk_arrays(node, prefix + name + "/")


def remove_unfinished(path: str | Path, timeout: float = SETTLE_SECONDS) -> None:
    """Remove ``path``, a store whose writing was interrupted or failed, once zarr's
    writes in flight have ended. Ctrl-C raised while the main thread waits on zarr
    leaves that write running in zarr's IO thread; landing after the removal, it
    would recreate part of the store (an array without its chunks)."""
    _settle_writes(timeout)
    shutil.rmtree(path, ignore_errors=True)


def _settle_writes(timeout: float) -> None:
    """Wait (at most ``timeout`` s) until zarr's event loop runs no other task."""
    from zarr.core import sync

    loop = sync.loop[0]
    if loop is None or loop.is_closed():
        return

    async def others_done() -> None:
        me = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not me]
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)

    try:
        asyncio.run_coroutine_threadsafe(others_done(), loop).result(timeout + 1.0)
    except Exception:  # a timeout, a loop closed meanwhile: remove what is there
        pass
