"""Every chat the model is sent: questions, repairs, words answers, tutor hints, training examples.

One module per job:

``worked_examples``, ``data_examples``, ``retrieval`` (the worked examples: GSM8K train programs,
pandas examples and idioms, the verified bank of similar solved questions) <- ``data`` (the user's
variables described, the data instructions, the data look's section) <- ``styles`` (system messages
and worked examples, by name) <- ``questions`` (the question's turn and the first prompt) <-
``feedback`` (what the interpreter said about a run), ``repairs`` (the repair prompt), ``words``
(reason first, then program), ``tutor`` (plans and explanations) and ``training`` (the chats a model
is fine-tuned on, built as the chats it is asked in).

The package sits below the engine (it imports only backends' and kernels' types), so the engine,
the classroom and training all ask it for their chats, and a prompt is written in one place.
"""

from .data import CHART_INSTRUCTIONS, DATA_INSTRUCTIONS, asks_for_chart, describe_variables
from .feedback import execution_feedback, missing_module, misspelt_name, name_suggestion, replaced_data_feedback
from .questions import CONTEXT_INTRO, CONTEXT_QUESTION, notebook_block, pal_messages, question_turn, with_notebook
from .repairs import REPAIR_REQUEST, follow_up_messages, repair_messages
from .styles import (IDIOMS_STYLE, DATA_FIXED_STYLE, DATA_STYLE, DATA_ZERO_STYLE, DATA_SYSTEM, DEFAULT_STYLE, FEW_SHOT, PAL_SYSTEM,
                     PROMPT_STYLES, SYSTEM, WORD_PROBLEM_STYLE, WORDS_OPENING, ZERO_STYLE, PromptStyle,
                     prompt_style, shared_messages)
from .training import TRAINED_STYLE, leti_text, training_messages
from .words import FOLLOW_YOUR_STEPS, program_messages, words_messages

__all__ = [
    "CHART_INSTRUCTIONS", "IDIOMS_STYLE", "CONTEXT_INTRO", "CONTEXT_QUESTION", "DATA_FIXED_STYLE", "DATA_INSTRUCTIONS", "DATA_STYLE", "DATA_ZERO_STYLE",
    "DATA_SYSTEM", "DEFAULT_STYLE", "FEW_SHOT", "FOLLOW_YOUR_STEPS", "PAL_SYSTEM", "PROMPT_STYLES", "REPAIR_REQUEST", "SYSTEM",
    "TRAINED_STYLE", "WORD_PROBLEM_STYLE", "WORDS_OPENING", "ZERO_STYLE", "PromptStyle", "asks_for_chart", "describe_variables", "execution_feedback", "follow_up_messages",
    "leti_text", "missing_module", "misspelt_name", "name_suggestion", "notebook_block", "pal_messages", "program_messages",
    "prompt_style", "question_turn", "repair_messages", "replaced_data_feedback", "shared_messages", "training_messages",
    "with_notebook", "words_messages",
]
