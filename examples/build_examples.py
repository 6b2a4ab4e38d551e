"""Write the example notebooks from code and, with ``--execute``, save their outputs by running them.

    python examples/build_examples.py            # write them; outputs kept while no code cell changed
    python examples/build_examples.py --execute  # then run each with the default model (make examples)

The notebooks are kept as code so they stay reviewable: a change to their words is a change here.
Their outputs come from running them as a user would, top to bottom in a fresh kernel, through their
own ``%load_ext pal_jupyter`` and ``%%pal`` cells (headless with nbclient, as tests/test_examples.py
does), so a repository page shows what pal-jupyter does without anyone running it. Two things
differ from a live run, both to keep the saved files small and readable everywhere:

* each widget is saved as its static text and HTML (what ``%config PalMagics.freeze = True`` leaves),
  not as a widget view: a page that cannot run widgets shows the HTML, and JupyterLab shows it too
  rather than "model not found";
* each kernel starts with ``PalMagics.seed = 0`` in its configuration (as ``c.PalMagics.seed = 0`` in
  ipython_config.py would set it), so that the programs sampled after a disagreement are the same
  from one build to the next (the careful method's first two programs are greedy anyway); and with
  an empty IPython directory of its own, so that the builder's ~/.ipython settings play no part.
  The seed is set by a start-up line (``IPKernelApp.exec_lines``), not a config file, which
  ``%pal_policy`` would name with its temporary path, and not ``--PalMagics.seed=0`` on the
  kernel's command line, which reaches the magics as text that the option refuses.

The notebooks run in a temporary folder (the trace, the class log and the teacher's report go there,
not into examples/). Notebooks that need a model server (class_server) stay output-free.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).parent
#: Said at the top of every notebook that carries outputs.
SAVED_OUTPUTS = ("*The outputs below come from `make examples`: this notebook run top to bottom, headless, with the "
                 "default model on a 2-core CPU and `c.PalMagics.seed = 0` in the kernel's configuration (so that "
                 "sampled programs repeat from one build to the next). Each widget is saved as its static summary "
                 "(open a program's fold to see its code and output), and no program cell was inserted: inserting "
                 "needs JupyterLab or Notebook 7.*")


def notebook(*cells) -> nbformat.NotebookNode:
    nb = new_notebook(cells=list(cells))
    for number, cell in enumerate(nb.cells, 1):
        cell.id = f"cell-{number:02d}"  # stable ids: rebuilding changes nothing that did not change
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


MATH = notebook(
    new_markdown_cell(
        "# Math tutoring with `%%pal`\n\n"
        "Each `%%pal` cell holds a word problem in plain language. A local model writes short Python programs "
        "for it, each runs in its own throw-away kernel (never in this one), and the answer comes from what "
        "the programs print: from the computer, not from the model's head.\n\n"
        "By default (`--method careful`) the model first writes two programs, greedily, from two independent "
        "prompts: one after worked examples, one with no examples at all. When both print the same answer, "
        "the widget shows it as sure: \"2 of 2 programs, written independently, agree on this answer\". When "
        "they disagree, the answer of the program after the worked examples is kept, but it is never shown as "
        "sure: the widget says it is not sure and shows the competing answers. If every program fails, the model reads "
        "the error, explains it in plain words and writes a corrected program.\n\n"
        "The final program is inserted as a new cell below each question, so students can read it, "
        "change it and run it themselves.\n\n" + SAVED_OUTPUTS
    ),
    new_code_cell("%load_ext pal_jupyter"),
    new_markdown_cell("## A one-step problem\nThe widget shows the answer, how many programs agree on it, and a tab "
                      "per program: the code as the model writes it, its output and its answer."),
    new_code_cell("%%pal\nIf a train travels 60 mph for 2.5 hours, how far does it go?"),
    new_markdown_cell("## A multi-step problem (GSM8K)\nThe programs name every quantity, which makes the reasoning "
                      "easy to follow. When the two programs disagree, the widget shows both answers and says it "
                      "is not sure."),
    new_code_cell(
        "%%pal\nJanet's ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes "
        "muffins for her friends every day with four. She sells the remainder at the farmers' market daily "
        "for $2 per fresh duck egg. How much in dollars does she make every day at the farmers' market?"
    ),
    new_markdown_cell(
        "## A tricky one: percentages of percentages\n"
        "Problems like this are where programs go wrong. A program that fails shows its error on its page in "
        "the widget, and a disagreement is shown as doubt, with both answers. Only when every program "
        "fails is the error sent back to the model: the next attempt shows its explanation in plain words, "
        "then the corrected program."
    ),
    new_code_cell(
        "%%pal\nA jacket costs $80. It is discounted by 25%, and then the discounted price is increased by "
        "10% sales tax. What is the final price in dollars?"
    ),
    new_markdown_cell(
        "## What happened, in numbers\nThe last session is kept on the magics object: every program with its "
        "output, error, explanation and timings, and the vote. This is also what goes into the trace file. "
        "A program's kind says how it was asked for: `initial` (the two first programs), `reasoned` (after the "
        "words, in the vote method) or `repair`."
    ),
    new_code_cell(
        "session = get_ipython().magics_manager.registry['PalMagics'].last_session\n"
        "for program in session.programs:\n"
        "    print(program.index, program.kind, program.error_type or 'ok', program.answer)\n"
        "print(session.vote.tally, '->', session.answer, f'({session.confidence} confidence)')"
    ),
)

PANDAS = notebook(
    new_markdown_cell(
        "# Analysing your own DataFrame with `%%pal`\n\n"
        "Name your DataFrame with `--use` (or just mention it in the question): it is copied into the "
        "program's kernel, and its columns are described to the model. Your own kernel is never touched.\n\n"
        "A question about data, a chart included, gets two greedy programs from two independent prompts: one "
        "after four fixed pandas examples, one from only the description of the data. When they print the same "
        "answer (or draw the same data) it is shown as sure; when they do not, the first that worked stands, not "
        "sure; when both failed, a chart gets a third program after the pandas idioms most like the question, "
        "which joins the vote, and any other question goes straight to the repair.\n\n" + SAVED_OUTPUTS
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
    new_markdown_cell("## A plot\nThe figure is drawn in the program's kernel and shown in the widget. Charts are "
                      "compared by the data they draw (the values of the bars, the points of the line, read back "
                      "from each figure), not by their pixels: when the two programs agree the widget says "
                      "\"2 of 2 programs, written independently, draw the same chart data\"."),
    new_code_cell("%%pal --use sales\nPlot the monthly revenue trend for Q3 (July to September) as a line chart."),
    new_markdown_cell("In JupyterLab or Notebook 7 the winning program is inserted below the `%%pal` cell: run it "
                      "to draw the plot in this notebook."),
)

OPTIONS = notebook(
    new_markdown_cell(
        "# A tour of the `%%pal` options\n\n"
        "How programs are asked for: `--method careful` (the default) writes two greedy programs from "
        "independent prompts and, only when they disagree about a chart, asks more: a third program after the "
        "pandas idioms most like the question when both failed; "
        "`--method vote` is the method before it: `--samples` programs sampled from one prompt, the answer "
        "most of them print wins, and more are written while fewer than 3 in 5 agree. `--seed` makes sampled "
        "programs repeatable.\n\n" + SAVED_OUTPUTS
    ),
    new_code_cell("%load_ext pal_jupyter"),
    new_markdown_cell("`%pal_config` shows the current settings; `%config PalMagics.NAME = VALUE` changes them for this session "
                      "(or put `c.PalMagics.NAME = VALUE` in `ipython_config.py` to keep them)."),
    new_code_cell("%pal_config"),
    new_code_cell("%config PalMagics.max_attempts = 2"),
    new_markdown_cell("Options on the `%%pal` line apply to one question. `%%pal?` lists them all."),
    new_code_cell("%%pal --no-insert --timeout 10\nHow many seconds are there in a week?"),
    new_markdown_cell("The line form for one-liners, with `--quiet` for a plain-text summary instead of the widget. "
                      "Leave off a final `?`: IPython reads it as a request for help. `--method vote --samples 1` writes a single "
                      "greedy program: the fastest answer, but nothing cross-checks it."),
    new_code_cell("%pal --quiet --no-insert --method vote --samples 1 What is 15% of 240"),
    new_markdown_cell(
        "Every program is appended to a JSONL trace (`%config PalMagics.trace` sets where; `off` disables it). "
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
        "the question (when its own programs disagree it says so and gives no hints: it shows their competing "
        "approaches, never their answers), then helps one step at a time: **1** guiding questions, **2** a skeleton with blanks, "
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
        "For this demo the notebook sets the policy itself (nothing is locked here).\n\n" + SAVED_OUTPUTS
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
        "student's own throw-away kernel; only the writing of programs moves to the server.\n\n"
        "*This notebook needs that server, so it is saved without outputs (`make examples` skips it); the "
        "other examples carry theirs.*"
    ),
    new_code_cell("%load_ext pal_jupyter\n%config PalMagics.model = \"openai:default\""),
    new_markdown_cell("## A question, answered by the server\nThe two careful programs are asked for one after the "
                      "other (one after worked examples, one from none), their tokens streaming into the widget as "
                      "they arrive. When they disagree, the answer is shown with both programs' answers, as not "
                      "sure."),
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

NOTEBOOKS = {"math_tutoring": MATH, "pandas_analysis": PANDAS, "options_tour": OPTIONS, "classroom": CLASSROOM,
             "class_server": CLASS_SERVER}
#: Written without outputs: they need a model server (vLLM) that a build machine may not run.
NEEDS_SERVER = {"class_server"}
CELL_TIMEOUT_S = 900  # one %%pal question: the default model on 2 CPU cores takes 20-200 s, its first load more
SEED = 0
#: The widget's own view: only a live kernel can draw it; a saved notebook keeps the static HTML beside it.
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def code_sources(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    return [(cell.id, cell.source) for cell in nb.cells if cell.cell_type == "code"]


def write(name: str, nb: nbformat.NotebookNode) -> str:
    """Write ``nb``; keep the saved outputs when no code cell changed (a change of words needs no rerun)."""
    path = HERE / f"{name}.ipynb"
    kept = ""
    if path.exists() and name not in NEEDS_SERVER:
        saved = nbformat.read(path, as_version=4)
        if code_sources(saved) == code_sources(nb) and any(c.get("outputs") for c in saved.cells):
            outputs = {c.id: c for c in saved.cells if c.cell_type == "code"}
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.outputs, cell.execution_count = outputs[cell.id].outputs, outputs[cell.id].execution_count
            if "language_info" in saved.metadata:  # written by the run: rebuilding changes nothing
                nb.metadata["language_info"] = saved.metadata["language_info"]
            kept = " (outputs kept)"
        elif any(c.get("outputs") for c in saved.cells):
            kept = " (code changed: outputs dropped, run make examples)"
    nbformat.write(nb, path)
    return f"wrote {path}{kept}"


def static(nb: nbformat.NotebookNode) -> None:
    """Keep what any page can show: each widget's text and HTML, not its view of a kernel's live model."""
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            if WIDGET_VIEW in output.get("data", {}) and len(output["data"]) > 1:
                del output["data"][WIDGET_VIEW]
    nb.metadata.pop("widgets", None)


def execute(name: str, workdir: Path) -> float:
    """Run one notebook top to bottom with the default model and save it with its outputs."""
    import nbclient

    path = HERE / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", record_timing=False, store_widget_state=False,
        extra_arguments=[f"--IPKernelApp.exec_lines=get_ipython().config.PalMagics.seed = {SEED}"],
        resources={"metadata": {"path": str(workdir)}})
    start = time.perf_counter()
    client.execute()
    static(nb)
    nbformat.write(nb, path)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--execute", action="store_true", help="run each notebook and save its outputs")
    runnable = [name for name in NOTEBOOKS if name not in NEEDS_SERVER]
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"the notebooks to run: {', '.join(runnable)} (default: all of them)")
    args = parser.parse_args(argv)
    unknown = [name for name in args.names if name not in runnable]
    if unknown:
        parser.error(f"cannot run {', '.join(unknown)}: the notebooks to run are {', '.join(runnable)}")
    for name, nb in NOTEBOOKS.items():
        print(write(name, nb), flush=True)
    if not args.execute:
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the kernels inherit it: no model hub is asked
    failed = []
    with tempfile.TemporaryDirectory(prefix="pal-examples-") as workdir:
        os.environ["PAL_JUPYTER_TRACE"] = str(Path(workdir) / "trace.jsonl")  # not the user's own trace
        os.environ["IPYTHONDIR"] = str(Path(workdir) / "ipython")  # an empty profile, not ~/.ipython
        for name in args.names or runnable:
            print(f"running {name}.ipynb ...", flush=True)
            try:
                seconds = execute(name, Path(workdir))
            except Exception as exc:  # nbclient's CellExecutionError, a dead kernel ...: report and go on
                failed.append(name)
                print(f"{name}.ipynb failed (not saved): {str(exc)[-2000:]}", file=sys.stderr, flush=True)
                continue
            size = (HERE / f"{name}.ipynb").stat().st_size
            print(f"saved {name}.ipynb with its outputs: {seconds:.0f} s, {size / 1024:.0f} KiB", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
