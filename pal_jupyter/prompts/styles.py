"""Prompt styles: the system message and the worked examples a question is asked after.

A style is a system message and its worked examples, shown as earlier user and assistant turns:
word problems as flat scripts that print (:data:`SYSTEM`, GSM8K train questions from
:mod:`.worked_examples`) or in PAL's ``def solution()`` form, the most similar solved questions of the
verified bank (:mod:`.retrieval`), or, for questions about the user's data, pandas examples about a
described DataFrame and the idioms most like the question (:mod:`.data_examples`). The style is
chosen by name (:data:`PROMPT_STYLES`); :meth:`PromptStyle.chat` builds every chat that is asked in
one, the question's (:func:`~.questions.pal_messages`) and the training examples' (:mod:`.training`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..backends import ChatMessage
from . import retrieval
from .data import describe_variables, question_text
from .data_examples import DATA_EXAMPLES, DATA_IDIOMS, DataExample, example_frames
from .worked_examples import WORKED_EXAMPLES

_PROGRAM_TUTOR = (
    "You are a patient Python tutor. You answer questions by writing a short Python program "
    "that computes the answer and prints it, so the computer does the arithmetic."
)
SYSTEM = _PROGRAM_TUTOR + " Use clear variable names and brief comments. Reply with exactly one ```python code block."
#: The same, asking for the code alone: with no examples to copy, the default model fills its programs
#: with comments, every one of them a tenth of a second on two AVX2 cores.
TERSE_SYSTEM = _PROGRAM_TUTOR + " Reply with exactly one ```python code block. Write the code alone, with no comments."
PAL_SYSTEM = (
    "You are a patient Python tutor. You answer questions by writing a Python function "
    "solution() that computes the answer step by step, one named variable per quantity, and "
    "returns it, so the computer does the arithmetic. Reply with exactly one ```python code block."
)

#: What the reply to a word problem worked out in words begins with. In the two-forms prompt
#: (:data:`WORD_PROBLEM_STYLE`) it is what asks for the words, where the code fence asks for a program.
WORDS_OPENING = "Step by step:\n"
TWO_FORMS_SYSTEM = (
    "You are a patient math tutor. You answer a question in the form your reply begins with: a short "
    "Python program that computes the answer and prints it (exactly one ```python code block, clear "
    "variable names and brief comments), or the solution step by step in a few short sentences, ending "
    "with a last line of the form 'Answer: <number>'."
)


@dataclass(frozen=True)
class PromptStyle:
    """A system message and worked examples shown before the question."""

    name: str
    description: str
    system: str
    examples: tuple[tuple[str, str], ...]  # (question, assistant reply)
    # The user's data before the question in its turn (:func:`~.data.question_text`): measured better
    # for the zero-shot data prompt, and then a question about the same data prefills only itself.
    data_first: bool = False

    def turns(self, question: str) -> tuple[tuple[str, str], ...]:
        """The worked examples shown before ``question``, as (user message, assistant reply) turns."""
        return self.examples

    def inline_examples(self, question: str) -> str | None:
        """Examples shown inside ``question``'s own turn, after the user's data (none by default)."""
        return None

    def chat(self, question: str, turn: str) -> list[ChatMessage]:
        """The chat ``question`` is asked in: the system message, the worked examples shown before it,
        then ``turn``, the question as the model reads it (:func:`~.questions.question_turn`)."""
        messages: list[ChatMessage] = [{"role": "system", "content": self.system}]
        for example_question, example_answer in self.turns(question):
            messages.append({"role": "user", "content": example_question})
            messages.append({"role": "assistant", "content": example_answer})
        messages.append({"role": "user", "content": turn})
        return messages


#: What the programs' kernel has besides the standard library (the package depends on each of them):
#: told, a program reaches for scipy's tests and statsmodels' regressions rather than re-deriving them.
ANALYSIS_LIBRARIES = "pandas, numpy, scipy, statsmodels, scikit-learn, seaborn and matplotlib are installed."
DATA_SYSTEM = (
    "You are a careful data analyst. You answer questions about the user's data by writing a short "
    "Python program with pandas that computes the answer and prints it. The user's variables already "
    "exist in the program's session: use them as they are, and never create, load or rebuild them. "
    f"{ANALYSIS_LIBRARIES} Reply with exactly one ```python code block."
)
#: The same, asking for the code alone: with no examples to copy, the default model began half its
#: programs' characters with comments ("# Assuming sales is already defined") and blank lines.
DATA_TERSE_SYSTEM = DATA_SYSTEM + " Write the code alone, with no comments."


@dataclass(frozen=True)
class DataPromptStyle(PromptStyle):
    """Worked examples about a DataFrame, described exactly as the user's data is described; then
    up to ``idioms`` short examples of the pandas idioms most like the question (:data:`DATA_IDIOMS`)."""

    idioms: int = 0
    # The idioms inside the question's turn, after the user's data (which must then come first), not as
    # turns of their own before it: the data, described in ~470 tokens on the DataFrame suite, is then
    # in llama.cpp's cache for the next question about it, and only the idioms and the question are read.
    idioms_inline: bool = False

    def turns(self, question: str) -> tuple[tuple[str, str], ...]:
        chosen = [] if self.idioms_inline else self._idioms(question)
        return _data_turns(self.examples) + tuple((_idiom_text(idiom), idiom.reply()) for idiom in chosen)

    def inline_examples(self, question: str) -> str | None:
        chosen = self._idioms(question) if self.idioms_inline else []
        if not chosen:
            return None
        return INLINE_IDIOMS_INTRO + "\n\n" + "\n\n".join(_inline_idiom(idiom) for idiom in chosen)

    def _idioms(self, question: str) -> list[DataExample]:
        return _idiom_index().most_similar(question, self.idioms) if self.idioms else []


@functools.cache
def _data_turns(examples: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """The fixed examples as turns, each question with the frames its program uses described."""
    frames = example_frames()
    uses = {e.question: e.frames for e in DATA_EXAMPLES}
    return tuple((question_text(question, {name: frames[name] for name in uses.get(question, ("trips",))}), reply)
                 for question, reply in examples)


@functools.cache
def _idiom_index() -> retrieval.SimilarQuestions[DataExample]:
    return retrieval.SimilarQuestions(DATA_IDIOMS)


@functools.cache  # builds the example frames to describe them: once per idiom, not per question
def _idiom_text(idiom: DataExample) -> str:
    """An idiom's question, short: `trips` was described in full by the fixed examples above it,
    which keeps the added examples to a few dozen tokens each; another frame is described here."""
    others = {name: frame for name, frame in example_frames().items() if name in idiom.frames and name != "trips"}
    if "trips" not in idiom.frames:
        return f"{idiom.question}\n\nIn the session, to use as it is:\n{describe_variables(others)}"
    also = f"\nAlso in the session:\n{describe_variables(others)}" if others else ""
    return f"{idiom.question}\n\nUse `trips` (described above) as it is.{also}"


INLINE_IDIOMS_INTRO = "Pandas idioms for questions like this one, on the examples' frames (not the user's data):"


def _inline_idiom(idiom: DataExample) -> str:
    """An idiom shown inside the question's turn: its question, which frames it uses when not only
    `trips` (their columns show in the code), and its program."""
    frames = f" (uses {', '.join(f'`{name}`' for name in idiom.frames)})" if idiom.frames != ("trips",) else ""
    return f"Q: {idiom.question}{frames}\n{idiom.reply()}"


@dataclass(frozen=True)
class SimilarPromptStyle(PromptStyle):
    """The ``shots`` most similar solved questions of the verified bank (:mod:`.retrieval`), each
    a program whose comments are the solution's steps. Measured against the fixed examples in
    benchmarks/README.md ("Examples chosen for the question"): not the default."""

    shots: int = 2

    def turns(self, question: str) -> tuple[tuple[str, str], ...]:
        return tuple(retrieval.similar_examples(question, self.shots))


_DATA_TURNS = tuple((e.question, e.reply()) for e in DATA_EXAMPLES)  # the data prompts' fixed examples
# GSM8K train rows 0 and 1 as programs, rows 2 and 3 in words (the data set's own solutions).
_TWO_FORMS_TURNS = tuple((e.question, e.as_script() if i % 2 == 0 else WORDS_OPENING + e.as_words())
                         for i, e in enumerate(WORKED_EXAMPLES[:4]))

PROMPT_STYLES: dict[str, PromptStyle] = {
    style.name: style
    for style in (
        PromptStyle("chat-2shot", "flat script that prints, 2 worked examples", SYSTEM,
                    tuple((e.question, e.as_script()) for e in WORKED_EXAMPLES[:2])),
        PromptStyle("chat-8shot", "flat script that prints, 8 worked examples", SYSTEM,
                    tuple((e.question, e.as_script()) for e in WORKED_EXAMPLES)),
        PromptStyle("pal-8shot", "PAL's def solution() that returns, 8 worked examples", PAL_SYSTEM,
                    tuple((e.question, e.as_pal_function()) for e in WORKED_EXAMPLES)),
        SimilarPromptStyle("chat-similar", "flat script that prints, the 2 most similar of 7,001 verified "
                           "GSM8K train programs", SYSTEM, (), shots=2),
        # What pal-jupyter train fine-tunes on (training.TRAINED_STYLE), and so what its adapters are asked with.
        PromptStyle("chat-0shot", "flat script that prints, no worked examples", SYSTEM, ()),
        PromptStyle("chat-0terse", "chat-0shot, asking for the code without comments", TERSE_SYSTEM, ()),
        PromptStyle("chat-2forms", "flat script that prints, or the steps in words, as the reply begins; 2 worked "
                    "examples of each", TWO_FORMS_SYSTEM, _TWO_FORMS_TURNS),
        DataPromptStyle("data-3shot", "pandas on a described DataFrame, 3 worked examples", DATA_SYSTEM,
                        _DATA_TURNS),
        DataPromptStyle("data-similar", "data-3shot, then the 2 pandas idioms most like the question",
                        DATA_SYSTEM, _DATA_TURNS, idioms=2),
        DataPromptStyle("data-inline", "data-3shot, then the data and the 2 pandas idioms most like the question "
                        "in its turn", DATA_SYSTEM, _DATA_TURNS, idioms=2, data_first=True, idioms_inline=True),
        DataPromptStyle("data-fixed", "data-3shot, the user's data before the question", DATA_SYSTEM,
                        _DATA_TURNS, data_first=True),
        PromptStyle("data-0shot", "pandas on a described DataFrame, no worked examples; the data first", DATA_SYSTEM,
                    (), data_first=True),
        PromptStyle("data-0terse", "data-0shot, asking for the code without comments", DATA_TERSE_SYSTEM, (),
                    data_first=True),
    )
}
def shared_messages(style: str) -> int:
    """How many leading messages of a prompt in ``style`` are the same whatever the question: the
    system message and the fixed worked examples (the idioms and similar questions chosen for a
    question come after them, the user's data and question last). 0 when no worked example is fixed."""
    known = PROMPT_STYLES.get(style)
    return 1 + 2 * len(known.examples) if known is not None and known.examples else 0


#: Chosen by measurement on GSM8K train questions that are not worked examples (benchmarks/README.md).
DEFAULT_STYLE = "chat-2shot"
#: The careful method's word problems: its program and its words are asked in this one prompt, each
#: with its own opening (the code fence, :data:`WORDS_OPENING`), so the second reads only its opening
#: where it read the whole question again (docs/decisions.md, "One prompt, two forms"). Not for the vote
#: method: a reply not begun with the fence may come in words.
WORD_PROBLEM_STYLE = "chat-2forms"
#: The careful method's first view of a word problem: the plainest prompt, no worked examples (the
#: baseline's own), its code alone asked for. Its answer stands when the two views disagree, unless
#: the question worked out in words backs the other: no rule choosing between the two programs alone
#: beat it on GSM8K questions nobody tuned on (docs/decisions.md, "The plain program answers word
#: problems; the words check it").
ZERO_STYLE = "chat-0shot"
#: For questions about the user's variables (``--use``) in the vote method: measured on the DataFrame
#: suite (docs/decisions.md, "Prompts for questions about your data").
DATA_STYLE = "data-similar"
#: The careful method's idioms (the first view of a question that asks for a chart, the third of other
#: data questions): the same idioms after the data, in the question's turn, so that only they and the
#: question are read afresh (docs/decisions.md, "The idioms after the data, for charts" and "The
#: idioms after the data, as the third view").
IDIOMS_STYLE = "data-inline"
#: The careful method's second view of a question about data (or a chart of it): no worked examples, the
#: code alone asked for (docs/decisions.md, "A slot per set of data; the code alone").
DATA_ZERO_STYLE = "data-0terse"
#: The careful method's first view of a question about data: the whole prompt but the question is the
#: same as the last question's about the same data, so it is read from the cache (docs/benchmarks.md, "The method").
DATA_FIXED_STYLE = "data-fixed"
FEW_SHOT = PROMPT_STYLES[DEFAULT_STYLE].examples


def prompt_style(name: str) -> PromptStyle:
    try:
        return PROMPT_STYLES[name]
    except KeyError:
        raise ValueError(f"Unknown prompt style {name!r}: choose one of {', '.join(PROMPT_STYLES)}.") from None
