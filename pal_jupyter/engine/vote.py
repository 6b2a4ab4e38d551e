"""Read each program's answer from what it printed, and take a vote (PAL's self-consistency).

Every program written for a question is run; the answer printed by the most programs wins, and
programs that failed or gave no usable answer do not vote. Answers are compared by kind: **numbers**
(the last line printed holds one: ``150``, ``150.0``, ``Total: $150``) within 1e-3, relative above 1;
**tables** (a printed Series or DataFrame) by their text, numbers rounded to 6 significant digits, and
never read as a number (a Series' ``dtype: float64`` footer is not 64); **text** (``East``) ignoring
case, quotes and punctuation; **charts** by the data they draw (:mod:`.charts`).

A program that ran but answered another question is off target (:func:`mark_off_target`), and is sent
back for repair when no program of the round answered: it printed nothing or a missing value, a table
where one number is asked, a bare number where a name is asked (a row number from ``idxmax()``), a
chart of another kind than the one named, a template or ``True`` where the question's format asks
otherwise, or it left out an asked part or never selects a value or period the question names
(:mod:`.filters`). A tie goes to the caller's preferred program (the careful method's first view), else
to the answer whose shortest program is shortest, then to the first. The agreement (votes for the
winner over programs drawn) is the doubt shown to users (:func:`doubt_message`); how often each level
was right: docs/decisions.md, "The vote method".
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from .answers import parse_number
from .charts import KIND_NAMES, chart_answer
from ..kernels import ExecutionResult
from ..prompts.feedback import (DREW_NO_DATA, PRINTED_NOTHING, TABLE_FOR_NUMBER, boolean_for_words, ignores,
                                ignores_period, missing_parts, no_value, number_for_name, other_kind, printed_template,
                                too_many_bars)
from .filters import NamedGroup, NamedPeriod, NamedValue, ignored_values
from .records import NO_DATA_KEY, UNREAD_FIGURE_KEY, Program, ProgramAnswer, Session, Vote, VoteGroup, WeakVote

_SERIES_FOOTER = re.compile(r"^(?:Name: .*, )?(?:Length: \d+, )?dtype: \w+$")
_FRAME_FOOTER = re.compile(r"^\[\d+ rows x \d+ columns\]$")
_COLUMNS = re.compile(r"\S\s{2,}\S")  # pandas separates columns by two or more spaces
_STRICT_NUMBER_QUESTION = re.compile(r"\b(?:just|only) (?:the|a|one) (?:number|value)\b|\ba single (?:number|value)\b",
                                     re.IGNORECASE)
# "How many ...", "how much ...": a count or an amount, which a word problem seldom puts at 0 or below.
_QUANTITY_WORDING = r"\bhow (?:many|much|long|far|old)\b"
_QUANTITY_QUESTION = re.compile(_QUANTITY_WORDING, re.IGNORECASE)
_NUMBER_QUESTION = re.compile(
    _QUANTITY_WORDING + r"|\bjust the number\b|\bsingle number\b|"
    r"\bwhat (?:is|was|are|were) the (?:total|average|mean|median|sum|number|count|"
    r"maximum|minimum|largest|smallest|highest|lowest|percentage|share|difference)\b",
    re.IGNORECASE,
)
# "Print just the region name", "the name of the customer", "which month name".
_NAME_REQUEST = re.compile(r"\b(?:just|only) the (?:\w+ )?names?\b|\bname of the\b|\bwhich (?:\w+ )?names?\b|"
                           r"\bwhat (?:is|was|are|were) the (?:\w+ )?names?\b", re.IGNORECASE)
# "Which city ...", "customers of which region ...": things known by name.
_WHICH_NAMED_THING = re.compile(
    r"\bwhich (?:of the )?(?:\w+ )?(?:city|cities|town|towns|region|regions|country|countries|state|states|"
    r"province|continent|product|products|category|categories|segment|department|brand|company|team)\b",
    re.IGNORECASE,
)
# Wording that lets the answer be a number: "as a number", "the month number", "how many", "product id"
# ("the number of orders" is a quantity in the question, not the answer's form).
_NUMBER_WORDING = re.compile(r"\bnumbers?\b(?!\s+of\b)|\bnumeric\b|\bhow (?:many|much)\b|\bids?\b|\bcodes?\b|"
                             r"\bindex\b|\bzip\b|\bpostcode\b|\bwhich (?:\w+ )?(?:year|day|week|quarter)\b",
                             re.IGNORECASE)
_BARE_NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")
# An answer printed as the question asks ("@mean_fare[34.69]"), and the question's own request for it.
_NAMED_PART = re.compile(r"@(\w+)\[([^\]\n]*)\]")
_NAMED_PART_ASKED = re.compile(r"@(\w+)\[")
_QUOTED_WORD = re.compile(r"[\"\u201c]([A-Za-z][\w' -]{0,30})[\"\u201d]")
# An f-string without its f prints its fields' names in braces: "@mean[{mean_value}]", "Total: {total}".
_TEMPLATE_FIELD = re.compile(r"\{[A-Za-z_][\w.]*(?:\[[^\]]*\])?(?::[^{}]*)?\}")
# The kind of chart a question asks for, as the figure reader names what was drawn (a histogram is bars).
_CHART_KINDS = {
    "line": re.compile(r"\bline (?:chart|plot|graph)s?\b", re.IGNORECASE),
    "bars": re.compile(r"\b(?:bar (?:chart|plot|graph)s?|histograms?)\b", re.IGNORECASE),
    "pie": re.compile(r"\bpie (?:chart|plot)s?\b", re.IGNORECASE),
    "scatter": re.compile(r"\bscatter ?(?:plot|chart|graph)?s?\b", re.IGNORECASE),
}
# What pandas, numpy and Python print for a value that is not there.
_MISSING_VALUES = {"nan", "none", "null", "nat", "<na>", "inf", "-inf"}


def strictly_asks_for_number(question: str) -> bool:
    """"Print just the number", "a single number": nothing but a number will do."""
    return bool(_STRICT_NUMBER_QUESTION.search(question))


def asks_for_number(question: str) -> bool:
    """Whether the question's wording asks for one number ("how many", "what is the total" ...)."""
    return bool(_NUMBER_QUESTION.search(question))


def looks_like_table(text: str) -> bool:
    """A printed pandas Series or DataFrame: a dtype / shape footer, or aligned columns."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return False
    if _SERIES_FOOTER.match(lines[-1].strip()) or _FRAME_FOOTER.match(lines[-1].strip()):
        return True
    return len(lines) >= 3 and sum(bool(_COLUMNS.search(line)) for line in lines) >= 0.8 * len(lines)


def read_answer(result: ExecutionResult | None) -> ProgramAnswer | None:
    """The answer a finished program gave, or None when it failed or showed nothing."""
    if result is None or not result.ok:
        return None
    if result.charts is not None:
        return chart_answer(result.charts)
    printed = result.text_output().strip()
    frame_value = any(
        b.get("output_type") == "execute_result" and "text/html" in b.get("data", {}) for b in result.outputs
    )
    if printed and (frame_value or looks_like_table(printed)):
        rows = len([line for line in printed.splitlines() if line.strip()])
        return ProgramAnswer("table", f"a table ({rows} lines)", key=_table_key(printed))
    parts = named_parts(printed)
    if parts:
        text = ", ".join(f"{name} {value}" for name, value in parts.items())
        return ProgramAnswer("parts", text, key=_parts_key(parts))
    if printed:
        last = printed.splitlines()[-1].strip()
        value = parse_number(last)
        if value is not None:
            return ProgramAnswer("number", last, value, key=format_number(value))
        return ProgramAnswer("text", last, key=_text_key(last))
    if result.shows_figure:
        return ProgramAnswer("figure", "a figure", key=UNREAD_FIGURE_KEY)
    return None


def named_parts(printed: str) -> dict[str, str]:
    """The answer's parts as the question asked them printed, ``@name[value]`` each (the last of a name
    counts): an answer of several values is all of them, each with its name."""
    return {name: value.strip() for name, value in _NAMED_PART.findall(printed)}


def asked_parts(question: str) -> list[str]:
    """The names a question asks its answer printed under (``@mean_fare[...]``), in its order."""
    return list(dict.fromkeys(_NAMED_PART_ASKED.findall(question)))


def _parts_key(parts: dict[str, str]) -> str:
    """Parts compare by name and value: numbers as :func:`format_number` writes them, text as words."""
    def value_key(value: str) -> str:
        number = parse_number(value) if _BARE_NUMBER.fullmatch(value.replace(" ", "")) else None
        return format_number(number) if number is not None else _text_key(value)
    return "; ".join(f"{name}={value_key(value)}" for name, value in sorted(parts.items()))


def format_number(value: float) -> str:
    """150.0 -> '150', 0.1 + 0.2 -> '0.3': integers without a point, others to 6 significant digits."""
    if math.isfinite(value) and abs(value - round(value)) < 1e-9 * max(1.0, abs(value)):
        return str(int(round(value)))
    return f"{value:.6g}"


def _text_key(text: str) -> str:
    return re.sub(r"[\s\"'`.,;:!?]+", " ", text.casefold()).strip()


def _table_key(text: str) -> str:
    rounded = re.sub(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", lambda m: format_number(float(m.group())), text)
    return " ".join(rounded.split())


def mark_off_target(programs: Sequence[Program], question: str, named: Sequence[NamedValue] = ()) -> None:
    """Set ``off_target`` on programs that ran cleanly but gave no usable answer.

    A program that printed nothing, or a missing value (``nan``, ``None``), answered nothing. A
    table is no answer where one number is asked: strict wording ("print just the number") rules
    tables out always; looser wording ("how many", "what is the total") only when another program
    of the round did print a number, because "how many orders per region" is rightly answered by a
    table. A bare number is no answer where a name is asked (:func:`asks_for_name`), nor a chart of
    another kind than the question names (:func:`asks_for_kind`). A program that never uses a value
    or a period of the data the question ``named`` (see :mod:`.filters`) computed over the wrong rows.
    """
    some_number = any(a.program_answer is not None and a.program_answer.kind == "number" for a in programs)
    tables_out = strictly_asks_for_number(question) or (some_number and asks_for_number(question))
    names_only = asks_for_name(question)
    asked_kind = asks_for_kind(question)
    parts, words = asked_parts(question), offered_words(question)
    for program in programs:
        if program.ran_cleanly:
            answer = program.program_answer
            program.off_target = (_no_answer(answer, tables_out) or _template(program.execution)
                                  or _missing_parts(program.execution, parts, words)
                                  or _number_for_name(answer, names_only)
                                  or _ignores(program.code or "", named) or _ungrouped(program.execution, named)
                                  or _other_kind(program.execution, asked_kind))


def _ungrouped(execution: ExecutionResult | None, named: Sequence[NamedValue]) -> str | None:
    """A chart with more bars (or wedges) than the column the question wants one per has values."""
    groups = [n for n in named if isinstance(n, NamedGroup)]
    if not groups or execution is None or not execution.charts:
        return None
    most = max(groups, key=lambda g: g.distinct)
    drawn = max((len(s.points) for c in execution.charts for s in c.series if s.kind in ("bars", "pie")), default=0)
    return too_many_bars(drawn, most.column, most.distinct) if drawn > most.distinct else None


def asks_for_kind(question: str) -> str | None:
    """The one kind of chart the question names ("... as a line chart": ``"line"``), if it names one."""
    kinds = [kind for kind, wording in _CHART_KINDS.items() if wording.search(question)]
    return kinds[0] if len(kinds) == 1 else None


def _other_kind(execution: ExecutionResult | None, asked: str | None) -> str | None:
    """A chart that draws none of the kind the question asks for: a bar chart for "as a line chart"
    answers another question (the user would get the wrong picture, whatever its numbers)."""
    if asked is None or execution is None or not execution.charts:
        return None
    drawn = [s.kind for c in execution.charts for s in c.series]
    if not drawn or asked in drawn:
        return None
    return other_kind(KIND_NAMES.get(drawn[0], drawn[0]), KIND_NAMES[asked])


def asks_for_name(question: str) -> bool:
    """Whether the question asks for a name: "print just the region name", "what is the name of ...",
    or "which city / region / product ..." (things known by name, not by number; a customer or a
    store may be known by an id, so it counts only with the word name). Any wording that lets the
    answer be a number wins: "which month (as a number from 1 to 12)", "print just the month number",
    "how many", "which product id"."""
    if _NUMBER_WORDING.search(question):
        return False
    return bool(_NAME_REQUEST.search(question) or _WHICH_NAMED_THING.search(question))


def _no_answer(answer: ProgramAnswer | None, tables_out: bool) -> str | None:
    if answer is None:
        return PRINTED_NOTHING
    if answer.kind == "figure" and answer.key == NO_DATA_KEY:
        return DREW_NO_DATA
    if answer.kind == "text" and answer.text.strip().strip("'\"").casefold() in _MISSING_VALUES:
        return no_value(answer.text.strip())
    if answer.kind == "table" and tables_out:
        return TABLE_FOR_NUMBER
    return None


def _template(execution: ExecutionResult | None) -> str | None:
    """A last line that shows a field's name in braces ("@mean[{mean_value}]"): an f-string without its f."""
    if execution is None:
        return None
    printed = execution.text_output().strip()
    last = printed.splitlines()[-1] if printed else ""
    field = _TEMPLATE_FIELD.search(last)
    return printed_template(field.group()) if field else None


def _missing_parts(execution: ExecutionResult | None, asked: Sequence[str], words: Sequence[str]) -> str | None:
    """The question asks for its answer as ``@name[value]`` and the program printed some name otherwise,
    or printed Python's True or False where the question offers its own words ("yes" or "no")."""
    if not asked or execution is None:
        return None
    printed = named_parts(execution.text_output())
    missing = [name for name in asked if name not in printed]
    if missing:
        return missing_parts(missing)
    boolean = next((value for value in printed.values() if value in ("True", "False") and value not in words), None)
    return boolean_for_words(boolean, words) if boolean and words else None


def offered_words(question: str) -> list[str]:
    """The quoted words a question offers for an answer's value ("yes", "Normal"), less the names of its
    format's placeholders (``@is_normal[response]`` ... ``"response" is a string``)."""
    placeholders = {value.strip() for _, value in _NAMED_PART.findall(question)}
    return [word for word in dict.fromkeys(_QUOTED_WORD.findall(question)) if word not in placeholders]


def _number_for_name(answer: ProgramAnswer | None, names_only: bool) -> str | None:
    """Only a bare number ('9', '3.0') is caught: a name with a number in it ('Customer 09', 'SKU-12')
    also reads as a number, and is a name."""
    if not names_only or answer is None or answer.kind != "number":
        return None
    return number_for_name(answer.text.strip()) if _BARE_NUMBER.fullmatch(answer.text.strip()) else None


def _ignores(code: str, named: Sequence[NamedValue]) -> str | None:
    ignored = ignored_values(code, named)
    if not ignored:
        return None
    first = ignored[0]
    return ignores_period(first.label, first.selection) if isinstance(first, NamedPeriod) else ignores(first.where)


#: How much the words answer adds to the programs that agree with it (a program counts 1, the program
#: written after the words too). Chosen on 51 GSM8K questions (docs/decisions.md, "Reason first"): at 1.5 the
#: words and the program that follows them, which agree with each other far more often than two
#: independent programs do, outvoted two agreeing programs that were right.
WORDS_WEIGHT = 1.0


def take_vote(programs: Sequence[Program], second_opinion: ProgramAnswer | None = None,
              preferred: int | None = None) -> Vote:
    """Tally the answers of one round's candidates (``program_answer`` and ``off_target`` already set).

    Only programs that worked vote: a failure, an off-target table, an answer the checker
    rejected, or a program that showed nothing has no say. A ``second_opinion`` (the words answer of
    :mod:`.reasoning`) adds :data:`WORDS_WEIGHT` to the programs that agree with it; it never wins
    alone, since it is not a program that could be inserted. A tie goes to the answer of program
    ``preferred`` (its ``sample`` number) when given, else to the shortest program.
    """
    vote = Vote(round=programs[0].index if programs else 0, candidates=len(programs), second_opinion=second_opinion)
    for program in programs:
        answer = program.program_answer
        if answer is None or not program.good:
            continue
        length = len((program.code or "").strip())
        group = next((g for g in vote.groups if g.answer.same_as(answer)), None)
        if group is None:
            group = VoteGroup(answer, [], length)
            vote.groups.append(group)
        group.samples.append(program.sample)
        group.shortest = min(group.shortest, length)
    for group in vote.groups:
        group.words = second_opinion is not None and group.answer.same_as(second_opinion)
    # Most votes (the words answer's among them) first; then the preferred program's; then the shortest
    # program; then the answer seen first (a stable sort).
    vote.groups.sort(key=lambda g: (-(g.votes + WORDS_WEIGHT * g.words), preferred not in g.samples, g.shortest))
    return vote


def competing_answers(vote: Vote) -> str:
    """'2 say 150, 2 say 149 and 1 failed' (the groups of a vote, in words)."""
    parts = [f"{g.votes} {'says' if g.votes == 1 else 'say'} {g.answer.text}" for g in vote.groups]
    silent = vote.candidates - sum(g.votes for g in vote.groups)
    if silent:
        parts.append(f"{silent} gave no answer")
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def more_programs_reason(vote: Vote, count: int) -> str:
    """Why more programs are written: 'only 1 of 5 programs agree (on 60): writing 5 more'."""
    on = f" (on {vote.winner.answer.text})" if vote.winner is not None else ""
    return f"only {vote.votes} of {vote.candidates} programs agree{on}: writing {count} more"


def reasoning_reason(vote: Vote) -> str:
    """Why the question is worked out in words: 'only 2 of 5 programs agree (on 60): working it out in words',
    or, to check two programs that agree, '2 of 2 programs agree (on 60): checking it worked out in words'."""
    on = f" (on {vote.winner.answer.text})" if vote.winner is not None else ""
    if vote.winner is not None and vote.votes == vote.candidates:
        return f"{vote.votes} of {vote.candidates} programs agree{on}: checking it worked out in words"
    return f"only {vote.votes} of {vote.candidates} programs agree{on}: working it out in words"


def effort_note(weak: WeakVote) -> str:
    """Why a round took more programs, afterwards: 'Only 1 of 5 programs agreed (on 60): 5 more were written.'"""
    if weak.how == "reason":
        return (f"Only {weak.votes} of {weak.candidates} programs agreed (on {weak.answer.text}): the question was "
                "worked out in words, and one more program followed those steps.")
    if weak.how == "look":
        return (f"Only {weak.votes} of {weak.candidates} programs agreed (on {weak.answer.text}): the data was "
                f"looked at first, and {weak.more} more {'was' if weak.more == 1 else 'were'} written knowing what "
                "it holds.")
    return (f"Only {weak.votes} of {weak.candidates} programs agreed (on {weak.answer.text}): {weak.more} more "
            f"{'was' if weak.more == 1 else 'were'} written.")


def second_opinion_note(vote: Vote) -> str:
    """What the words answer said about the vote's winner ('' when there was none)."""
    opinion = vote.second_opinion
    if opinion is None or vote.winner is None:
        return ""
    if vote.winner.words:
        return f"Worked out in words, the answer is also {opinion.text}."
    return (f"Worked out in words, the answer is {opinion.text}, not {vote.winner.answer.text}: "
            "one of the two has a wrong step.")


def doubt_about(answer: ProgramAnswer | None, question: str, about_data: bool) -> str | None:
    """Why ``answer`` should be checked however many programs agree on it, or None:
    a word problem that asks how many, how much (how long, far, old), answered with 0 or less. Such answers are rare
    (4 of GSM8K's 7,473 training questions), and the programs that agree on one share a slip: on
    GSM8K test rows 300-399 the two sure answers of 0 or less were both wrong, and no right one was
    (docs/decisions.md, "Doubt without a gold answer"). A question about data is left alone: a
    change, a balance or a margin may well be negative."""
    asked = _QUANTITY_QUESTION.search(question)
    if about_data or asked is None or answer is None or answer.kind != "number":
        return None
    if answer.value is None or answer.value > 0:
        return None
    return f"{answer.text} is an unusual answer to \u201c{asked.group(0).lower()}\u201d"


def doubt_message(session: Session) -> str:
    """How sure the answer is, in plain words ('' when there is nothing to say)."""
    vote = session.vote
    confidence = session.confidence
    if vote is None or vote.winner is None or confidence in ("single", "none"):
        return ""
    words = f" {second_opinion_note(vote)}" if vote.second_opinion is not None else ""
    agreeing = "agree on this answer" if vote.agreeing == "agree" else vote.agreeing
    if session.doubt is not None and vote.confidence == "high" and not session.views_disagreed:
        return (f"{vote.votes} of {vote.candidates} programs, written independently, {agreeing}, but "
                f"{session.doubt}: check the steps before you rely on it.{words}")
    if session.words_disagreed and vote.confidence == "high":
        ended = words or " Worked out in words, the question came to no answer."
        return (f"{vote.votes} of {vote.candidates} programs, written independently, {agreeing}.{ended} "
                "Check the steps before you rely on it.")
    if confidence == "high":
        return f"{vote.votes} of {vote.candidates} programs, written independently, {agreeing}.{words}"
    if confidence == "medium":
        return (f"{vote.votes} of {vote.candidates} programs {agreeing}, but not all: "
                f"check the steps before you rely on it.{words}")
    return (f"I am not sure: the programs disagree ({competing_answers(vote)}).{words} Check the programs' "
            "steps yourself to see which answer is right.")

