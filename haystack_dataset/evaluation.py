"""P-AUC, PDD and PDO: Haystack's predicate-wise metrics, vectorised over all annotated relations at once.

For a predicate p the *population* is every annotated (pair, p): positives from ``relations`` and negatives from
``neg_relations`` (entries with predicate ``-1`` are skipped). A model gives each ordered pair a row of n predicate
scores (no no-relation column). Then, per predicate p:

- **P-AUC** = ROC-AUC of the raw score of p over p's population (Mann-Whitney, a tie counts 1/2);
- the **rank** of p in a relation's score row is its 0-based place in descending order; T_k = {rank < k};
- **PDD** = 1 − mean_{k=1..n−1} |T_k ∩ P| / |P|   (P = positives; lower is better);
- **PDO** = 1 − mean_{k=1..n−1} precision_k, precision_k = |T_k ∩ P| / |T_k| and 1 when T_k is empty.

Predicates with fewer than ``min_positives`` (default 4, as the official script's ``> 3``) positives are not
reported; ``mean`` averages the reported ones. A pair without an output row scores 0.0 and gets the worst rank
n − 1 (never inside any T_k).

Ranks (``rank_mode``):

- ``"paper"`` (default): p is ranked among all n predicate scores;
- ``"official"``: as the released ``calc_metrics.py``, p is ranked among the first n − 1 score columns only (the
  last predicate column is ignored), so present ranks lie in 0..n−2. The script crashes when the last predicate
  is annotated; here that predicate is ranked by the same rule (its place among the first n − 1 columns, 0..n−1)
  and a warning is issued.

Ties (``rank_mode``):

- ``"paper"``: p is placed *after* every other predicate with an equal score, i.e. rank = #{q != p : s_q >= s_p};
  a constant score row therefore gives the worst rank, never the best;
- ``"official"``: as the released script, p's rank is its position in ``row[:n-1].argsort()[::-1]`` (numpy's
  default sort, reversed: of two tied scores the higher column comes first). numpy's default sort is not stable
  and its tie order can depend on the CPU's SIMD sort, so rows with a tie are ranked by that very call, on the
  scores in the dtype they were given in; rows without ties (almost all of them) are ranked by counting.

Inputs the official script crashes on give defined results with a :class:`HaystackInputWarning`: an annotated
image without output rows (its relations count as missing) and the last predicate annotated in official mode. A
reported predicate with positives but no negatives has P-AUC NaN (as scikit-learn >= 1.6 gives the script); in
official mode the P-AUC mean is then NaN too (the script's plain mean), the paper mode averages the defined
values. Output rows that no annotation can use (other images, a segment index past the image's
``segments_info``, a segment paired with itself) are ignored and counted in a warning; two rows for one
*annotated* pair are an error, two rows for a pair no annotation uses are ignored (the script looks up annotated
pairs only).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from haystack_dataset.formats import NO_PREDICATE, SceneGraphAnnotation, image_key
from hoi_bench.errors import ConfigError, PredictionError

RANK_MODES = ("paper", "official")
DEFAULT_MIN_POSITIVES = 4
_ROWS_PER_CHUNK = 65536  # output rows validated and joined at a time: about 30 MB of float64 for n = 56
_BLOCK_VALUES = 8192 * 56  # scores compared per block of rows: about 3.5 MiB of float64, near the cache size
_LANE_CAPACITY = 255  # 0/1 bytes that can be added in one byte lane before it overflows
_EVEN_BYTES = np.uint64(0x00FF00FF00FF00FF)
_ONE_PER_16_BITS = np.uint64(0x0001000100010001)
TIE_RULES = {
    "paper": "a predicate tied with others is ranked after all of them: rank = #{q != p : s_q >= s_p}",
    "official": "as calc_metrics.py: position in numpy's argsort of the first n-1 scores, reversed (of tied scores "
                "the higher column comes first)",
}


class HaystackInputWarning(UserWarning):
    """Input the official script would crash on; the metrics give a defined result and say so."""


@dataclass
class AnnotatedRelations:
    """Every labelled (pair, predicate) of a Haystack file, one entry each, in file order (positives first per image).

    ``image_index`` points into ``image_keys``; ``label`` is 1 for ``relations`` and 0 for ``neg_relations``;
    ``segment_counts`` (optional) is the length of each image's ``segments_info``, used to count output rows that
    no annotation can use.
    """

    image_keys: list[str]
    image_index: np.ndarray
    subject: np.ndarray
    object: np.ndarray
    predicate: np.ndarray
    label: np.ndarray
    skipped_no_predicate: int = 0
    segment_counts: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.predicate)


def annotated_relations(annotation: SceneGraphAnnotation) -> AnnotatedRelations:
    """Flatten the positive and negative relations of ``annotation``; predicate ``-1`` entries are skipped.

    >>> from haystack_dataset.formats import SceneGraphAnnotation, SceneGraphImage
    >>> image = SceneGraphImage(7, "a.jpg", 4, 4, "a.png", [{}, {}], np.zeros((2, 4)), np.zeros(2, dtype=int),
    ...                         np.array([[0, 1, 0]]), np.array([[1, 0, 0], [0, 1, -1]]))
    >>> rel = annotated_relations(SceneGraphAnnotation(["a"], [], ["on", "by"], [image], has_negatives=True))
    >>> len(rel), rel.label.tolist(), rel.skipped_no_predicate, rel.segment_counts.tolist()
    (2, [1, 0], 1, [2])
    """
    images = annotation.images
    keys = [image.key for image in images]
    positives = _stacked([image.relations for image in images])
    negatives = _stacked([image.neg_relations for image in images])
    image_index = np.concatenate([np.repeat(np.arange(len(images)), [len(i.relations) for i in images]),
                                  np.repeat(np.arange(len(images)), [len(i.neg_relations) for i in images])])
    triplets = np.concatenate([positives, negatives])
    label = np.concatenate([np.ones(len(positives), dtype=np.int64), np.zeros(len(negatives), dtype=np.int64)])
    order = np.argsort(image_index, kind="stable")  # file order: each image's positives, then its negatives
    keep = order[triplets[order, 2] != NO_PREDICATE]
    counts = np.array([len(image.boxes) for image in images], dtype=np.int64)
    return AnnotatedRelations(keys, image_index[keep], triplets[keep, 0], triplets[keep, 1], triplets[keep, 2],
                              label[keep], len(order) - len(keep), counts)


def _stacked(tables: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(tables).astype(np.int64).reshape(-1, 3) if tables else np.zeros((0, 3), dtype=np.int64)


def check_output_rows(rows: np.ndarray, num_predicates: int, *, file: str | None = None,
                      first_row: int = 0) -> np.ndarray:
    """Validate a Haystack output array ``[image_id, subject, object, n scores]`` per row; return it as float64.

    Raises :class:`PredictionError` naming the row (counted from ``first_row``, for a block of a larger file) and
    column for a wrong width (the no-relation column must be removed), non-integer or negative id columns, and
    NaN / infinite scores.

    >>> check_output_rows(np.array([[7, 0, 1, 0.5, 0.5]]), 2).shape
    (1, 5)
    """
    return _checked_block(rows, num_predicates, file, first_row)[0]


def _checked_block(rows: np.ndarray, num_predicates: int, file: str | None,
                   first_row: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`check_output_rows` and the block's (rows, 3) id columns, gathered once into a contiguous array."""
    where = f"{file}: " if file else ""
    rows = np.asarray(rows)
    if rows.ndim != 2:
        raise PredictionError(f"{where}output must be a 2-D array [image_id, subject, object, scores...] "
                              f"(expected 2 dimensions, found shape {rows.shape})")
    try:
        rows = rows.astype(np.float64, copy=False)
    except (TypeError, ValueError) as error:
        raise PredictionError(f"{where}output must hold numbers (found dtype {rows.dtype}: {error})") from error
    _check_width(rows.shape[1], num_predicates, where)
    # one sum is finite exactly when every value is (unless finite values overflow it): a single pass, no mask
    bad = ~np.isfinite(rows) if not np.isfinite(rows.sum()) else np.zeros((0, 0), dtype=bool)
    if bad.any():
        row, column = map(int, np.argwhere(bad)[0])
        what = "image_id/subject/object" if column < 3 else f"score of predicate {column - 3}"
        raise PredictionError(f"{where}row {first_row + row}, column {column} ({what}): expected a finite number, "
                              f"found {rows[row, column]} ({int(bad.any(axis=1).sum())} rows affected)")
    ids = np.ascontiguousarray(rows[:, :3])  # one pass over the rows' cache lines, then contiguous work
    bad = (ids != np.round(ids)) | (ids[:, 1:3].min(axis=1, keepdims=True) < 0)
    if bad.any():
        row = int(np.flatnonzero(bad.any(axis=1))[0])
        raise PredictionError(f"{where}row {first_row + row}: image_id, subject and object must be non-negative "
                              f"integers (found {rows[row, :3].tolist()})")
    return rows, ids


def _check_width(columns: int, num_predicates: int, where: str) -> None:
    width = 3 + num_predicates
    if columns != width:
        hint = " (remove the no-relation score column)" if columns == width + 1 else ""
        raise PredictionError(f"{where}score row of the wrong width{hint}: expected {width} columns "
                              f"[image_id, subject, object] + {num_predicates} predicate scores, found {columns}")


def _row_blocks(rows, size: int) -> Iterator[tuple[int, np.ndarray]]:
    """``(first row, block)`` pieces of an output array or of a reader with a ``blocks(size)`` method (an NPY file
    read piece by piece, see :class:`haystack_dataset.predictions.NpyRows`)."""
    if hasattr(rows, "blocks"):
        yield from rows.blocks(size)
        return
    for start in range(0, len(rows), size):
        yield start, rows[start:start + size]


@dataclass
class _RowCounts:
    """What the join saw of the rows it could not use, for the warnings."""

    other_images: int = 0
    past_segments: int = 0
    self_pairs: int = 0


def relation_scores(relations: AnnotatedRelations, rows, num_predicates: int, *,
                    file: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Look up the output row of every annotated relation: ``(scores (R, n), present (R,) bool)``.

    ``rows`` is the output array or an :class:`~haystack_dataset.predictions.NpyRows` file reader; it is validated
    and joined block by block, so only the rows of annotated pairs are ever copied. Rows are matched on (image id,
    subject, object); image ids are compared through :func:`~haystack_dataset.formats.image_key`. Rows no
    annotation can use (other images, a segment index past the image's ``segments_info``, a segment paired with
    itself) are ignored, as the official script does, and counted in a :class:`HaystackInputWarning`; an array
    whose ids match no annotated image at all is an error, and so are two rows for one annotated pair. An annotated
    image without rows triggers a warning too. Missing relations get all-zero scores and ``present = False``.
    ``scores`` is column-major (one contiguous vector per predicate), the layout :func:`predicate_discrimination`
    ranks fastest.
    """
    where = f"{file}: " if file else ""
    rows = rows if hasattr(rows, "blocks") else np.asarray(rows)
    shape = tuple(rows.shape)
    if len(shape) != 2:
        raise PredictionError(f"{where}output must be a 2-D array [image_id, subject, object, scores...] "
                              f"(expected 2 dimensions, found shape {shape})")
    _check_width(shape[1], num_predicates, where)
    code_of = {key: index for index, key in enumerate(relations.image_keys)}
    counts = relations.segment_counts
    base = int(max(relations.subject.max(initial=0), relations.object.max(initial=0),
                   counts.max(initial=0) if counts is not None else 0)) + 1
    wanted = (relations.image_index * base + relations.subject) * base + relations.object
    pair_keys, pair_of_relation = np.unique(wanted, return_inverse=True)
    covered = np.zeros(len(relations.image_keys), dtype=bool)
    seen = _RowCounts()
    code_cache: dict[float, int] = {}
    found_pairs, found_rows, found_scores = [], [], []
    for first, block in _row_blocks(rows, _ROWS_PER_CHUNK):
        block, ids = _checked_block(block, num_predicates, file, first)
        codes = _block_codes(ids[:, 0], code_of, code_cache)
        known = codes >= 0
        seen.other_images += int((~known).sum())
        covered[codes[known]] = True
        subjects, objects = ids[:, 1].astype(np.int64), ids[:, 2].astype(np.int64)
        usable = known.copy()
        if counts is not None:
            limit = np.zeros(len(codes), dtype=np.int64)
            limit[known] = counts[codes[known]]
            past = known & ((subjects >= limit) | (objects >= limit))
            self_pair = known & ~past & (subjects == objects)
            seen.past_segments += int(past.sum())
            seen.self_pairs += int(self_pair.sum())
            usable &= ~past & ~self_pair
        usable &= (subjects < base) & (objects < base)  # no annotated pair has a larger index
        kept = np.flatnonzero(usable)
        keys = (codes[kept] * base + subjects[kept]) * base + objects[kept]
        position = np.minimum(np.searchsorted(pair_keys, keys), max(len(pair_keys) - 1, 0))
        hit = pair_keys[position] == keys if len(pair_keys) else np.zeros(len(keys), dtype=bool)
        found_pairs.append(position[hit])
        found_rows.append(first + kept[hit])
        found_scores.append(block[kept[hit], 3:])
    total_rows = shape[0]
    if total_rows and seen.other_images == total_rows:
        raise PredictionError(f"{where}image ids match no annotated image (expected ids such as "
                              f"{relations.image_keys[:3]}, found {_first_ids(rows)})")
    _warn_unusable(seen, where)
    annotated = np.zeros(len(relations.image_keys), dtype=bool)
    annotated[relations.image_index] = True
    lacking = np.flatnonzero(annotated & ~covered)
    if len(lacking):
        warnings.warn(f"{where}{len(lacking)} annotated images have no output rows (first: "
                      f"{relations.image_keys[lacking[0]]}); their relations score 0 with the worst rank",
                      HaystackInputWarning, stacklevel=2)
    pair_index = np.concatenate(found_pairs) if found_pairs else np.zeros(0, dtype=np.int64)
    row_number = np.concatenate(found_rows) if found_rows else np.zeros(0, dtype=np.int64)
    order = np.argsort(pair_index, kind="stable")
    duplicate = np.flatnonzero(pair_index[order][1:] == pair_index[order][:-1])
    if len(duplicate):
        first_row, second_row = (int(row_number[order[duplicate[0] + i]]) for i in (0, 1))
        key = int(pair_keys[pair_index[order[duplicate[0]]]])
        image, subject, obj = key // (base * base), key // base % base, key % base
        raise PredictionError(f"{where}rows {first_row} and {second_row} both score image "
                              f"{relations.image_keys[image]} pair ({subject}, {obj}); expected one row per "
                              f"annotated pair ({len(duplicate)} duplicated pairs)")
    # per predicate one contiguous row of pair scores, gathered per relation: the transpose of the result is
    # C-contiguous, so the (R, n) result comes out column-major without a second copy
    pair_scores = np.zeros((num_predicates, len(pair_keys)), dtype=np.float64)
    pair_present = np.zeros(len(pair_keys), dtype=bool)
    if len(pair_index):
        pair_scores[:, pair_index] = np.concatenate(found_scores).T
        pair_present[pair_index] = True
    of_relation = pair_of_relation.reshape(-1)
    return np.take(pair_scores, of_relation, axis=1).T, pair_present[of_relation]


def _block_codes(ids: np.ndarray, code_of: dict[str, int], cache: dict[float, int]) -> np.ndarray:
    """Index into ``image_keys`` (-1: not annotated) of each row's image id; rows of one image usually come
    together, so ids are looked up once per run of equal ids, not sorted."""
    if not len(ids):
        return np.zeros(0, dtype=np.int64)
    starts = np.concatenate([[0], np.flatnonzero(ids[1:] != ids[:-1]) + 1])
    run_codes = np.array([_image_code(v, code_of, cache) for v in ids[starts].tolist()], dtype=np.int64)
    return np.repeat(run_codes, np.diff(np.append(starts, len(ids))))


def _image_code(value: float, code_of: dict[str, int], cache: dict[float, int]) -> int:
    if value not in cache:
        cache[value] = code_of.get(image_key(value), -1)
    return cache[value]


def _first_ids(rows) -> list[str]:
    for _, block in _row_blocks(rows, 1024):
        return [image_key(v) for v in np.unique(np.asarray(block[:, 0], dtype=np.float64))[:3].tolist()]
    return []


def _warn_unusable(seen: _RowCounts, where: str) -> None:
    if seen.other_images:
        warnings.warn(f"{where}{seen.other_images} output rows belong to images that are not annotated; ignored",
                      HaystackInputWarning, stacklevel=3)
    if seen.past_segments or seen.self_pairs:
        warnings.warn(f"{where}{seen.past_segments + seen.self_pairs} output rows of annotated images can match no "
                      f"annotation and are ignored, as the official script does ({seen.past_segments} with a "
                      f"segment index past the image's segments_info, {seen.self_pairs} pairing a segment with "
                      f"itself)", HaystackInputWarning, stacklevel=3)


def _score_matrix(scores) -> np.ndarray:
    """``scores`` as float64 in one contiguous block: row-major or column-major, whichever it already is."""
    scores = np.asarray(scores, dtype=np.float64)
    return scores if scores.flags.c_contiguous or scores.flags.f_contiguous else np.ascontiguousarray(scores)


def _own_scores(scores: np.ndarray, predicate: np.ndarray) -> np.ndarray:
    """``scores[i, predicate[i]]`` as a 1-D take from the flat buffer, several times cheaper than 2-D indexing."""
    row_step, column_step = (stride // scores.itemsize for stride in scores.strides)
    flat = scores.ravel(order="K")  # a view for either contiguous layout
    return flat.take(np.arange(len(predicate)) * row_step + predicate * column_step)


def _ranks(scores: np.ndarray, predicate: np.ndarray, own: np.ndarray, present: np.ndarray | None,
           rank_mode: str, tie_dtype: np.dtype | type = np.float64) -> np.ndarray:
    n = scores.shape[1]
    competitors = n if rank_mode == "paper" else n - 1  # official: the last column never competes
    count = _count_by_column if scores.flags.f_contiguous and not scores.flags.c_contiguous else _count_by_row_block
    ranks, equal = count(scores, own, competitors, rank_mode == "official")
    ranks -= predicate < competitors  # a predicate among the competing columns counted itself once
    if rank_mode == "official":
        _official_tie_ranks(scores, predicate, equal, present, ranks, tie_dtype)
    if present is not None:
        ranks = np.where(present, ranks, n - 1)
    return ranks


def _official_tie_ranks(scores: np.ndarray, predicate: np.ndarray, equal: np.ndarray, present: np.ndarray | None,
                        ranks: np.ndarray, tie_dtype: np.dtype | type) -> None:
    """Re-rank, in place, the rows where p ties another of the first n - 1 columns, exactly as ``calc_metrics.py``:
    p's position in ``row[:n-1].argsort()[::-1]``, computed by that numpy call on the row in ``tie_dtype`` (the
    dtype the scores were given in; float64 holds float32/float16 values exactly, so casting back restores them).
    ``equal`` counts, per row, the first n - 1 columns equal to p's own score (p itself included).

    numpy's default sort is not stable and its tie order may come from a SIMD sort that depends on the CPU, so no
    rule written here could reproduce it; the same call on the same data does.
    """
    m = scores.shape[1] - 1
    candidates = predicate < m
    if present is not None:
        candidates &= present
    for row in np.flatnonzero(candidates & (equal > 1)).tolist():  # equal counts p itself once
        order = scores[row, :m].astype(tie_dtype).argsort()
        ranks[row] = m - 1 - int(np.flatnonzero(order == predicate[row])[0])


def _count_by_column(scores: np.ndarray, own: np.ndarray, columns: int,
                     ties: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """Per row, how many of the first ``columns`` scores are >= ``own`` (and, with ``ties``, how many equal it),
    for column-major ``scores``.

    Each predicate column is one contiguous vector, so every comparison is a single long flat loop; the equality
    count reuses the column while it is in cache. Every column, compared or not, is checked for NaN (which cannot
    be ranked) while it is in cache.
    """
    dtype = np.uint8 if columns < 256 else np.int64
    counts = np.zeros(len(own), dtype=dtype)
    equal = np.zeros(len(own), dtype=dtype) if ties else None
    hit = np.empty(len(own), dtype=bool)
    for column in range(scores.shape[1]):
        if np.isnan(scores[:, column].min(initial=0.0)):  # min propagates NaN: no temporary mask
            _raise_nan(scores)
        if column < columns:
            np.greater_equal(scores[:, column], own, out=hit)
            np.add(counts, hit.view(np.uint8), out=counts)
            if ties:
                np.equal(scores[:, column], own, out=hit)
                np.add(equal, hit.view(np.uint8), out=equal)
    return counts.astype(np.int64), None if equal is None else equal.astype(np.int64)


def _count_by_row_block(scores: np.ndarray, own: np.ndarray, columns: int,
                        ties: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """Per row, how many of the first ``columns`` scores are >= ``own`` (and, with ``ties``, how many equal it),
    for row-major ``scores``.

    Works in cache-sized blocks of rows with ``own`` repeated to the block's shape, so the comparison runs as one
    flat loop instead of one short loop per row; the boolean block is then counted eight columns at a time. The
    NaN check reads each block while it is in cache.
    """
    rows, n = scores.shape
    block = max(1, min(rows, _BLOCK_VALUES // n))
    at_least = np.zeros((block, -(-n // 8) * 8), dtype=bool)  # padding columns stay False: they never count
    repeated = np.empty((block, n))
    counts = np.empty(rows, dtype=np.int64)
    equal = np.empty(rows, dtype=np.int64) if ties else None
    for start in range(0, rows, block):
        stop = min(start + block, rows)
        size = stop - start
        if np.isnan(scores[start:stop].min(initial=0.0)):
            _raise_nan(scores)
        repeated[:size] = own[start:stop, None]
        np.greater_equal(scores[start:stop], repeated[:size], out=at_least[:size, :n])
        at_least[:size, columns:n] = False
        counts[start:stop] = _count_true_bytes(at_least[:size].view(np.uint64))
        if ties:
            np.equal(scores[start:stop], repeated[:size], out=at_least[:size, :n])
            at_least[:size, columns:n] = False
            equal[start:stop] = _count_true_bytes(at_least[:size].view(np.uint64))
    return counts, equal


def _count_true_bytes(words: np.ndarray) -> np.ndarray:
    """Row sums of the bytes of ``words`` (R, w) uint64, every byte 0 or 1.

    Words are added column by column (each byte lane then holds a count <= 255), and the eight lanes of the sum
    are folded into one by a shift-and-multiply.
    """
    total = np.zeros(len(words), dtype=np.int64)
    for first in range(0, words.shape[1], _LANE_CAPACITY):
        lanes = words[:, first].copy()
        for column in range(first + 1, min(first + _LANE_CAPACITY, words.shape[1])):
            lanes += words[:, column]
        lanes = (lanes & _EVEN_BYTES) + ((lanes >> np.uint64(8)) & _EVEN_BYTES)  # four 16-bit lanes, each <= 510
        total += ((lanes * _ONE_PER_16_BITS) >> np.uint64(48)).view(np.int64)  # top lane = sum of all four
    return total


def _raise_nan(scores: np.ndarray) -> None:
    row, column = (int(i) for i in np.argwhere(np.isnan(scores))[0])
    raise PredictionError(f"relation {row}, predicate column {column}: NaN score (a NaN cannot be ranked; expected "
                          f"a number)")


@dataclass
class PredicateDiscrimination:
    """Per-predicate P-AUC / PDD / PDO (NaN where not reported) and the counts behind them."""

    p_auc: np.ndarray
    pdd: np.ndarray
    pdo: np.ndarray
    positives: np.ndarray
    negatives: np.ndarray
    reported: np.ndarray
    rank_mode: str
    min_positives: int
    warnings: list[str] = field(default_factory=list)

    def mean(self) -> dict[str, float]:
        """Unweighted mean over the reported predicates.

        A reported predicate without negatives has P-AUC NaN: in official mode the mean is then NaN, as the
        released script's plain mean gives; the paper mode averages the defined values.
        """
        out = {}
        for name in ("p_auc", "pdd", "pdo"):
            values = getattr(self, name)[self.reported]
            if self.rank_mode != "official":
                values = values[~np.isnan(values)]
            out[name] = float(values.mean()) if len(values) else float("nan")
        return out

    def single_metric(self, metric: str, predicate_names: list[str] | None = None) -> dict:
        """One metric's report as the ``p_auc`` / ``pdd`` / ``pdo`` modules return it (NaN as ``None``)."""
        names = predicate_names or [str(i) for i in range(len(self.p_auc))]
        values = getattr(self, metric)
        per_predicate = {names[p]: _json_float(values[p]) for p in np.flatnonzero(self.reported)}
        return {metric: _json_float(self.mean()[metric]), "per_predicate": per_predicate,
                "rank_mode": self.rank_mode, "min_positives": self.min_positives}

    def to_dict(self, predicate_names: list[str] | None = None) -> dict:
        """The report written by ``hoi-bench evaluate p_auc``: NaN becomes ``None`` so the dict is valid JSON."""
        names = predicate_names or [str(i) for i in range(len(self.p_auc))]
        per_predicate = {
            names[p]: {"p_auc": _json_float(self.p_auc[p]), "pdd": _json_float(self.pdd[p]),
                       "pdo": _json_float(self.pdo[p]), "positives": int(self.positives[p]),
                       "negatives": int(self.negatives[p])}
            for p in np.flatnonzero(self.reported)
        }
        return {"rank_mode": self.rank_mode, "tie_rule": TIE_RULES[self.rank_mode], "min_positives": self.min_positives,
                "per_predicate": per_predicate, "mean": {k: _json_float(v) for k, v in self.mean().items()},
                "warnings": list(self.warnings)}


def predicate_discrimination(scores: np.ndarray, predicate: np.ndarray, label: np.ndarray,
                             present: np.ndarray | None = None, *, rank_mode: str = "paper",
                             min_positives: int = DEFAULT_MIN_POSITIVES,
                             tie_dtype: np.dtype | type | None = None) -> PredicateDiscrimination:
    """P-AUC, PDD and PDO of every predicate from the array form of the annotated relations.

    ``scores`` (R, n): the model's score row of each annotated relation's pair (zeros where ``present`` is False);
    ``predicate`` (R,): the annotated predicate; ``label`` (R,): 1 positive, 0 negative. ``tie_dtype``: the dtype
    the scores came in (default: that of ``scores``), in which official mode sorts rows with tied scores.

    The "on" relations of the reference notes' hand-checked fixture (four positives, two negatives, one negative
    pair without an output row):

    >>> scores = np.array([[.5, .1, .05, .3], [.2, .05, .05, .6], [.1, .3, .4, .15], [.25, .35, .1, .2],
    ...                    [.4, .05, .05, .1], [.05, .5, .3, .1], [0, 0, 0, 0]])
    >>> present = np.arange(7) < 6
    >>> label = np.array([1, 1, 1, 1, 0, 0, 0])
    >>> result = predicate_discrimination(scores, np.zeros(7, dtype=int), label, present, rank_mode="official")
    >>> {k: round(v, 6) for k, v in result.mean().items()}
    {'p_auc': 0.75, 'pdd': 0.25, 'pdo': 0.305556}
    >>> paper = predicate_discrimination(scores, np.zeros(7, dtype=int), label, present)
    >>> round(float(paper.pdd[0]), 6), round(float(paper.pdo[0]), 6), paper.reported.tolist()
    (0.416667, 0.333333, [True, False, False, False])
    """
    tie_dtype = np.asarray(scores).dtype if tie_dtype is None else tie_dtype
    _check_rank_mode(rank_mode)
    if int(min_positives) < 1:
        raise ConfigError("min_positives", min_positives, ["an integer >= 1"])
    scores = _score_matrix(scores)
    predicate = np.asarray(predicate, dtype=np.int64)
    label = np.asarray(label).astype(bool).astype(np.int64)
    if scores.ndim != 2 or scores.shape[0] != len(predicate) or len(label) != len(predicate):
        raise PredictionError(f"scores must be (R, n) with R = len(predicate) = len(label); found scores "
                              f"{scores.shape}, {len(predicate)} predicates, {len(label)} labels")
    n = scores.shape[1]
    if n < 2:
        raise PredictionError(f"need at least 2 predicate columns to rank (found {n})")
    out_of_range = np.flatnonzero((predicate < 0) | (predicate >= n))
    if len(out_of_range):
        raise PredictionError(f"relation {int(out_of_range[0])}: predicate index out of range (expected 0 <= "
                              f"predicate < {n}, found {int(predicate[out_of_range[0]])})")
    if present is None:
        present = np.ones(len(predicate), dtype=bool)
    own = np.where(present, _own_scores(scores, predicate), 0.0)
    ranks = _ranks(scores, predicate, own, present, rank_mode, tie_dtype)  # raises on a NaN score
    notes: list[str] = []
    if rank_mode == "official" and (predicate == n - 1).any():
        notes.append(_warn(f"official rank mode: the last predicate (index {n - 1}) is annotated "
                           f"{int((predicate == n - 1).sum())} times; the released script crashes here, so it is "
                           f"ranked among the first {n - 1} columns"))

    # one histogram over (predicate, rank, label) gives the counts, |T_k ∩ P| and |T_k| of every predicate
    hist = np.bincount((predicate * n + ranks) * 2 + label, minlength=2 * n * n).reshape(n, n, 2)
    hist_neg, hist_pos = hist[:, :, 0], hist[:, :, 1]
    positives = hist_pos.sum(axis=1)
    negatives = hist_neg.sum(axis=1)
    reported = positives >= min_positives
    lacking = np.flatnonzero(reported & (negatives == 0))
    if len(lacking):
        notes.append(_warn(f"{len(lacking)} reported predicates have positives but no negatives (first: predicate index "
                           f"{int(lacking[0])}); their P-AUC is undefined (NaN), PDD/PDO are still computed"
                           + ("; the P-AUC mean is NaN, as the released script gives" if rank_mode == "official"
                              else "; the P-AUC mean averages the defined values")))

    true_in_top = np.cumsum(hist_pos, axis=1)[:, : n - 1]          # |T_k ∩ P| for k = 1..n-1
    in_top = true_in_top + np.cumsum(hist_neg, axis=1)[:, : n - 1]  # |T_k|
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = true_in_top / positives[:, None]
        precision = np.where(in_top > 0, true_in_top / np.maximum(in_top, 1), 1.0)
    pdd = np.where(reported, 1.0 - recall.mean(axis=1), np.nan)
    pdo = np.where(reported, 1.0 - precision.mean(axis=1), np.nan)
    auc = np.where(reported, _auc_by_group(own, predicate, label, n, positives, negatives), np.nan)
    return PredicateDiscrimination(auc, pdd, pdo, positives, negatives, reported, rank_mode, min_positives, notes)


def _auc_by_group(score: np.ndarray, group: np.ndarray, label: np.ndarray, n: int, positives: np.ndarray,
                  negatives: np.ndarray) -> np.ndarray:
    """Mann-Whitney ROC-AUC of ``score`` within each group, ties counted 1/2.

    Entries are brought into (group, label) blocks by one radix sort of a small key; each block's scores are then
    sorted on their own, and every positive is located among its group's sorted negatives: the number below it
    plus the number at or below it is twice its Mann-Whitney count.
    """
    key = group.astype(np.int32) * 2 + label  # block 2g: negatives of g, block 2g + 1: its positives
    key = key.astype(np.int16) if 2 * n < 2 ** 15 else key
    blocks = score[np.argsort(key, kind="stable")]
    ends = np.cumsum(np.column_stack([negatives, positives]).reshape(-1))
    auc = np.full(n, np.nan)
    for g in np.flatnonzero((positives > 0) & (negatives > 0)):
        negative = blocks[ends[2 * g] - negatives[g]: ends[2 * g]]
        positive = blocks[ends[2 * g]: ends[2 * g + 1]]
        negative.sort()
        positive.sort()  # sorted needles keep the searches local
        below = np.searchsorted(negative, positive)
        tied = negative[np.minimum(below, len(negative) - 1)] == positive
        wins = below.sum() + 0.5 * (np.searchsorted(negative, positive[tied], "right") - below[tied]).sum()
        auc[g] = wins / (float(positives[g]) * float(negatives[g]))
    return auc


def haystack_scores(annotation: SceneGraphAnnotation, rows, *, rank_mode: str = "paper",
                    min_positives: int = DEFAULT_MIN_POSITIVES, file: str | None = None) -> dict:
    """P-AUC / PDD / PDO of a Haystack output array against a Haystack annotation, as the CLI's JSON report.

    ``rows``: the output array, or an :class:`~haystack_dataset.predictions.NpyRows` reader of an NPY file.
    ``{"rank_mode", "tie_rule", "min_positives", "per_predicate": {name: {"p_auc", "pdd", "pdo", "positives",
    "negatives"}}, "mean": {"p_auc", "pdd", "pdo"}, "warnings": [...]}``

    >>> from haystack_dataset.formats import SceneGraphAnnotation, SceneGraphImage
    >>> image = SceneGraphImage(7, "a.jpg", 4, 4, "a.png", [{}, {}], np.zeros((2, 4)), np.zeros(2, dtype=int),
    ...                         np.array([[0, 1, 0]]), np.array([[1, 0, 0]]))
    >>> annotation = SceneGraphAnnotation(["a"], [], ["on", "by", "at"], [image], has_negatives=True)
    >>> rows = np.array([[7, 0, 1, .6, .3, .1], [7, 1, 0, .2, .5, .3]])
    >>> haystack_scores(annotation, rows, min_positives=1)["per_predicate"]["on"]
    {'p_auc': 1.0, 'pdd': 0.0, 'pdo': 0.0, 'positives': 1, 'negatives': 1}
    """
    relations = annotated_relations(annotation)
    n = len(annotation.predicate_classes)
    rows = rows if hasattr(rows, "blocks") else np.asarray(rows)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", HaystackInputWarning)
        scores, present = relation_scores(relations, rows, n, file=file)
    notes = [str(w.message) for w in caught if issubclass(w.category, HaystackInputWarning)]
    for note in notes:
        warnings.warn(note, HaystackInputWarning, stacklevel=2)
    result = predicate_discrimination(scores, relations.predicate, relations.label, present, rank_mode=rank_mode,
                                      min_positives=min_positives, tie_dtype=rows.dtype)
    result.warnings[:0] = notes
    return result.to_dict(annotation.predicate_classes)


def _warn(message: str) -> str:
    warnings.warn(message, HaystackInputWarning, stacklevel=3)
    return message


def _check_rank_mode(rank_mode: str) -> None:
    if rank_mode not in RANK_MODES:
        raise ConfigError("rank_mode", rank_mode, RANK_MODES)


def _json_float(value: float) -> float | None:
    value = float(value)
    return None if np.isnan(value) else value


def discrimination_from_records(predictions: list | None, references: list | None, *, scores=None, predicates=None,
                                labels=None, present=None, rank_mode: str = "paper",
                                min_positives: int = DEFAULT_MIN_POSITIVES) -> PredicateDiscrimination:
    """:func:`predicate_discrimination` from the inputs of the ``p_auc`` / ``pdd`` / ``pdo`` metric modules.

    Record form: ``predictions[i]`` is the score row (n floats) of annotated relation i's pair, or an empty list
    when the model gave that pair no row; ``references[i]`` is ``{"predicate": p, "label": 1 or 0}``. Array form
    (fast, skips Arrow): ``scores`` (R, n), ``predicates`` (R,), ``labels`` (R,), optional ``present`` (R,).

    >>> r = discrimination_from_records([[0.9, 0.1], [0.2, 0.8], []],
    ...     [{"predicate": 0, "label": 1}, {"predicate": 0, "label": 0}, {"predicate": 0, "label": 1}],
    ...     min_positives=1)
    >>> float(r.p_auc[0]), float(r.pdd[0])
    (0.5, 0.5)
    """
    if scores is not None:
        if predicates is None or labels is None:
            raise PredictionError("the array form needs scores=, predicates= and labels= together")
        return predicate_discrimination(np.asarray(scores), np.asarray(predicates), np.asarray(labels),
                                        None if present is None else np.asarray(present, dtype=bool),
                                        rank_mode=rank_mode, min_positives=min_positives)
    predictions, references = list(predictions or []), list(references or [])
    widths = {len(row) for row in predictions if len(row)}
    if len(widths) != 1:
        raise PredictionError(f"score rows must all have the same width n (one score per predicate, no no-relation "
                              f"column); found widths {sorted(widths) or 'none (every row empty)'}")
    n = widths.pop()
    present_rows = np.array([len(row) > 0 for row in predictions], dtype=bool)
    table = np.zeros((len(predictions), n), dtype=np.float64, order="F")
    if present_rows.any():
        table[present_rows] = np.asarray([row for row in predictions if len(row)], dtype=np.float64)
    predicate = np.array([ref["predicate"] for ref in references], dtype=np.int64)
    label = np.array([ref["label"] for ref in references], dtype=np.int64)
    bad = np.flatnonzero((label != 0) & (label != 1))
    if len(bad):
        raise PredictionError(f"reference {int(bad[0])}: label must be 1 (positive) or 0 (negative), "
                              f"found {int(label[bad[0]])}")
    return predicate_discrimination(table, predicate, label, present_rows, rank_mode=rank_mode,
                                    min_positives=min_positives)
