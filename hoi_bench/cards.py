"""Dataset-card text that depends on where the data came from: the upstream release or hoi-bench's synthetic sample.

A package's ``card.md`` marks the two variants of its provenance paragraph::

    <!-- source: upstream -->
    This folder was written by `hoi-bench build ...` from the official files ...
    <!-- source: synthetic -->
    This folder holds hoi-bench's synthetic sample ...
    <!-- source: end -->

and its ``card_spec(synthetic=...)`` keeps the one that applies, so a card never claims upstream data for a
folder built from the sample (``hoi-bench demo``, the tests) and never calls real data synthetic.
"""

from __future__ import annotations

import re

_SOURCE_BLOCK = re.compile(
    r"<!-- source: upstream -->\n(?P<upstream>.*?)<!-- source: synthetic -->\n(?P<synthetic>.*?)<!-- source: end -->\n",
    re.DOTALL,
)


def select_source(template: str, *, synthetic: bool) -> str:
    """``template`` with its provenance block reduced to the variant that applies.

    >>> text = "A\\n<!-- source: upstream -->\\nreal\\n<!-- source: synthetic -->\\nmade up\\n<!-- source: end -->\\nB"
    >>> select_source(text, synthetic=True)
    'A\\nmade up\\nB'
    >>> select_source(text, synthetic=False)
    'A\\nreal\\nB'
    """
    match = _SOURCE_BLOCK.search(template)
    if match is None:
        raise ValueError("card template has no '<!-- source: upstream --> ... <!-- source: end -->' block")
    kept = match.group("synthetic" if synthetic else "upstream")
    return template[: match.start()] + kept + template[match.end():]
