""".npz and .mat inputs are capped like .gz inputs: sizes decided before inflating, never a MemoryError.

A 3 MB file that inflates to 3 GiB used to take 12-15 s and 3.2-3.5 GB of memory before it was refused, and an
``.npz`` member whose header claims a 2.9 TiB array ended in a ``MemoryError`` traceback. The bombs here are
generated in milliseconds: a deflate stream of zeros is cut into identical full-flush segments, so 3 GiB of
zeros is one 1 MiB segment repeated (the zip CRC is left 0: the reader refuses long before it would check it).
"""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from hoi_bench import archives, files
from hoi_bench.errors import FormatError
from tests.cli_inputs import HICO_GT, write_command_inputs
from tests.test_bad_inputs import one_line_error, replaced, run, snapshot

REPO = Path(__file__).resolve().parents[2]
GIB = 1024**3
MIB = 1024**2


@pytest.fixture(scope="module")
def commands(tmp_path_factory):
    return write_command_inputs(tmp_path_factory.mktemp("inputs"))


# ------------------------------------------------------------------------------------------- cheap bombs


def deflate_zeros(prefix: bytes, zeros: int, *, zlib_wrapper: bool) -> bytes:
    """A deflate stream of ``prefix`` then ``zeros`` zero bytes (a multiple of 1 MiB), built from repeated
    full-flush segments; with ``zlib_wrapper`` a zlib stream (header and a correct Adler-32), else raw deflate."""
    assert zeros % MIB == 0
    compressor = zlib.compressobj(9, zlib.DEFLATED, 15 if zlib_wrapper else -15)
    head = compressor.compress(prefix) + compressor.flush(zlib.Z_FULL_FLUSH)
    block = bytes(MIB)
    segment = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    assert compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH) == segment  # state reset each time
    tail = compressor.flush()
    stream = head + segment * (zeros // MIB) + tail
    if not zlib_wrapper:
        return stream
    checksum = zlib.adler32(prefix)
    low, high = checksum & 0xFFFF, checksum >> 16
    high = (high + zeros * low) % 65521  # Adler-32 after `zeros` more zero bytes
    return stream[:-4] + struct.pack(">I", high << 16 | low)


def npy_header(dtype: str, shape: tuple[int, ...]) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def zip_with_member(path: Path, name: str, compressed: bytes, size: int) -> Path:
    """A one-member zip (deflate) whose directory declares ``size`` inflated bytes."""
    encoded = name.encode()
    fields = struct.pack("<HHHHHIIIHH", 20, 0, 8, 0, 0x21, 0, len(compressed), size, len(encoded), 0)
    local = b"PK\x03\x04" + fields + encoded
    central = (b"PK\x01\x02" + struct.pack("<H", 20) + fields + struct.pack("<HHHII", 0, 0, 0, 0, 0) + encoded)
    end = b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, 1, 1, len(central), len(local) + len(compressed), 0)
    path.write_bytes(local + compressed + central + end)
    return path


def npz_bomb(path: Path, member: str, data_bytes: int) -> Path:
    """An ``.npz`` whose member ``member`` is a float64 array of ``data_bytes`` bytes of zeros."""
    header = npy_header("<f8", (data_bytes // 8,))
    return zip_with_member(path, f"{member}.npy", deflate_zeros(header, data_bytes, zlib_wrapper=False),
                           len(header) + data_bytes)


def compressed_array(data_bytes: int, *, declared: int | None = None, sizeless_tag: bool = False) -> bytes:
    """One compressed MATLAB v5 element: the double array ``all_boxes`` of ``data_bytes`` zero bytes;
    ``declared`` makes its tag lie about its size, ``sizeless_tag`` gives it a small-element tag instead."""
    name = b"all_boxes"
    subelements = (struct.pack("<IIII", 6, 8, 6, 0) + struct.pack("<IIii", 5, 8, 1, data_bytes // 8)
                   + struct.pack("<II", 1, len(name)) + name.ljust(16, b"\0"))
    size = len(subelements) + 8 + data_bytes
    tag = struct.pack("<II", 14 | 4 << 16, 0) if sizeless_tag else \
        struct.pack("<II", 14, size if declared is None else declared)
    stream = deflate_zeros(tag + subelements + struct.pack("<II", 9, data_bytes), data_bytes, zlib_wrapper=True)
    return struct.pack("<II", 15, len(stream)) + stream


def mat_file(path: Path, *elements: bytes) -> Path:
    header = b"MATLAB 5.0 MAT-file, hoi-bench test bomb".ljust(116, b" ") + bytes(8) + struct.pack("<H", 0x0100) \
        + b"IM"
    path.write_bytes(header + b"".join(elements))
    return path


def mat_bomb(path: Path, data_bytes: int, **kwargs) -> Path:
    """A MATLAB v5 file of one compressed array inflating to ``data_bytes`` zero bytes (see
    :func:`compressed_array`)."""
    return mat_file(path, compressed_array(data_bytes, **kwargs))


# ----------------------------------------------------------------------------- measured in a fresh process

# The peak is this process's own high-water mark (VmHWM): getrusage's ru_maxrss survives exec on Linux, so it
# would report the pytest process that forked it once pytest has grown past the limit.
MEASURE = """
import json, sys, time
from hoi_bench import cli
import haystack_dataset.predictions, hoi_sg_dataset.columnar, hoi_sg_dataset.predictions, scipy.io  # imports: not timed
start = time.perf_counter()
code = cli.main(sys.argv[1:])
seconds = time.perf_counter() - start
with open("/proc/self/status") as status:
    peak_kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
print(json.dumps({"code": code, "seconds": seconds, "peak_mb": peak_kb / 1024}))
"""


def measured(argv: list[str]) -> tuple[dict, str]:
    done = subprocess.run([sys.executable, "-c", MEASURE, *map(str, argv)], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def hico_gt(tmp_path: Path) -> Path:
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(HICO_GT))
    return gt


TOO_LARGE = "too large once decompressed"
BOMBS = {  # case: (argv, what the error says)
    "npz hoi predictions": (lambda tmp: ["evaluate", "hoi_map", "--references", hico_gt(tmp), "--predictions",
                                         npz_bomb(tmp / "pred.npz", "boxes", 3 * GIB)], TOO_LARGE),
    "npz recall predictions": (lambda tmp: ["convert", "recall-predictions", "--out", tmp / "out.json",
                                            "--predictions", npz_bomb(tmp / "recall.npz", "predicate_scores",
                                                                      3 * GIB)], TOO_LARGE),
    "mat detections": (lambda tmp: ["evaluate", "hoi_map", "--protocol", "ho-rcnn", "--references", hico_gt(tmp),
                                    "--predictions", mat_bomb(tmp / "detections.mat", 3 * GIB)], TOO_LARGE),
    "mat detections, tag lying": (lambda tmp: ["evaluate", "hoi_map", "--protocol", "ho-rcnn", "--references",
                                               hico_gt(tmp), "--predictions",
                                               mat_bomb(tmp / "detections.mat", 3 * GIB, declared=1024)],
                                  "inflates past the size its tag declares"),
}


@pytest.mark.parametrize("case", BOMBS)
def test_a_3_gib_bomb_in_3_mb_is_refused_within_2_s_and_500_mb(case, tmp_path):
    make, message = BOMBS[case]
    argv = make(tmp_path)
    bomb = next(Path(a) for a in argv if str(a).endswith((".npz", ".mat")))
    assert bomb.stat().st_size < 4 * MIB
    before = snapshot(tmp_path)
    result, err = measured(argv)
    line = one_line_error(result["code"], err, bomb)
    assert message in line
    assert result["seconds"] < 2 and result["peak_mb"] < 500, result
    assert snapshot(tmp_path) == before


# ------------------------------------------------------------------------------------------------- .npz


@pytest.mark.parametrize(("command", "member"), [("evaluate hoi_map", "boxes"),
                                                   ("evaluate sg_recall", "predicate_scores")])
def test_an_npz_header_claiming_terabytes_is_one_line_not_a_memory_error(commands, command, member, tmp_path,
                                                                         capsys):
    bomb = tmp_path / "claims.npz"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{member}.npy", npy_header("<f8", (400_000_000_000,)) + bytes(64))  # 2.9 TiB claimed
    before = snapshot(tmp_path)
    code, err = run(replaced(commands[command], "--predictions", bomb), capsys)
    line = one_line_error(code, err, bomb, member)
    assert "expected 3200000000000 bytes" in line and "found 64)" in line
    assert snapshot(tmp_path) == before


def test_npz_members_read_back_exactly(tmp_path):
    arrays = {"a": np.arange(12, dtype=np.int32).reshape(3, 4), "f": np.asfortranarray(np.eye(3) * 2.5),
              "names": np.array(["x", "yy"]), "empty": np.zeros((0, 4)), "scalar": np.array("tag")}
    np.savez_compressed(tmp_path / "x.npz", **arrays)
    read = archives.read_npz_members(tmp_path / "x.npz")
    assert read.keys() == arrays.keys()
    for name, array in arrays.items():
        assert read[name].dtype == array.dtype and np.array_equal(read[name], array), name
    assert archives.read_npz_members(tmp_path / "x.npz", ["f", "absent"]).keys() == {"f"}


def test_an_npz_bomb_is_refused_from_its_directory_before_inflating(tmp_path, monkeypatch):
    """The declared sizes decide: the member is never opened."""
    bomb = npz_bomb(tmp_path / "b.npz", "boxes", 3 * GIB)
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda *a, **k: pytest.fail("a member was opened"))
    with pytest.raises(FormatError, match="too large once decompressed"):
        archives.read_npz_members(bomb, ["boxes"])


def test_a_pickled_npz_member_is_refused(tmp_path):
    np.savez(tmp_path / "p.npz", names=np.array(["a", 1], dtype=object))
    with pytest.raises(FormatError, match="object array"):
        archives.read_npz_members(tmp_path / "p.npz")


# ------------------------------------------------------------------------------------------------- .mat


def test_a_compressed_mat_within_the_limit_reads_as_before(tmp_path):
    scipy_io = pytest.importorskip("scipy.io")
    cells = np.empty((2, 3), dtype=object)
    for k in range(6):
        cells.flat[k] = np.full((k, 9), float(k))
    scipy_io.savemat(tmp_path / "c.mat", {"all_boxes": cells, "other": np.ones((50, 50))}, do_compression=True)
    archives.check_mat_inflated_size(tmp_path / "c.mat")  # passes
    read = scipy_io.loadmat(tmp_path / "c.mat")["all_boxes"]
    assert all(np.array_equal(read.flat[k], cells.flat[k]) for k in range(6) if k)


def test_a_compressed_mat_element_that_is_not_an_array_is_refused_at_its_first_tag(tmp_path):
    """MATLAB and scipy compress only arrays (miMATRIX); a stream starting with another tag (here a small-element
    tag declaring no size) is refused before more than its first step is inflated."""
    bomb = mat_bomb(tmp_path / "sizeless.mat", 32 * MIB, sizeless_tag=True)
    with pytest.raises(FormatError, match="does not hold an array") as refused:
        archives.check_mat_inflated_size(bomb)
    assert str(bomb) in str(refused.value)


def test_a_mat_element_inflating_past_its_declared_size_is_refused(tmp_path):
    with pytest.raises(FormatError, match="inflates past the size its tag declares"):
        archives.check_mat_inflated_size(mat_bomb(tmp_path / "lie.mat", 4 * MIB, declared=1024))
    archives.check_mat_inflated_size(mat_bomb(tmp_path / "honest.mat", 4 * MIB))


def test_the_limit_counts_every_compressed_element_of_a_file(tmp_path, monkeypatch):
    """Two 5 MiB arrays pass a 16 MiB limit; four do not (lowered from 64 MiB for speed)."""
    monkeypatch.setattr(files, "BOMB_FLOOR_BYTES", 16 * MIB)
    archives.check_mat_inflated_size(mat_file(tmp_path / "two.mat", *[compressed_array(5 * MIB)] * 2))
    with pytest.raises(FormatError, match="too large once decompressed"):
        archives.check_mat_inflated_size(mat_file(tmp_path / "four.mat", *[compressed_array(5 * MIB)] * 4))


def test_arrays_within_the_limits_that_do_not_fit_in_memory_are_one_error(tmp_path, monkeypatch):
    np.savez(tmp_path / "x.npz", boxes=np.zeros((4, 4)))

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(archives.np, "empty", no_memory)
    with pytest.raises(FormatError, match="does not fit in memory"):
        archives.read_npz_members(tmp_path / "x.npz")
