"""Counted warnings about inputs a metric scores the way the official code does, though they look wrong.

Some inputs the official evaluation code accepts are refused by hoi-bench's stricter default modes (a box inverted
by a hair, an image listed twice in a training file, a prediction for an image the ground truth does not have). Where a
metric reproduces the official code, it scores them as that code does and says so: one line per kind of input that
counts them and names the first, issued as an :class:`InputWarning` and listed under ``"warnings"`` in the result, so
the number is official and nothing changes it silently.

>>> import warnings
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore", InputWarning)  # what a caller that prints the result's list does
...     with collected_notes() as notes:
...         _ = warn_input("2 boxes inverted")
>>> notes
['2 boxes inverted']
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager


class InputWarning(UserWarning):
    """An input was scored as the official code scores it although it looks wrong; the message counts them."""


def warn_input(message: str) -> str:
    """Issue ``message`` as an :class:`InputWarning` (attributed to the metric's caller) and return it."""
    warnings.warn(message, InputWarning, stacklevel=3)
    return message


@contextmanager
def collected_notes() -> Iterator[list[str]]:
    """Collect the :class:`InputWarning` messages issued inside the block into the yielded list (in order, each once)
    and issue them again when the block ends, so an outer collector or the caller's filters still see them.

    Other warnings pass through unchanged.
    """
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", InputWarning)
        yield notes
    for item in caught:
        if issubclass(item.category, InputWarning):
            message = str(item.message)
            if message not in notes:
                notes.append(message)
        else:
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno, source=item.source)
    for message in notes:
        warnings.warn(message, InputWarning, stacklevel=3)
