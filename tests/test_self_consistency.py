"""Several programs per question, each run in its own real child kernel, and the vote.

A scripted model supplies the candidates (one batch of ``samples`` replies per round); the
kernels, their isolation, timeouts and the data guard are real.
"""

from __future__ import annotations

import time

import pandas as pd
import psutil
import pytest

from pal_jupyter import ExecutorLimits, KernelPool, ScriptedBackend, solve
from pal_jupyter import prompts
from pal_jupyter.engine.loop import SolveObserver
from pal_jupyter.engine.vote import doubt_message, effort_note
from pal_jupyter.backends import GenerationOptions
from pal_jupyter.engine.trace import read_trace


def fenced(code: str, explanation: str = "") -> str:
    return f"{explanation}\n```python\n{code}\n```\n"


@pytest.fixture(scope="module")
def pool():
    with KernelPool(ExecutorLimits(timeout_s=3, grace_s=1)) as pool:
        yield pool


def test_five_programs_in_one_batch_vote_and_the_winner_is_final(pool, tmp_path):
    model = ScriptedBackend([
        fenced("x = 60 * 2.5\nprint(x)"),
        fenced("print(60 * 2.5)"),
        fenced("print(60 + 2.5)"),
        fenced("print(undefined_name)"),
        fenced("speed = 60\nhours = 2.5\nprint(speed * hours)"),
    ])
    trace = tmp_path / "trace.jsonl"
    session = solve("How far?", model=model, executor=pool, method="vote", samples=5, trace=trace)
    assert model.batch_sizes == [5]  # one batched generation, not five
    assert session.rounds == 1 and len(session.programs) == 5
    assert [a.sample for a in session.programs] == [1, 2, 3, 4, 5]
    vote = session.vote
    assert vote.winner.answer.value == 150 and vote.winner.samples == [1, 2, 5]
    assert session.agreement == 0.6 and session.confidence == "medium"
    assert session.final.sample == 2 and session.answer == "150.0"  # the shortest winning program
    assert session.programs[3].error_type == "NameError" and session.programs[2].answer == "62.5"
    records = list(read_trace(trace))
    assert [(r["sample"], r["votes"], r["won_vote"]) for r in records] == [
        (1, 3, True), (2, 3, True), (3, 1, False), (4, 0, False), (5, 3, True)]
    assert {r["reward"] for r in records} == {"<|good|>", "<|bad|>"}


def test_each_program_runs_in_its_own_fresh_kernel(pool):
    # Each program checks for a name that every program defines after the check. The kernel's session
    # id tells kernels apart (in the sandbox every kernel is pid 2 of its own pid namespace).
    probe = ("print(get_ipython().kernel.session.session, 'leak' if 'left_behind' in globals() else 'clean')\n"
             "left_behind = 1")
    model = ScriptedBackend([fenced(probe)] * 3)
    session = solve("Isolation?", model=model, executor=pool, method="vote", samples=3, max_programs=3)
    outputs = [a.execution.stdout.split() for a in session.programs]
    assert len({pid for pid, _ in outputs}) == 3 and all(state == "clean" for _, state in outputs)


def test_a_tie_goes_to_the_answer_with_the_shortest_program(pool):
    model = ScriptedBackend([
        fenced("total = 3 + 4\nprint(total)"), fenced("print(8)"), fenced("total = 3 + 4\nprint(total)"), fenced("print(8)"),
    ])
    session = solve("Tie?", model=model, executor=pool, method="vote", samples=4, max_programs=4)
    assert session.answer == "8" and session.vote.votes == 2 and session.confidence == "low"


def test_programs_that_print_nothing_do_not_vote(pool):
    model = ScriptedBackend([fenced("x = 7"), fenced("print(7)"), fenced("y = 1")])
    session = solve("Seven?", model=model, executor=pool, method="vote", samples=3, max_programs=3)
    assert session.answer == "7" and session.vote.votes == 1 and session.vote.candidates == 3
    assert session.agreement == pytest.approx(1 / 3)


def test_when_every_candidate_fails_one_failure_is_repaired_in_a_new_batch(pool):
    failing = [fenced("print(1/0)"), fenced("while True:\n    pass"), fenced("print(totl)")]
    repairs = [fenced("print(10)", "Explanation: fixed.")] * 3
    model = ScriptedBackend(failing + repairs)
    session = solve("Repair?", model=model, executor=pool, method="vote", samples=3)
    assert model.batch_sizes == [3, 3] and session.rounds == 2
    repair_prompt = model.calls[1][-1]["content"]
    assert "print(1/0)" in repair_prompt and "ZeroDivisionError" in repair_prompt  # a fixable error, not the timeout
    assert [a.kind for a in session.round(2)] == ["repair"] * 3
    assert session.answer == "10" and session.confidence == "high"


def test_all_candidates_failing_every_round_is_a_failed_session(pool):
    model = ScriptedBackend([fenced("1/0")] * 4)
    session = solve("Never", model=model, executor=pool, method="vote", samples=2, max_attempts=2)
    assert not session.succeeded and session.answer is None and session.confidence == "none"
    assert session.vote.winner is None and session.final.error_type == "ZeroDivisionError"


def test_a_hanging_candidate_costs_its_own_result_only(pool):
    model = ScriptedBackend([fenced("import time\ntime.sleep(600)"), fenced("print(5)"), fenced("print(5)")])
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    start = time.monotonic()
    session = solve("Hang?", model=model, executor=pool, method="vote", samples=3)
    elapsed = time.monotonic() - start
    hung = session.programs[0]
    assert hung.execution.reason.value == "timeout" and hung.error_type == "Timeout"
    assert session.answer == "5" and session.vote.votes == 2
    assert elapsed < 3 + 1 + 10  # timeout + grace + slack: the others did not wait in line behind it
    # The hung kernel is gone and replaced: the pool still runs programs.
    assert pool.run("print('still here')").stdout == "still here\n"
    hung_pid_alive = [p for p in psutil.Process().children(recursive=True)
                      if p.pid not in before and "time.sleep" in _command_line(p)]
    assert hung_pid_alive == []


def _command_line(process: psutil.Process) -> str:
    """A child's command line; '' for one that ended between the listing and the reading (the pool
    starts and retires kernels while the test looks)."""
    try:
        return " ".join(process.cmdline())
    except psutil.NoSuchProcess:
        return ""


def test_a_program_that_replaces_the_users_data_is_refused_before_it_runs(pool, tmp_path):
    marker = tmp_path / "ran.txt"
    sales = pd.DataFrame({"region": ["East", "West", "East"], "units": [2, 3, 4], "price": [10.0, 1.0, 5.0]})
    invented = (f"open({str(marker)!r}, 'w').write('ran')\n"
                "import pandas as pd\nsales = pd.DataFrame({'region': ['East'], 'units': [1], 'price': [1.0]})  # Sample data\n"
                "print((sales.units * sales.price).sum())")
    honest = "east = sales[sales.region == 'East']\nprint((east.units * east.price).sum())"
    model = ScriptedBackend([fenced(invented), fenced(honest), fenced(honest)])
    session = solve("Revenue of East? Print just the number.", model=model, executor=pool, method="vote", samples=3,
                    variables={"sales": sales})
    refused = session.programs[0]
    assert refused.execution is None and refused.error_type == "ReplacedData" and not marker.exists()
    assert "replaced `sales` with data of its own (line 3" in refused.refusal
    assert session.answer == "40.0" and session.vote.votes == 2


def test_a_program_is_stopped_as_soon_as_it_starts_inventing_the_users_data(pool):
    """The model is stopped at the line that starts a made-up table (a real backend stops generating
    there: tests/test_llamacpp.py, test_model.py), and the program is refused, not run."""
    sales = pd.DataFrame({"region": ["East", "West"], "units": [2, 3]})
    table = "\n".join(f"    'units': [{i}, {i + 1}]," for i in range(40))
    invented = f"import pandas as pd\nsales = pd.DataFrame({{\n{table}\n}})\nprint(sales.units.sum())"
    model = ScriptedBackend([fenced(invented), fenced("print(sales.units.sum())")])
    session = solve("Total units? Print just the number.", model=model, executor=pool, method="vote", samples=2, max_programs=2,
                    variables={"sales": sales})
    stopped = session.programs[0]
    assert stopped.completion.endswith("sales = pd.DataFrame({\n"), "no token was spent on the invented table"
    assert stopped.execution is None and stopped.error_type == "ReplacedData"
    assert "line 2: `sales = pd.DataFrame({`" in stopped.refusal
    assert session.answer == "5" and list(sales.units) == [2, 3]


def test_the_guard_feedback_reaches_the_repair_prompt(pool):
    sales = pd.DataFrame({"units": [1, 2]})
    model = ScriptedBackend([fenced("sales = [5, 6]\nprint(sum(sales))"), fenced("print(sales.units.sum())")])
    session = solve("Total units? Print just the number.", model=model, executor=pool, method="vote", samples=1,
                    variables={"sales": sales})
    assert "do not create, load or overwrite it" in model.calls[1][-1]["content"]
    assert session.answer == "3"


def test_a_table_where_one_number_is_asked_is_sent_back(pool):
    sales = pd.DataFrame({"region": ["East", "West"], "revenue": [159.0, 20.0]})
    series = "print(sales.groupby('region').revenue.sum())"
    model = ScriptedBackend([fenced(series), fenced(series), fenced("print(sales.revenue[sales.region == 'East'].sum())")] * 1
                            + [fenced("print(sales.revenue[sales.region == 'East'].sum())")] * 2)
    session = solve("Revenue of East? Print just the number.", model=model, executor=pool, method="vote", samples=2,
                    variables={"sales": sales})
    first = session.round(1)
    assert [a.error_type for a in first] == ["NotANumber", "NotANumber"]
    assert "asks for one number" in model.calls[1][-1]["content"]
    assert session.answer == "159.0"


def test_observer_sees_every_candidate_and_the_vote(pool):
    class Recorder(SolveObserver):
        def __init__(self):
            self.started, self.tokens, self.finished, self.votes = [], set(), [], []

        def program_started(self, attempt):
            self.started.append(attempt.sample)

        def token(self, attempt, text):
            self.tokens.add(attempt.sample)

        def program_finished(self, attempt):
            self.finished.append(attempt.sample)

        def vote_taken(self, session, vote):
            self.votes.append(vote.tally)

    recorder = Recorder()
    solve("Obs?", model=ScriptedBackend([fenced("print(2)")] * 3), executor=pool, method="vote", samples=3, observer=recorder)
    assert recorder.started == [1, 2, 3] and recorder.tokens == {1, 2, 3} and recorder.finished == [1, 2, 3]
    assert recorder.votes == ["3 of 3 programs agree"]


@pytest.mark.parametrize("samples", [0, -1, 1000, "abc", 2.5, True])
def test_bad_sample_counts_are_refused_before_any_work(samples):
    model = ScriptedBackend([])
    with pytest.raises(ValueError, match="samples must be|samples 0 leaves the vote method"):
        solve("Q", model=model, method="vote", samples=samples)
    assert model.calls == []


def test_greedy_decoding_cannot_draw_several_programs():
    model = ScriptedBackend([])
    with pytest.raises(ValueError, match="temperature 0 .* same program 5 times"):
        solve("Q", model=model, method="vote", samples=5, generation=GenerationOptions(temperature=0))
    assert model.calls == []


class _Recorder(SolveObserver):
    def __init__(self):
        self.more: list[tuple[int, int, int]] = []  # (votes, candidates, count) of each weak vote

    def more_programs(self, session, vote, count):
        self.more.append((vote.votes, vote.candidates, count))


def test_a_weak_vote_writes_more_programs_from_the_same_prompt_and_they_join_the_vote(pool, tmp_path):
    # 1 of 5 agree (a five-way tie, 60 first): five more are written, and the pooled 10 settle on 159.
    first = [fenced("print(60)"), fenced("print(160)"), fenced("print(263)"), fenced("print(missing)"), fenced("print(159)")]
    second = [fenced("print(159)"), fenced("print(3 * 53)"), fenced("print(100 + 59)"), fenced("print(159.0)"),
              fenced("print(round(159.0))")]
    model = ScriptedBackend(first + second)
    observer = _Recorder()
    trace = tmp_path / "trace.jsonl"
    session = solve("Revenue of the East?", model=model, executor=pool, method="vote", samples=5, observer=observer, trace=trace,
                    second_opinion="off")
    assert model.batch_sizes == [5, 5] and len(model.calls) == 2 and model.calls[0] == model.calls[1]
    assert observer.more == [(1, 5, 5)]
    assert session.rounds == 1 and [a.sample for a in session.programs] == list(range(1, 11))
    assert {a.samples for a in session.programs} == {10} and {a.index for a in session.programs} == {1}
    assert session.vote.candidates == 10 and session.vote.votes == 6 and session.answer == "159"
    assert session.confidence == "medium"  # 6 of 10
    records = list(read_trace(trace))
    assert len(records) == 10 and sum(r["won_vote"] for r in records) == 6


def test_more_programs_stop_at_max_programs_and_a_clear_vote_needs_none(pool):
    disagree = [fenced(f"print({n})") for n in range(1, 13)]
    model = ScriptedBackend(disagree)
    observer = _Recorder()
    session = solve("Which?", model=model, executor=pool, method="vote", samples=4, max_programs=10, observer=observer,
                    second_opinion="off")
    assert model.batch_sizes == [4, 4, 2] and observer.more == [(1, 4, 4), (1, 8, 2)]
    assert session.vote.candidates == 10 and session.confidence == "low"  # still unsure, and it says so

    agree = ScriptedBackend([fenced("print(7)")] * 5)
    session = solve("Seven?", model=agree, executor=pool, method="vote", samples=5)
    assert agree.batch_sizes == [5] and session.confidence == "high"

    capped = ScriptedBackend(disagree[:5])
    session = solve("Which?", model=capped, executor=pool, method="vote", samples=5, max_programs=5)  # no room for a 6th
    assert capped.batch_sizes == [5] and session.confidence == "low"


def test_a_seeded_question_gives_the_extra_programs_their_own_seed(pool):
    seen = []

    class Seeds(ScriptedBackend):
        def generate_many(self, messages, n, options=None, on_token=None):
            seen.append(options.seed)
            return super().generate_many(messages, n, options, on_token)

    model = Seeds([fenced(f"print({n})") for n in range(1, 7)])
    solve("Which?", model=model, executor=pool, method="vote", samples=3, max_programs=6, generation=GenerationOptions(seed=11),
          second_opinion="off")
    assert seen == [11, 14]


class _Reasoning(_Recorder):
    def __init__(self):
        super().__init__()
        self.started, self.words = [], []

    def reasoning_started(self, session, vote):
        self.started.append((vote.votes, vote.candidates))

    def reasoning_token(self, session, text):
        self.words.append(text)


WEAK = [fenced("print(60)"), fenced("print(160)"), fenced("print(263)"), fenced("print(missing)"), fenced("print(159)")]


def test_a_weak_vote_is_worked_out_in_words_then_by_a_program_that_follows_the_steps(pool):
    words = "The East sold 3 items at 53 each.\n3 * 53 = 159.\nAnswer: 159"
    model = ScriptedBackend(WEAK + [words, fenced("units = 3\nprice = 53\nprint(units * price)")])
    observer = _Reasoning()
    session = solve("Revenue of the East?", model=model, executor=pool, method="vote", samples=5, observer=observer)
    assert model.batch_sizes == [5, 1, 1] and observer.started == [(1, 5)] and "".join(observer.words) == words
    words_prompt, program_prompt = model.calls[1], model.calls[2]
    assert words_prompt[-2:] == [{"role": "user", "content": "Revenue of the East?"},
                                 {"role": "assistant", "content": prompts.WORDS_OPENING}]
    assert program_prompt[-2] == {"role": "assistant", "content": words} and \
        program_prompt[-1]["content"] == prompts.FOLLOW_YOUR_STEPS
    words_options, program_options = model.options[1], model.options[2]
    assert not words_options.stop_after_code and words_options.temperature_for(1) == 0  # greedy, to its end
    assert program_options.temperature_for(1) == 0 and program_options.stop_after_code

    reasoned = session.programs[-1]
    assert (reasoned.kind, reasoned.sample, reasoned.samples, reasoned.index) == ("reasoned", 6, 6, 1)
    opinion = session.second_opinion
    assert opinion.answer.value == 159 and opinion.program == 6 and opinion.text == words
    assert [w.how for w in session.weak_votes] == ["reason"] and observer.more == []  # agreed: no more programs
    vote = session.vote
    assert session.answer == "159" and vote.winner.samples == [5, 6] and vote.winner.words
    assert vote.tally == "2 of 6 programs agree" and vote.second_opinion.value == 159
    # Two ways of solving it agree, so no more programs; the doubt shown is still the programs' own.
    assert session.confidence == "low" and "Worked out in words, the answer is also 159." in doubt_message(session)


def test_words_that_disagree_leave_the_vote_weak_and_more_programs_follow(pool):
    # The program after the words prints 159 (as program 5 did), the words say 4: 159 leads with 2 of 6,
    # still weak, so five more programs are written; the words' dissent stays in the doubt message.
    more = [fenced("print(159)")] * 5
    model = ScriptedBackend(WEAK + ["2 + 2 = 4\nAnswer: 4", fenced("print(159)")] + more)
    observer = _Reasoning()
    session = solve("Revenue of the East?", model=model, executor=pool, method="vote", samples=5, observer=observer)
    assert model.batch_sizes == [5, 1, 1, 5] and [w.how for w in session.weak_votes] == ["reason", "more"]
    assert observer.more == [(2, 6, 5)] and session.weak_votes[1].answer.text == "159"
    assert session.answer == "159" and session.vote.candidates == 11 and not session.vote.winner.words
    assert session.confidence == "medium"  # 7 of 11
    assert "Worked out in words, the answer is 4, not 159" in doubt_message(session)


def test_questions_about_the_users_data_get_no_words_answer(pool):
    model = ScriptedBackend(WEAK + [fenced("print(159)")] * 5)
    session = solve("Revenue of the East?", model=model, executor=pool, method="vote", samples=5,
                    variables={"sales": pd.DataFrame({"units": [3], "price": [53]})})
    assert model.batch_sizes == [5, 5] and session.second_opinion is None


def test_programs_that_ignore_a_value_the_question_names_are_sent_back(pool):
    # All five sum every row: none may vote, one is repaired with the reason, and the repair selects the West.
    sales = pd.DataFrame({"region": ["East", "West", "West"], "units": [3, 4, 5]})
    everything = [fenced("print(sales['units'].sum())")] * 5
    model = ScriptedBackend(everything + [fenced("west = sales[sales['region'] == 'West']\nprint(west['units'].sum())")] * 5)
    session = solve("How many units were sold in the West region? Print just the number.", model=model,
                    executor=pool, method="vote", samples=5, variables={"sales": sales})
    assert [a.error_type for a in session.round(1)] == ["IgnoresFilter"] * 5 and session.rounds == 2
    assert "never uses 'West' (a value of sales['region'])" in model.calls[1][-1]["content"]
    assert session.answer == "9" and session.confidence == "high"


class _LookRecorder(_Recorder):
    def __init__(self):
        super().__init__()
        self.looks = []

    def looked_at_data(self, session, look):
        self.looks.append(look)


def test_a_weak_vote_on_data_looks_at_the_data_then_writes_more_programs_knowing_it(pool):
    """Programs about a frame disagree: a look program (written by pal-jupyter, not the model) prints
    the rows the question names, in a kernel of its own; the next programs' prompt carries its output;
    the user's frame is unchanged."""
    import pandas as pd

    sales = pd.DataFrame({"region": ["East", "West", "East", "North", "West", "East"],
                          "units": [3, 5, 2, 7, 1, 4], "price": [20.0, 15.0, 22.5, 10.0, 30.0, 13.5]})
    before = sales.copy()
    first = [fenced("print(sales.units.sum())"), fenced("print(160)"), fenced("print(263)"),
             fenced("print(sales.loc['East', 'units'])"), fenced("print((sales.units * sales.price)[sales.region == 'East'].sum())")]
    right = fenced("print((sales.units * sales.price)[sales.region == 'East'].sum())")
    model = ScriptedBackend(first + [right] * 5)
    observer = _LookRecorder()
    question = "What is the total revenue (units times price) of the East region? Print just the number."
    session = solve(question, model=model, executor=pool, method="vote", samples=5, observer=observer, variables={"sales": sales},
                    second_opinion="look")
    look = session.data_look
    assert observer.looks == [look] and look.round == 1
    assert "rows of sales where region == 'East': 3" in look.output and "region values: ['East', 'North', 'West']" in look.output
    assert model.batch_sizes == [5, 5] and look.output.strip() in model.calls[1][-1]["content"]
    assert look.output.strip() not in model.calls[0][-1]["content"]
    assert [w.how for w in session.weak_votes] == ["look"] and session.answer == "159.0"
    assert "the data was looked at first" in effort_note(session.weak_votes[0])
    pd.testing.assert_frame_equal(sales, before)


def test_only_look_looks_and_only_at_data(pool):
    import pandas as pd

    sales = pd.DataFrame({"region": ["East", "West"], "units": [3, 5]})
    for kwargs in ({"second_opinion": "words", "variables": {"sales": sales}}, {"second_opinion": "off"}):
        model = ScriptedBackend([fenced(f"print({n})") for n in range(1, 11)])
        session = solve("Total units?", model=model, executor=pool, method="vote", samples=5, max_programs=10, **kwargs)
        assert session.data_look is None and [w.how for w in session.weak_votes] == ["more"]
