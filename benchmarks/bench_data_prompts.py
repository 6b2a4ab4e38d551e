"""Which prompt loses answers on questions about a DataFrame? One greedy program per prompt, same questions.

    python benchmarks/bench_data_prompts.py [--prompts chat-2shot,plain,data-3shot,data-similar] [--every 2] [--offset 1]

The questions: every ``--every``-th numeric question of the DataFrame suite
(``pal_jupyter/evaluation/dataframes.py``) from the ``--offset``-th, then (at offset 0) the one-line
question about a six-row frame of issue 21 (right answer 159). Each prompt style writes one
greedy program per question (the plainest baseline: no vote, no repair); the program runs in a
child kernel with the frames it was given. Prompts:

* a prompt style of ``pal_jupyter.prompts`` by name (``chat-2shot``: the word-problem
  examples every question used before; ``data-3shot``: the data prompt's three fixed examples;
  ``data-similar``: those, then the two pandas idioms most like the question as turns of their own (the
  default); ``data-inline``: the same idioms after the data, in the question's turn (the careful
  method's first view of a chart); ``data-0shot`` ...);
* ``plain``: the zero-shot prompt of issue 21's measurement: the frame's dtypes and first 3 rows,
  then "uses NAME as it is (do not create or load it) and prints just the answer";
* a style with ``+look`` (``data-similar+look``): that style's prompt with what the look at the data
  printed (``pal_jupyter/engine/data_look.py``; run first in a child kernel, not counted in the time),
  as the product gives it to the programs written after a weak vote.

Printed: right answers per prompt, and how many programs re-created the data they were given
(the data guard refuses those; here they simply count as wrong).
"""

from __future__ import annotations

import argparse
import collections
import json
import time
from typing import Any

from pal_jupyter import KernelPool
from pal_jupyter.backends import GenerationOptions, load_model
from pal_jupyter.evaluation.dataframes import suite_rows
from pal_jupyter import prompts
from pal_jupyter.engine import data_look
from pal_jupyter.engine.extraction import extract_code, replaced_variables
from pal_jupyter.engine.grading import expected_of, is_correct
from pal_jupyter.engine.vote import read_answer
from pal_jupyter.errors import NoCodeError

PLAIN_SYSTEM = ("You are a careful data analyst who writes short Python programs with pandas. The user's "
                "DataFrames already exist in the Python session. Reply with exactly one ```python code block.")


def six_row_question() -> dict[str, Any]:
    import pandas as pd

    sales = pd.DataFrame({"region": ["East", "West", "East", "North", "West", "East"],
                          "units": [3, 5, 2, 7, 1, 4], "price": [20.0, 15.0, 22.5, 10.0, 30.0, 13.5]})
    return {"question": "What is the total revenue (units times price) of the East region? Print just the number.",
            "variables": {"sales": sales}, "answer": 159.0}


def questions(every: int, offset: int = 0) -> list[dict[str, Any]]:
    chosen = [r for r in suite_rows() if not r.get("chart")][offset::every]
    return chosen + [six_row_question()] if offset == 0 else chosen  # the six-row question once, not per half


def messages(prompt: str, question: str, variables: dict[str, Any], look: str | None = None) -> list[dict[str, str]]:
    if prompt.endswith("+look"):
        return prompts.pal_messages(question, variables, style=prompt.removesuffix("+look"), look=look)
    if prompt != "plain":
        return prompts.pal_messages(question, variables, style=prompt)
    described = "\n\n".join(f"`{name}` is a pandas DataFrame with {len(frame)} rows. Its columns and dtypes:\n"
                            f"{frame.dtypes.to_string()}\nFirst 3 rows:\n{frame.head(3).to_string()}"
                            for name, frame in variables.items())
    names = ", ".join(f"`{name}`" for name in variables)
    return [{"role": "system", "content": PLAIN_SYSTEM},
            {"role": "user", "content": f"{described}\n\nWrite a Python program that uses {names} as it is "
                                        f"(do not create or load it) and prints just the answer.\n\nQuestion: {question}"}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--prompts", default="data-3shot,data-similar")
    parser.add_argument("--every", type=int, default=2, help="every n-th numeric question of the suite")
    parser.add_argument("--offset", type=int, default=0, help="starting from this one (--offset 1: the other half)")
    args = parser.parse_args()
    names = args.prompts.split(",")
    model = load_model(args.model)
    tally: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    with KernelPool() as pool:
        for index, row in enumerate(questions(args.every, args.offset)):
            variables, expected = row["variables"], expected_of(row)
            look = None
            if any(name.endswith("+look") for name in names):
                look = pool.run(data_look.look_program(row["question"], variables), variables=variables).stdout
            for name in names:
                start = time.perf_counter()
                reply = model.generate(messages(name, row["question"], variables, look), GenerationOptions(temperature=0.0))
                try:
                    code = extract_code(reply.text).code
                except NoCodeError:
                    code = None
                replaced = bool(code and replaced_variables(code, frozenset(variables)))
                right = False
                if code and not replaced:
                    run = pool.run(code, variables=variables)
                    right = is_correct(read_answer(run), run, expected)
                tally[name].update(questions=1, right=right, replaced=replaced)
                tally[name]["seconds"] += time.perf_counter() - start
                print(json.dumps({"question": index, "prompt": name, "right": right, "replaced": replaced}), flush=True)
    for name in names:
        t = tally[name]
        print(f"{name:<12} right {t['right']}/{t['questions']}, programs that re-created the data "
              f"{t['replaced']}, {t['seconds'] / t['questions']:.1f} s per question")


if __name__ == "__main__":
    main()
