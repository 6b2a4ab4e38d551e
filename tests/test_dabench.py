"""InfiAgent-DABench's development part: questions, labels and the benchmark's own scoring."""

from __future__ import annotations

from pathlib import Path

import pytest

from pal_jupyter.evaluation import dabench

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "dabench"


def test_a_question_is_right_when_every_labelled_part_is_printed_with_its_value():
    labels = [("mean_fare", "34.65"), ("is_normal", "no")]
    assert dabench.is_right("working...\n@mean_fare[34.65]\n@is_normal[no]\n", labels)
    assert dabench.is_right("@is_normal[no] @mean_fare[34.650000001]", labels)  # numbers within 1e-6
    assert not dabench.is_right("@mean_fare[34.65]", labels)  # a part missing
    assert not dabench.is_right("@mean_fare[34.65] @is_normal[No]", labels)  # the same string, as the benchmark
    assert not dabench.is_right("mean_fare 34.65, is_normal no", labels)  # not in the asked format
    assert not dabench.is_right("@mean_fare[34.6] @is_normal[no]", labels)
    assert not dabench.is_right("", [])


@pytest.mark.skipif(not DATA.exists(), reason="shared/data/dabench is not beside the checkout")
def test_the_development_part_splits_into_two_halves_by_id():
    everything = dabench.load_questions(DATA)
    halves = dabench.load_questions(DATA, "a"), dabench.load_questions(DATA, "b")
    assert len(everything) == 84 and len(halves[0]) + len(halves[1]) == 84
    assert all(q.id % 2 == 0 for q in halves[0]) and all(q.id % 2 == 1 for q in halves[1])
    question = everything[0]
    assert question.labels and question.format in question.text and question.constraints in question.text
    table = dabench.read_table(DATA, question)
    assert len(table) > 0
    with pytest.raises(ValueError, match="half must be one of"):
        dabench.load_questions(DATA, "c")
