"""Plain-text tables for the terminal: what the CLI prints, kept out of the library's return values."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from numbers import Integral, Real


def format_value(value: object, digits: int = 4) -> str:
    """Fractions rounded for reading, counts as integers, ``None`` as ``n/a``; numpy scalars alike. A float of a
    million or more is written in exponent form (not 300 digits for 1e300).

    >>> format_value(0.123456), format_value(None), format_value(12), format_value("x"), format_value(float("nan"))
    ('0.1235', 'n/a', '12', 'x', 'nan')
    >>> format_value(1e308)
    '1.0000e+308'
    """
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, Integral):
        return str(int(value))
    if isinstance(value, Real):
        number = float(value)
        return f"{number:.{digits}e}" if abs(number) >= 1e6 else f"{number:.{digits}f}"
    return str(value)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]], digits: int = 4) -> str:
    """A left-aligned text table with a header rule.

    >>> print(format_table(["metric", "value"], [["mAP", 0.5], ["R@20", None]]))
    metric  value
    ------  ------
    mAP     0.5000
    R@20    n/a
    """
    cells = [[format_value(v, digits) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines)


def all_undefined(values: Iterable[object]) -> bool:
    """Whether every value is undefined (``None`` or NaN): a table of only ``n/a`` that says nothing.

    The evaluate commands refuse such a result with the reason instead of printing it (an empty GT file, a
    prediction file naming no evaluated image).

    >>> all_undefined([None, float("nan")]), all_undefined([None, 0.0]), all_undefined([])
    (True, False, True)
    """
    return all(value is None or (isinstance(value, Real) and math.isnan(float(value))) for value in values)
