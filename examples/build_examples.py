"""Regenerate the example notebooks (kept as code so they stay small, reviewable and output-free).

    python examples/build_examples.py
"""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).parent


def notebook(*cells) -> nbformat.NotebookNode:
    nb = new_notebook(cells=list(cells))
    for number, cell in enumerate(nb.cells, 1):
        cell.id = f"cell-{number:02d}"  # stable ids: rebuilding changes nothing that did not change
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


MATH = notebook(
    new_markdown_cell(
        "# Math tutoring with `%%pal`\n\n"
        "Each `%%pal` cell holds a word problem in plain language. A local model writes several short Python "
        "programs for it at once (5 by default), each runs in its own throw-away kernel (never in this one), "
        "and the answer most of them print wins: it comes from the computer, not from the model's head. The "
        "widget says how many programs agree; when they disagree it says it is not sure and shows the "
        "competing answers. If every program fails, the model reads an error, explains it in plain words "
        "and tries again.\n\n"
        "The final program is inserted as a new cell below each question, so students can read it, "
        "change it and run it themselves."
    ),
    new_code_cell("%load_ext pal_jupyter"),
    new_markdown_cell("## A one-step problem\nThe widget shows the vote and a tab per program: the code as it is "
                      "written, its output and its answer."),
    new_code_cell("%%pal\nIf a train travels 60 mph for 2.5 hours, how far does it go?"),
    new_markdown_cell("## A multi-step problem (GSM8K)\nThe program names every quantity, which makes the reasoning easy to follow."),
    new_code_cell(
        "%%pal\nJanet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes "
        "muffins for her friends every day with four. She sells the remainder at the farmers' market daily "
        "for $2 per fresh duck egg. How much in dollars does she make every day at the farmers' market?"
    ),
    new_markdown_cell(
        "## A tricky one: percentages of percentages\n"
        "Problems like this are where programs go wrong. If an attempt fails, open its page in the widget: "
        "the error, and the model's explanation of it, are shown before the corrected program."
    ),
    new_code_cell(
        "%%pal\nA jacket costs $80. It is discounted by 25%, and then the discounted price is increased by "
        "10% sales tax. What is the final price in dollars?"
    ),
    new_markdown_cell(
        "## What happened, in numbers\nThe last session is kept on the magics object: every program with its "
        "output, error, explanation and timings, and the vote. This is also what goes into the trace file."
    ),
    new_code_cell(
        "session = get_ipython().magics_manager.registry['PalMagics'].last_session\n"
        "for attempt in session.attempts:\n"
        "    print(attempt.index, attempt.kind, attempt.error_type or 'ok', attempt.answer)\n"
        "print(session.vote.tally, '->', session.answer, f'({session.confidence} confidence)')"
    ),
)

PANDAS = notebook(
    new_markdown_cell(
        "# Analysing your own DataFrame with `%%pal`\n\n"
        "Name your DataFrame with `--use` (or just mention it in the question): it is copied into the "
        "program's kernel, and its columns are described to the model. Your own kernel is never touched."
    ),
    new_code_cell("%load_ext pal_jupyter"),
    new_code_cell(
        "import pandas as pd\n\n"
        "sales = pd.DataFrame({\n"
        "    'month': pd.period_range('2026-01', periods=12, freq='M').strftime('%Y-%m'),\n"
        "    'region': ['North', 'South', 'East', 'West'] * 3,\n"
        "    'revenue': [120, 135, 150, 160, 155, 170, 190, 210, 205, 180, 175, 220],\n"
        "})\n"
        "sales.head()"
    ),
    new_markdown_cell("## A number from the data"),
    new_code_cell("%%pal --use sales\nWhich month had the highest revenue, and how much was it?"),
    new_markdown_cell("## A plot\nThe figure is drawn in the program's kernel and shown in the widget."),
    new_code_cell("%%pal --use sales\nPlot the monthly revenue trend for Q3 (July to September) as a line chart."),
    new_markdown_cell("Run the inserted cell below a `%%pal` cell to reproduce the plot in this notebook."),
)

OPTIONS = notebook(
    new_markdown_cell("# A tour of the `%%pal` options"),
    new_code_cell("%load_ext pal_jupyter"),
    new_markdown_cell("`%pal_config` shows the defaults; `%config PalMagics.NAME = VALUE` changes them for this session "
                      "(or put `c.PalMagics.NAME = VALUE` in `ipython_config.py` to keep them)."),
    new_code_cell("%pal_config"),
    new_code_cell("%config PalMagics.max_attempts = 2"),
    new_markdown_cell("Options on the `%%pal` line apply to one question. `%%pal?` lists them all."),
    new_code_cell("%%pal --no-insert --timeout 10\nHow many seconds are there in a week?"),
    new_markdown_cell("The line form for one-liners, with `--quiet` for a plain-text summary instead of the widget. "
                      "Leave off a final `?`: IPython reads it as a request for help. `--method vote --samples 1` writes a single "
                      "program: the fastest answer, but nothing cross-checks it."),
    new_code_cell("%pal --quiet --no-insert --method vote --samples 1 What is 15% of 240"),
    new_markdown_cell(
        "Every attempt is appended to a JSONL trace (`%config PalMagics.trace` sets where; `off` disables it). "
        "`pal-jupyter leti TRACE` turns it into training text with `<|good|>` / `<|bad|>` reward tokens."
    ),
    new_code_cell(
        "from pal_jupyter.engine.trace import default_trace_path, read_trace\n"
        "records = list(read_trace(default_trace_path()))\n"
        "print(len(records) > 0, records[-1]['reward'])"
    ),
)

CLASSROOM = notebook(
    new_markdown_cell(
        "# The classroom: hints before answers\n\n"
        "In tutor mode `%%pal` does not hand over the program. It first checks privately that it can solve "
        "the question, then helps one step at a time: **1** guiding questions, **2** a skeleton with blanks, "
        "**3** the full program (only if the teacher allows it). Students check their own code with "
        "`%%pal --check`, and `%pal_explain` explains the last error in plain words.\n\n"
        "A teacher sets the policy once for everyone, in the system-wide IPython configuration "
        "(`/etc/ipython/ipython_config.py`):\n\n"
        "```python\n"
        "c.TeacherPolicy.mode = \"tutor\"\n"
        "c.TeacherPolicy.max_hint_level = 3\n"
        "c.TeacherPolicy.log_dir = \"/srv/class/logs\"\n"
        "c.TeacherPolicy.locked = [\"mode\", \"max_hint_level\", \"allow_solutions\"]\n"
        "```\n\n"
        "For this demo the notebook sets the policy itself (nothing is locked here)."
    ),
    new_code_cell(
        "%load_ext pal_jupyter\n"
        "%config TeacherPolicy.mode = \"tutor\"\n"
        "%config TeacherPolicy.log_dir = \"classroom-logs\""
    ),
    new_code_cell("%pal_policy"),
    new_markdown_cell("## A student asks\nThe first hint appears at once; **Next hint** (or `%pal_hint`) shows the next level."),
    new_code_cell(
        "%%pal\nToulouse has twice as many sheep as Charleston. Charleston has 4 times as many sheep as Seattle. "
        "How many sheep do Toulouse, Charleston, and Seattle have together if Seattle has 20 sheep?"
    ),
    new_code_cell("%pal_hint"),
    new_markdown_cell("## The student tries, and asks the tutor to check\nThe tutor compares with its own answer, "
                      "points at the line, explains, and gives a hint rather than the fix."),
    new_code_cell(
        "%%pal --check\nseattle = 20\ncharleston = 4 * seattle\ntoulouse = 2 * charleston\n"
        "print(seattle + charleston + toulose)"
    ),
    new_code_cell(
        "%%pal --check\nseattle = 20\ncharleston = 4 * seattle\ntoulouse = 2 * charleston\n"
        "print(seattle + charleston + toulouse)"
    ),
    new_markdown_cell("## Explaining an error in the student's own notebook\n`%pal_explain` explains the last "
                      "error without running anything again."),
    new_code_cell("prices = [3, 5, 8]\naverage = sum(prices) / len(price)", metadata={"tags": ["raises-exception"]}),
    new_code_cell("%pal_explain"),
    new_markdown_cell("## The teacher's report\nBuilt from the class log: questions per student, errors met, hints "
                      "used before success, time to solution, and questions the tutor could not solve. From a "
                      "terminal: `pal-jupyter report classroom-logs`."),
    new_code_cell(
        "from pal_jupyter.classroom.report import build_report\n"
        "report = build_report(\"classroom-logs\", \"classroom-report.html\", progress=False)\n"
        "print(report)"
    ),
)

CLASS_SERVER = notebook(
    new_markdown_cell(
        "# A class on one model server\n\n"
        "In a class, every student's `%%pal` can ask one shared model server instead of loading a copy of the "
        "model in each kernel. The teacher (or the hub's admin) starts it once, on the machine with the GPU:\n\n"
        "```bash\npal-jupyter serve --host 0.0.0.0 --port 8000      # vLLM, serving the default model as 'default'\n```\n\n"
        "and points every student at it, in the hub's `ipython_config.py`:\n\n"
        "```python\nc.TeacherPolicy.model = \"openai:default@http://model-server:8000/v1\"\n```\n\n"
        "or, as here, with `$PAL_JUPYTER_API_BASE` set to the server's URL (`http://model-server:8000/v1`) "
        "in the students' environment, so notebooks name only the model. The programs still run in each "
        "student's own throw-away kernel; only the writing of programs moves to the server."
    ),
    new_code_cell("%load_ext pal_jupyter\n%config PalMagics.model = \"openai:default\""),
    new_markdown_cell("## A question, answered by the server\nThe five programs are one request (`n=5`): the server "
                      "writes them side by side, and their tokens stream into the widget as they arrive."),
    new_code_cell("%%pal\nA baker makes 24 muffins a tray and bakes 7 trays. She sells all but 18 muffins. "
                  "How many muffins does she sell?"),
    new_markdown_cell("## Which model answered\nThe session names the server; the trace and the class log do too "
                      "(never the API key)."),
    new_code_cell(
        "session = get_ipython().magics_manager.registry['PalMagics'].last_session\n"
        "print(session.model)\n"
        "print(session.vote.tally, '->', session.answer, f'({session.confidence} confidence)')"
    ),
)

if __name__ == "__main__":
    for name, nb in {"math_tutoring": MATH, "pandas_analysis": PANDAS, "options_tour": OPTIONS,
                     "classroom": CLASSROOM, "class_server": CLASS_SERVER}.items():
        nbformat.write(nb, HERE / f"{name}.ipynb")
        print("wrote", HERE / f"{name}.ipynb")
