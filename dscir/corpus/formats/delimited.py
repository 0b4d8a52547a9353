"""The document sources of the ``csv`` and ``tsv`` formats: a header row, then
one document a row, its text in one column.

TSV is read as IANA's ``text/tab-separated-values`` by default: fields are cut at
every tab and records at every newline, with no quoting at all, so a field may
begin with ``"`` (dialogue, quoted titles) and cannot hold a tab or a newline.
``quoting="csv"`` reads a TSV written with CSV's quoting instead (a field in
double quotes may hold tabs, newlines and doubled quotes).
"""

from __future__ import annotations

import csv

from dscir.corpus.ingest import line_blocks, quote, split_lines
from dscir.errors import CorpusError, DataError, spell

#: The ``quoting`` of ``tsv_source``: none (IANA TSV, the default) or csv.
TSV_QUOTING = ("none", "csv")


def _columns(path, header: list[str], column: str, id_column: str | None):
    """The indices of the text and id columns in ``header`` (id: None)."""
    for name in (column, id_column):
        if name is not None and name not in header:
            raise DataError(f"{path}:1: no column {name!r} in the header {header}")
    return header.index(column), header.index(id_column) if id_column else None


def csv_source(path, column: str = "text", id_column: str | None = None,
               delimiter: str = ",", encoding: str = "utf-8"):
    """A CSV (or, with ``delimiter='\\t'``, a quoted TSV) file with a header row;
    the text is ``column``, the id ``id_column`` (default: the row number). Read
    strictly: a quote left open would otherwise swallow the rest of the file
    into one field."""
    csv.field_size_limit(1 << 30)

    def lines(progress, desc):
        for _, block in line_blocks(path, progress=progress, desc=desc, encoding=encoding):
            yield from split_lines(block, keepends=True)

    def docs(progress, desc):
        reader = csv.reader(lines(progress, desc), delimiter=delimiter, strict=True)
        try:
            header = next(reader)
        except StopIteration:
            raise DataError(f"{path}: empty file (no header row)") from None
        except csv.Error as exc:
            raise DataError(f"{path}:{reader.line_num}: malformed CSV header ({exc})") from None
        ti, ii = _columns(path, header, column, id_column)
        row_start = reader.line_num + 1
        try:
            for row_no, row in enumerate(reader, 1):
                if row:
                    if len(row) != len(header):
                        raise DataError(f"{path}:{reader.line_num}: {len(row)} fields, the "
                                        f"header has {len(header)}")
                    yield (row[ii] if ii is not None else str(row_no)), row[ti]
                row_start = reader.line_num + 1
        except csv.Error as exc:
            raise DataError(f"{path}:{row_start}: malformed CSV in the row starting "
                            f"here ({exc})") from None
    return docs


def tsv_source(path, column: str = "text", id_column: str | None = None,
               quoting: str = "none", encoding: str = "utf-8"):
    """A TSV file with a header row; the text is ``column``, the id ``id_column``
    (default: the row number). ``quoting="none"``: IANA TSV, one record a line,
    fields cut at tabs, quotes kept as text (a "\\r" ending a line is dropped);
    ``"csv"``: CSV's quoting (``csv_source``)."""
    if quoting not in TSV_QUOTING:
        raise CorpusError(f"{spell('quoting', '--quoting')} must be one of "
                          f"{', '.join(TSV_QUOTING)}, got {quoting!r}")
    if quoting == "csv":
        return csv_source(path, column, id_column, "\t", encoding)

    def records(progress, desc):
        for lineno, block in line_blocks(path, progress=progress, desc=desc,
                                         encoding=encoding):
            for k, line in enumerate(split_lines(block)):
                yield lineno + k, line[:-1] if line.endswith("\r") else line

    def docs(progress, desc):
        rows = records(progress, desc)
        header = next(rows, (1, None))[1]
        if header is None:
            raise DataError(f"{path}: empty file (no header row)")
        header = header.split("\t")
        ti, ii = _columns(path, header, column, id_column)
        for lineno, line in rows:
            if not line:
                continue
            row = line.split("\t")
            if len(row) != len(header):
                hint = (f"; a TSV field holds no tab: for CSV quoting pass "
                        f"{spell('quoting=' + repr('csv'), '--quoting csv')}") if '"' in line else ""
                raise DataError(f"{path}:{lineno}: {len(row)} fields, the header has "
                                f"{len(header)}{hint}: {quote(line)}")
            yield (row[ii] if ii is not None else str(lineno - 1)), row[ti]
    return docs
