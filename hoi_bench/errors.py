"""The one exception hierarchy every hoi-bench package raises.

Every message names where the problem is (file, record, field) and what was expected and found, so a
researcher can fix a 40,000-record annotation file without a debugger.
"""

from __future__ import annotations

from typing import Any


class HoiBenchError(Exception):
    """Base class of every error raised on purpose by hoi-bench."""


class FormatError(HoiBenchError, ValueError):
    """A native file (annotation, prediction, split) does not follow its upstream format.

    >>> str(FormatError("test.json", "bad box", record=3, field="annotations[1].bbox",
    ...                 expected="x1 <= x2", found=[5, 0, 2, 4]))
    "test.json: record 3: field 'annotations[1].bbox': bad box (expected x1 <= x2, found [5, 0, 2, 4])"
    """

    def __init__(
        self,
        file: str | None,
        message: str,
        *,
        record: int | str | None = None,
        field: str | None = None,
        expected: Any = None,
        found: Any = None,
    ) -> None:
        self.file = None if file is None else str(file)
        self.record = record
        self.field = field
        self.expected = expected
        self.found = found
        self.reason = message
        super().__init__(self._render())

    def _render(self) -> str:
        parts = [p for p in (self.file,) if p]
        if self.record is not None:
            parts.append(f"record {self.record}")
        if self.field is not None:
            parts.append(f"field {self.field!r}")
        text = ": ".join(parts + [self.reason]) if parts else self.reason
        details = []
        if self.expected is not None:
            details.append(f"expected {self.expected}")
        if self.found is not None:
            details.append(f"found {_short(self.found)}")
        return f"{text} ({', '.join(details)})" if details else text

    def __reduce__(self):  # keeps the error picklable across datasets' worker processes
        return (_rebuild_format_error, (self.file, self.reason, self.record, self.field, self.expected, self.found))


def _rebuild_format_error(file, message, record, field, expected, found) -> FormatError:
    return FormatError(file, message, record=record, field=field, expected=expected, found=found)


class MissingFilesError(HoiBenchError, FileNotFoundError):
    """Files a builder needs are absent from ``data_dir``; lists how many and the first few.

    >>> str(MissingFilesError("/data/hico", ["images/train2015/a.jpg", "images/train2015/b.jpg"], what="images"))
    '/data/hico: 2 images missing, first: images/train2015/a.jpg, images/train2015/b.jpg'
    """

    def __init__(self, root: str, missing: list[str], *, what: str = "files", hint: str = "", shown: int = 5) -> None:
        self.root = str(root)
        self.missing = list(missing)
        first = ", ".join(self.missing[:shown])
        more = f" (and {len(self.missing) - shown} more)" if len(self.missing) > shown else ""
        message = f"{self.root}: {len(self.missing)} {what} missing, first: {first}{more}"
        if hint:
            message += f". {hint}"
        super().__init__(message)


class ConfigError(HoiBenchError, ValueError):
    """An unknown config, split, metric or option name was asked for."""

    def __init__(self, kind: str, name: Any, available: list[str] | tuple[str, ...]) -> None:
        self.kind = kind
        self.name = name
        self.available = list(available)
        super().__init__(f"unknown {kind} {name!r}; available: {', '.join(map(str, self.available))}")


class PredictionError(HoiBenchError, ValueError):
    """Predictions do not fit the references they are scored against (unknown image, bad index, NaN)."""


class DataError(HoiBenchError, ValueError):
    """Data is well-formed but violates a benchmark invariant (e.g. an image shared across splits)."""


class OutputPathError(HoiBenchError, OSError):
    """A file hoi-bench was asked to write cannot be written there (a folder, under a file, no permission).

    >>> str(OutputPathError("runs", "--output", "is a folder", expected="a file path"))
    "--output 'runs': is a folder (expected a file path)"
    """

    def __init__(self, path: Any, what: str, problem: str, *, expected: str | None = None) -> None:
        self.path = str(path)
        text = f"{what} {self.path!r}: {problem}"
        super().__init__(f"{text} (expected {expected})" if expected else text)


class PushError(HoiBenchError, RuntimeError):
    """Uploading to the Hugging Face Hub failed: offline, no token, a bad repository id, or a network error."""


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
