"""Worked examples chosen for the question: the verified bank and the similarity that picks from it."""

from __future__ import annotations

import contextlib
import io
import json
import math
import random
from pathlib import Path

import pytest

from pal_jupyter import prompts
from pal_jupyter.prompts import retrieval
from pal_jupyter.prompts.retrieval import SimilarQuestions, WorkedProgram
from pal_jupyter.training import worked_programs
from pal_jupyter.training.worked_programs import Unconvertible, convert

GSM8K = Path(__file__).resolve().parents[2] / "shared" / "data" / "gsm8k"
NATALIA = ("Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
           "How many clips did Natalia sell altogether in April and May?")


def printed(program: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(program, {})
    return out.getvalue().strip()


def test_a_solution_becomes_a_chain_of_named_steps_under_its_sentences():
    solution = ("Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
                "Natalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72")
    entry = convert(NATALIA, solution)
    assert entry.program == ("# Natalia sold 48/2 = 24 clips in May.\n"
                             "clips_in_may = 48 / 2\n"
                             "# Natalia sold 48+24 = 72 clips altogether in April and May.\n"
                             "clips_altogether = 48 + clips_in_may\n"
                             "print(clips_altogether)")
    assert entry.answer == 72 and float(printed(entry.program)) == 72


@pytest.mark.parametrize("solution, reason", [
    ("She sold 48/2 = <<48/2=25>>25 clips.\n#### 25", "does not compute"),
    ("She sold 48/2 = <<48/2=24>>24 clips in May.\nSo 96 in all.\n#### 96", "not the answer"),
    ("She sold __import__('os') = <<__import__('os')=1>>1.\n#### 1", "not arithmetic"),
])
def test_solutions_that_do_not_verify_are_left_out(solution, reason):
    with pytest.raises(Unconvertible, match=reason):
        convert(NATALIA, solution)


def test_every_packaged_program_prints_its_reference_answer():
    bank = retrieval.read_bank(retrieval.BANK_PATH)
    assert len(bank) > 6000
    for entry in random.Random(0).sample(bank, 500):
        assert math.isclose(float(printed(entry.program)), entry.answer, rel_tol=1e-4), entry.question


def test_the_packaged_bank_is_a_rebuild_of_gsm8k_train_and_holds_no_test_question(tmp_path):
    if not (GSM8K / "train.jsonl").exists():
        pytest.skip("GSM8K files not present (../shared/data)")
    rows = [json.loads(line) for line in (GSM8K / "train.jsonl").open()]
    rebuilt, left_out = worked_programs.build(rows)
    worked_programs.write(rebuilt, tmp_path / "bank.jsonl.gz")
    assert (tmp_path / "bank.jsonl.gz").read_bytes() == retrieval.BANK_PATH.read_bytes()
    assert len(rebuilt) + sum(left_out.values()) == len(rows)
    test_questions = {json.loads(line)["question"].strip() for line in (GSM8K / "test.jsonl").open()}
    assert not test_questions & {entry.question.strip() for entry in rebuilt}


def bank(*questions: str) -> SimilarQuestions:
    return SimilarQuestions([WorkedProgram(q, f"print({i})", i) for i, q in enumerate(questions)])


def test_the_most_similar_question_comes_last_next_to_the_question():
    index = bank("Tom buys 3 apples at $2 each. How much does he pay?",
                 "A train travels 60 miles per hour for 3 hours. How far does it go?",
                 "A car drives 50 miles per hour for 2 hours, then 40 miles per hour. How far?",
                 "Sara bakes 12 cookies and eats 2. How many are left?")
    chosen = index.most_similar("A bus goes 30 miles per hour for 4 hours. How many miles does it travel?", 2)
    assert [e.answer for e in chosen] == [2, 1]  # both trips, the closer one last
    assert index.most_similar("Lemons cost $1 each; how much do 5 apples cost?", 1)[0].answer == 0


def test_a_banked_question_is_never_its_own_example():
    index = bank("Tom buys 3 apples at $2 each. How much does he pay?", "Tom buys 4 apples at $3 each. Cost?")
    chosen = index.most_similar("Tom buys 3 apples at $2 each. How much does he pay?", 2)
    assert [e.answer for e in chosen] == [1]


def test_terms_drop_the_words_every_problem_has():
    assert retrieval.terms("How many apples does Tom buy at the store?") == ["apple", "tom", "buy", "store"]


def test_the_similar_style_shows_banked_programs_chosen_for_each_question():
    first = prompts.pal_messages("A shirt costs $20 and is discounted 25%. What does it cost now?", style="chat-similar")
    second = prompts.pal_messages("A snail climbs 3 feet a day up a 30 foot wall. How many days?", style="chat-similar")
    assert [m["role"] for m in first] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert first[0] == second[0] and first[1:5] != second[1:5]
    assert "shirt" in first[3]["content"].lower() or "discount" in first[3]["content"].lower()
    banked = {entry.question for entry in retrieval.packaged_index().bank}
    assert first[1]["content"] in banked and first[2]["content"].startswith("```python\n# ")


def test_building_from_a_missing_train_file_is_one_usage_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        worked_programs.main([str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "bank.jsonl.gz")])
    assert stop.value.code == 2 and "no GSM8K train file at" in capsys.readouterr().err
    assert not (tmp_path / "bank.jsonl.gz").exists()
