"""``collected_notes`` gathers a metric's counted input warnings for its result without hiding them or anything else."""

from __future__ import annotations

import warnings

import pytest

from hoi_bench.input_warnings import InputWarning, collected_notes, warn_input


def test_notes_are_collected_once_in_order_and_issued_again_for_the_caller():
    with pytest.warns(InputWarning) as caught:
        with collected_notes() as notes:
            warn_input("first")
            warn_input("second")
            warn_input("first")
    assert notes == ["first", "second"]
    assert [str(w.message) for w in caught] == ["first", "second"]


def test_an_outer_collector_sees_what_an_inner_one_collected():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)
        with collected_notes() as outer:
            with collected_notes() as inner:
                warn_input("inner")
            warn_input("outer")
    assert inner == ["inner"] and outer == ["inner", "outer"]


def test_other_warnings_pass_through_unchanged():
    with pytest.warns(RuntimeWarning, match="overflow somewhere"):
        with collected_notes() as notes:
            warnings.warn("overflow somewhere", RuntimeWarning)
    assert notes == []
