"""Progress of a question in a terminal (the ``pal-jupyter`` command, terminal IPython)."""

from __future__ import annotations

import os
import sys
import time
from typing import Any, TextIO

from .loop import SolveObserver
from .records import DataLook, Program, Session, Vote
from .vote import more_programs_reason, reasoning_reason, second_opinion_note


class ConsoleObserver(SolveObserver):
    """Shows each attempt as it happens: streamed code, output, error, explanation, the vote.

    A single program is streamed token by token with its output; several candidates are
    summarised one line each, then the tally and the winning program.
    """

    def __init__(self, stream: TextIO = sys.stdout, stream_tokens: bool = True):
        self.out = stream
        self.stream_tokens = stream_tokens
        self.color = stream.isatty() and "NO_COLOR" not in os.environ
        self._written, self._shown = 0, 0.0  # progress of a batch of programs
        self._words_announced = False  # a weak vote said why the words follow (no second header)
        self._words_open = False  # the words stream has no line end yet

    def _style(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.color else text

    def _print(self, text: str = "") -> None:
        if self._words_open:  # the words stream ended without a line end of their own
            print(file=self.out)
            self._words_open = False
        print(text, file=self.out, flush=True)

    def session_started(self, session: Session) -> None:
        if session.context is not None:  # what the notebook sent besides the question, before any program
            self._print(self._style(session.context.note, "2"))

    def program_started(self, program: Program) -> None:
        if program.kind == "reasoned":
            self._print()
            self._print(self._style("── one more program, following those steps ──", "1;36"))
        if program.sample != 1:
            return
        what = "a program" if program.samples == 1 else f"{program.samples} programs"
        label = f"writing {what}" if program.kind == "initial" else f"repairing from the error ({what})"
        self._print(self._style(f"── Attempt {program.index}: {label} ──", "1;36"))

    def token(self, program: Program, text: str) -> None:
        if self.stream_tokens and program.samples == 1:
            print(text, end="", file=self.out, flush=True)
        elif self.color:  # an interactive terminal: a running count instead of five interleaved streams
            self._written += 1
            if time.monotonic() - self._shown >= 0.5:
                self._shown = time.monotonic()
                print(f"\r  writing ... {self._written} tokens so far", end="", file=self.out, flush=True)

    def code_ready(self, program: Program) -> None:
        if program.samples > 1:
            if self._written:
                print("\r\033[K", end="", file=self.out, flush=True)
                self._written = 0
            return
        if self.stream_tokens:
            self._print()
        else:
            if program.explanation:
                self._print(f"Explanation: {program.explanation}")
            self._print(program.code or "")
        self._print(self._style("Running it in a fresh kernel ...", "2"))

    def output(self, program: Program, output: dict[str, Any]) -> None:
        if program.samples > 1:
            return
        kind = output.get("output_type")
        if kind == "stream":
            print(output.get("text", ""), end="", file=self.out, flush=True)
        elif kind in ("display_data", "execute_result"):
            data = output.get("data", {})
            if "text/plain" in data and "image/png" not in data:
                self._print(str(data["text/plain"]))
            else:
                self._print(self._style(f"[{', '.join(sorted(data))}]", "2"))

    def program_finished(self, program: Program) -> None:
        if program.samples > 1:
            self._print(f"  program {program.sample}: {self._verdict(program)}")
            return
        if program.code is None:
            self._print(self._style(f"No code in the reply: {program.no_code_reason}", "33"))
        elif program.refusal is not None:
            self._print(self._style(program.refusal, "33"))
        elif program.execution is not None and program.execution.error is not None:
            self._print(self._style(program.execution.error.traceback.strip(), "31"))
        elif program.off_target is not None:
            self._print(self._style(f"The program {program.off_target}.", "33"))
        elif program.correct is False:
            self._print(self._style("The program ran but its answer is wrong.", "33"))
        timing = f"model {program.generate_s:.1f} s, run {program.execute_s:.2f} s"
        verdict = self._style("ok", "32") if program.good else self._style("failed", "31")
        self._print(self._style(f"[attempt {program.index}: {verdict}; {timing}]", "2"))

    def _verdict(self, program: Program) -> str:
        if program.good:
            return self._style(program.answer or "(ran; printed nothing)", "32")
        error = program.execution.error if program.execution else None
        detail = (f"{error.ename}: {error.evalue}" if error
                  else (program.refusal or program.off_target or program.error_type or "failed"))
        return self._style(" ".join(str(detail).split())[:100], "31")

    def vote_taken(self, session: Session, vote: Vote) -> None:
        if vote.candidates <= 1:
            return
        self._print(self._style(f"Vote: {vote.tally}" + (f" on {vote.winner.answer.text}" if vote.winner else ""), "1"))
        if second_opinion_note(vote):
            self._print(self._style(f"  {second_opinion_note(vote)}", "33" if not vote.winner.words else "2"))  # type: ignore[union-attr]
        if len(vote.groups) > 1:
            others = "; ".join(f"{g.answer.text} ({g.votes})" for g in vote.groups[1:])
            self._print(self._style(f"  other answers: {others}", "33"))
        final = session.final
        if vote.winner is not None and final is not None:
            self._print(self._style(f"── Program {final.sample} (the shortest with the winning answer) ──", "2"))
            self._print(final.code or "")

    def reasoning_started(self, session: Session, vote: Vote) -> None:
        self._print(self._style(f"── {reasoning_reason(vote)} ──", "1;36"))
        self._words_announced = True

    def reasoning_token(self, session: Session, text: str) -> None:
        if not self.stream_tokens:
            return
        if not (self._words_announced or self._words_open):  # the careful method's words view
            self._print(self._style("── the question worked out in words ──", "1;36"))
        self._words_announced, self._words_open = False, True
        print(text, end="", file=self.out, flush=True)

    def more_programs(self, session: Session, vote: Vote, count: int) -> None:
        self._print(self._style(f"── {more_programs_reason(vote, count)} ──", "1;36"))

    def looked_at_data(self, session: Session, look: DataLook) -> None:
        self._print(self._style("── the programs disagree: a look at the data first ──", "1;36"))
        self._print(look.output.rstrip())

    def session_finished(self, session: Session) -> None:
        if session.succeeded:
            answer = session.answer if session.answer is not None else "(the program ran; see its output above)"
            doubt = {"medium": f" (check it: {session.doubt})" if session.doubt else " (most programs agree, check it)",
                     "low": " (NOT SURE: the programs disagree)"}.get(session.confidence, "")
            self._print(self._style(f"Answer: {answer}{doubt}", "1;32" if session.confidence != "low" else "1;33"))
        else:
            self._print(self._style(f"No working program after {session.rounds} attempt(s).", "1;31"))
