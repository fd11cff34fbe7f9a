"""A frequency prior: predicate scores from how often object-class pairs carry each predicate in training data.

It is the classic "FREQ" baseline of scene-graph generation (Zellers et al., Neural Motifs, 2018) in PredCls form,
used by the demo to produce real model outputs in both native prediction formats: the Haystack NPY and the
recall JSON. It is fitted on dataset rows (``load_dataset(FOLDER, "psg", split="train")``) and so also shows the
built dataset being consumed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from haystack_dataset.predictions import RecallPrediction


class FrequencyPrior:
    """p(no relation | class pair) and p(predicate | class pair, related), smoothed towards the global frequency."""

    def __init__(self, predicate_counts: np.ndarray, pair_counts: np.ndarray, smoothing: float = 1.0) -> None:
        self.predicate_counts = predicate_counts
        """(C, C, n) relations of each predicate per (subject class, object class)."""
        self.pair_counts = pair_counts
        """(C, C) ordered segment pairs seen per class pair."""
        self.smoothing = smoothing

    @classmethod
    def fit(cls, rows: Iterable[Mapping], num_classes: int, num_predicates: int,
            smoothing: float = 1.0) -> FrequencyPrior:
        """Count over dataset rows with ``segments[*].category`` and ``relations[*].{subject, object, predicate}``.

        Pass ``ds.select_columns(["segments", "relations"])`` rather than ``ds`` to skip decoding the images.

        >>> rows = [{"segments": [{"category": 0}, {"category": 1}],
        ...          "relations": [{"subject": 0, "object": 1, "predicate": 2}]}]
        >>> prior = FrequencyPrior.fit(rows, num_classes=2, num_predicates=3)
        >>> prior.scores(np.array([0]), np.array([1]))[:, 1:].argmax(axis=1).tolist()
        [2]
        """
        predicate_counts = np.zeros((num_classes, num_classes, num_predicates))
        pair_counts = np.zeros((num_classes, num_classes))
        for row in rows:
            categories = np.array([s["category"] for s in row["segments"]], dtype=np.int64)
            pair_counts += np.bincount((categories[:, None] * num_classes + categories[None, :]).ravel(),
                                       minlength=num_classes * num_classes).reshape(num_classes, num_classes)
            np.subtract.at(pair_counts, (categories, categories), 1)  # a segment is no pair with itself
            seen = set()
            for relation in row["relations"]:
                triplet = (relation["subject"], relation["object"], relation["predicate"])
                if triplet in seen or triplet[2] < 0:
                    continue
                seen.add(triplet)
                predicate_counts[categories[triplet[0]], categories[triplet[1]], triplet[2]] += 1
        return cls(predicate_counts, pair_counts, smoothing)

    def scores(self, subject_classes: np.ndarray, object_classes: np.ndarray) -> np.ndarray:
        """(P, n + 1) scores per pair: column 0 = no relation, then the n predicates; each row sums to 1."""
        overall = self.predicate_counts.sum(axis=(0, 1))
        overall = (overall + 1.0) / (overall.sum() + len(overall))
        counts = self.predicate_counts[subject_classes, object_classes]
        related = counts.sum(axis=1)
        distribution = (counts + self.smoothing * overall) / (related + self.smoothing)[:, None]
        pairs = self.pair_counts[subject_classes, object_classes]
        p_related = (related + 0.5) / (np.maximum(pairs, related) + 1.0)
        return np.column_stack([1.0 - p_related, p_related[:, None] * distribution])

    def predict(self, image_id, categories: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """All ordered pairs i != j of an image's segments (ranked by best predicate score) and their scores."""
        categories = np.asarray(categories, dtype=np.int64)
        s, o = np.nonzero(~np.eye(len(categories), dtype=bool))
        scores = self.scores(categories[s], categories[o])
        order = np.argsort(-scores[:, 1:].max(axis=1), kind="stable")
        return np.column_stack([s, o])[order], scores[order]

    def haystack_rows(self, rows: Iterable[Mapping]) -> np.ndarray:
        """The Haystack NPY array ``[image_id, subject, object, n scores]`` for dataset rows (ids must be numeric)."""
        parts = []
        for row in rows:
            pairs, scores = self.predict(row["image_id"], [s["category"] for s in row["segments"]])
            ids = np.full((len(pairs), 1), float(row["image_id"]))
            parts.append(np.column_stack([ids, pairs, scores[:, 1:]]))
        return np.concatenate(parts) if parts else np.zeros((0, 3 + self.predicate_counts.shape[2]))

    def recall_predictions(self, rows: Iterable[Mapping]) -> list[RecallPrediction]:
        """PredCls recall predictions (pairs index the ground-truth segments) for dataset rows."""
        out = []
        for row in rows:
            pairs, scores = self.predict(row["image_id"], [s["category"] for s in row["segments"]])
            out.append(RecallPrediction(row["image_id"], pairs, scores))
        return out
