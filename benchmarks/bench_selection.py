"""Choosing among programs, offline: collect every candidate once, then score selection rules on it.

    python benchmarks/bench_selection.py collect [--offset 0 --limit 40] [--checks] [--out FILE]
    python benchmarks/bench_selection.py score FILE
    python benchmarks/bench_selection.py recount REPORT.json TRACE.jsonl [--words-weight 1]

``collect`` asks the default model (llama.cpp) for each GSM8K test question: 5 sampled programs
with the product's prompt (chat-2shot, T=0.7) and their token log-probabilities; the greedy
program of the same prompt; the step-by-step answer in words and the program that follows it
(``pal_jupyter.engine.reasoning``, exactly the product's prompts); and, with ``--checks``, the
model's probability of "Yes" when asked whether a program computes what was asked, once per
distinct answer. Programs run in a plain ``python`` subprocess (10 s limit): GSM8K programs need
no kernel. One JSON line per question is appended to FILE (a rerun resumes).

``score`` prints, for the same questions: each source alone, pass@k, majority of 5, the rules
tried (the greedy program as a sixth voter, log-likelihood weights, the yes/no check, the words
answer and its program as extra voters when the vote is weak, with several weights), the
generation time each costs, and the calibration of what the user would be shown.

``recount`` takes a ``pal-jupyter bench`` report and its ``--trace`` and counts again, with another
weight for the words answer, the votes of the questions that were worked out in words (the same
programs: no model is run), against stopping at the first weak vote.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pal_jupyter.backends import load_model
from pal_jupyter import prompts
from pal_jupyter.engine import reasoning
from pal_jupyter.engine.answers import parse_number, reference_answer
from pal_jupyter.engine.extraction import extract_code
from pal_jupyter.errors import NoCodeError

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "gsm8k" / "test.jsonl"
CHECK_SYSTEM = "You review Python programs that students wrote to answer math word problems."


class Collector:
    """Raw llama.cpp requests (the product's backend does not return log-probabilities)."""

    def __init__(self) -> None:
        self.backend = load_model("default", backend="llamacpp")

    def request(self, messages: list[dict[str, str]], n: int, temperature: float, max_tokens: int = 512,
                seed: int | None = None, stop_after_code: bool = True, top: int = 1) -> tuple[list[str], list[list[float]], list[Any], float]:
        body: dict[str, Any] = {"messages": messages, "n": n, "stream": True, "max_tokens": max_tokens,
                                "temperature": temperature, "cache_prompt": True, "logprobs": True, "top_logprobs": top}
        if temperature > 0:
            body.update(top_k=50, top_p=0.95, min_p=0.0, samplers=["top_k", "temperature", "top_p"])
        if seed is not None:
            body["seed"] = seed
        texts, logprobs, tops, done = [""] * n, [[] for _ in range(n)], [[] for _ in range(n)], [False] * n

        def on_chunk(chunk: dict[str, Any]) -> bool:
            for choice in chunk.get("choices") or []:
                row = choice.get("index", 0)
                if done[row]:
                    continue
                texts[row] += (choice.get("delta") or {}).get("content") or ""
                for token in (choice.get("logprobs") or {}).get("content") or []:
                    logprobs[row].append(token["logprob"])
                    tops[row].append(token.get("top_logprobs"))
                done[row] = bool(choice.get("finish_reason")) or (stop_after_code and texts[row].count("```") >= 2)
            return all(done)

        start = time.perf_counter()
        self.backend.server.handle_chat_completions(body, on_chunk)
        return texts, logprobs, tops, time.perf_counter() - start


def run_program(text: str, logprobs: list[float]) -> dict[str, Any]:
    try:
        code = extract_code(text).code
    except NoCodeError:
        code = None
    last, error = None, None
    if code is None:
        error = "no code"
    else:
        try:
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=10)
            out = done.stdout.strip()
            if done.returncode:
                error = (done.stderr.strip().splitlines() or ["error"])[-1]
            else:
                last = out.splitlines()[-1] if out else ""
        except subprocess.TimeoutExpired:
            error = "timeout"
    return {"code": code, "out": last, "err": error, "value": parse_number(last) if last else None,
            "lp_sum": sum(logprobs), "ntok": len(logprobs)}


def collect(args: argparse.Namespace) -> None:
    rows = [json.loads(line) for line in DATA.open()]
    done = {json.loads(line)["i"] for line in open(args.out)} if os.path.exists(args.out) else set()
    model = Collector()
    for i in range(args.offset, args.offset + args.limit):
        if i in done:
            continue
        question, start = rows[i]["question"], time.perf_counter()
        record: dict[str, Any] = {"i": i, "gold": reference_answer(rows[i])}
        messages = prompts.pal_messages(question)
        texts, lps, _, record["samples_s"] = model.request(messages, 5, 0.7, seed=1000 + i)
        record["samples"] = [run_program(t, lp) for t, lp in zip(texts, lps)]
        texts, lps, _, record["greedy_s"] = model.request(messages, 1, 0.0)
        record["greedy"] = run_program(texts[0], lps[0])
        texts, _, _, record["words_s"] = model.request(reasoning.words_messages(question), 1, 0.0,
                                                       reasoning.WORDS_TOKENS, stop_after_code=False)
        answer = reasoning.read_words_answer(texts[0])
        record["words"] = {"text": texts[0], "value": answer.value if answer else None}
        texts, lps, _, record["reasoned_s"] = model.request(reasoning.program_messages(question, texts[0]), 1, 0.0)
        record["reasoned"] = run_program(texts[0], lps[0])
        record["checks"], record["checks_s"] = check_answers(model, question, record) if args.checks else ({}, 0.0)
        record["total_s"] = time.perf_counter() - start
        with open(args.out, "a") as out:
            out.write(json.dumps(record) + "\n")
        print(i, record["gold"], [p["value"] for p in record["samples"]], record["reasoned"]["value"],
              record["words"]["value"], round(record["total_s"], 1), flush=True)


def check_answers(model: Collector, question: str, record: dict[str, Any]) -> tuple[dict[str, float | None], float]:
    """P(Yes) / (P(Yes) + P(No)) for "does this program compute what was asked?", per distinct answer."""
    checks: dict[str, float | None] = {}
    seconds = 0.0
    for program in record["samples"] + [record["greedy"], record["reasoned"]]:
        key = _key(program["value"])
        if key is None or key in checks:
            continue
        user = (f"Question: {question}\n\nA student wrote this program to answer it:\n```python\n{program['code']}\n```\n"
                f"It printed: {program['out']}\n\nDoes the program compute exactly what the question asks, using the "
                "question's numbers correctly? Answer Yes or No.")
        _, _, tops, spent = model.request([{"role": "system", "content": CHECK_SYSTEM}, {"role": "user", "content": user}],
                                          1, 0.0, 1, stop_after_code=False, top=10)
        seconds += spent
        top = tops[0][0] if tops[0] else []
        yes = sum(math.exp(t["logprob"]) for t in top if t["token"].strip().lower() == "yes")
        no = sum(math.exp(t["logprob"]) for t in top if t["token"].strip().lower() == "no")
        checks[key] = yes / (yes + no) if yes + no else None
    return checks, seconds


def _key(value: float | None) -> str | None:
    return None if value is None else f"{value:.6g}"


def _right(value: float | None, gold: float) -> bool:
    return value is not None and abs(value - gold) <= 1e-3 * max(1.0, abs(gold))


def _vote(voters: list[tuple[float | None, float, int]]) -> tuple[float | None, float, int]:
    """(value, weight, program length) voters -> (winner, its weight, its voters); ties to the shortest."""
    groups: dict[str, list[Any]] = {}
    for value, weight, length in voters:
        if value is None:
            continue
        group = groups.setdefault(_key(value), [value, 0.0, 10**9, 0])
        group[1] += weight
        group[2] = min(group[2], length)
        group[3] += 1
    if not groups:
        return None, 0.0, 0
    best = sorted(groups.values(), key=lambda g: (-g[1], g[2]))[0]
    return best[0], best[1], best[3]


def _words_voter(value: float | None, programs: list[tuple[float | None, float, int]],
                 weight: float) -> list[tuple[float | None, float, int]]:
    """The words answer as a voter: like the product, it only adds to an answer some program gave
    (the program after the words included)."""
    given = {_key(v) for v, _, _ in programs}
    return [(value, weight, 10**9)] if weight and value is not None and _key(value) in given else []


def score(path: str) -> None:
    records = [json.loads(line) for line in open(path)]
    n = len(records)
    right: collections.Counter[str] = collections.Counter()
    asked: collections.Counter[str] = collections.Counter()  # questions each rule was scored on
    seconds: collections.Counter[str] = collections.Counter()
    shown: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    length = lambda p: len((p["code"] or "").strip())  # noqa: E731
    for r in records:
        gold, samples, greedy, reasoned, words = r["gold"], r["samples"], r["greedy"], r["reasoned"], r["words"]
        base = [(p["value"], 1.0, length(p)) for p in samples]
        winner, _, votes = _vote(base)
        weak = votes < 3
        checks = r.get("checks") or {}
        sources = {
            "first program": samples[0]["value"], "greedy program": greedy["value"],
            "words answer": words["value"], "program after the words": reasoned["value"], "maj@5": winner,
            "maj@5 + greedy as a 6th voter": _vote(base + [(greedy["value"], 1.0, length(greedy))])[0],
            "maj@5 weighted by exp(mean log-prob)": _vote([(p["value"], math.exp(p["lp_sum"] / max(1, p["ntok"])),
                                                            length(p)) for p in samples])[0],
        }
        if checks:
            sources["maj@5 weighted by P(yes) check"] = _vote(
                [(p["value"], checks.get(_key(p["value"])) or 0.0, length(p)) for p in samples])[0]
        for program_weight, words_weight in ((1.0, 0.0), (1.0, 1.0), (1.5, 1.5), (2.0, 2.0)):
            program = [(reasoned["value"], program_weight, length(reasoned))]
            extra = program + _words_voter(words["value"], base + program, words_weight)
            sources[f"weak vote: + its program x{program_weight:g}, words x{words_weight:g}"] = (
                _vote(base + extra)[0] if weak else winner)
        sources["pass@5"] = gold if any(_right(p["value"], gold) for p in samples) else None
        everything = [p["value"] for p in samples + [greedy, reasoned]] + [words["value"]]
        sources["pass@5 + greedy + words + its program"] = gold if any(_right(v, gold) for v in everything) else None
        for name, value in sources.items():
            right[name] += _right(value, gold)
            asked[name] += 1
        seconds["maj@5"] += r["samples_s"]
        seconds["greedy program"] += r["greedy_s"]
        seconds["words + its program"] += r["words_s"] + r["reasoned_s"]
        seconds["the product: maj@5, + words on weak votes"] += r["samples_s"] + (r["words_s"] + r["reasoned_s"]) * weak
        # What the product shows (vote.py: the program after the words counts 1, the words add 1 to the
        # programs that agree): high / medium / low from the programs' agreement, right or not.
        program = [(reasoned["value"], 1.0, length(reasoned))]
        extra = program + _words_voter(words["value"], base + program, 1.0) if weak else []
        final, _, final_votes = _vote(base + extra)
        programs_for_final = final_votes - (1 if extra and _key(words["value"]) == _key(final) else 0)
        share = programs_for_final / (6 if weak else 5)
        level = "high" if share >= 0.8 else "medium" if share >= 0.6 else "low"
        shown[level]["right" if _right(final, gold) else "wrong"] += 1
    print(f"{n} GSM8K test questions (rows {records[0]['i']}-{records[-1]['i']}), default model on llama.cpp")
    for name, count in right.items():
        print(f"  {name:<48} {count:>3}/{asked[name]:<3} {100 * count / asked[name]:5.1f} %")
    print("generation seconds per question, mean: " + ", ".join(f"{k} {v / n:.1f}" for k, v in seconds.items()))
    print("shown: " + ", ".join(f"{level} {c['right']}/{c['right'] + c['wrong']} right"
                                              for level, c in sorted(shown.items())))


def recount(report: str, trace: str, words_weight: float) -> None:
    from pal_jupyter.engine.answers import numbers_match

    results = {r["question"]: r for r in json.load(open(report))["results"]}
    sessions: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for line in open(trace):
        record = json.loads(line)
        sessions[record["session_id"]].append(record)
    gained = lost = asked = 0
    for attempts in sessions.values():
        round_one = [a for a in attempts if a["index"] == 1]
        reasoned = [a for a in round_one if a["kind"] == "reasoned"]
        if not reasoned:
            continue
        asked += 1
        result = results[attempts[0]["question"]]
        voters = [a for a in round_one if a["sample"] <= reasoned[0]["sample"]]  # before any more programs
        groups: list[list[Any]] = []  # [value, score, shortest]
        for a in voters:
            answer = a.get("program_answer") or {}
            if a.get("error_type") or answer.get("value") is None:
                continue
            group = next((g for g in groups if numbers_match(g[0], answer["value"])), None)
            if group is None:
                group = [answer["value"], 0.0, 10**9]
                groups.append(group)
            group[1] += 1.0
            group[2] = min(group[2], len(a["code"] or ""))
        words = parse_number(result["words_answer"]) if result["words_answer"] else None
        for group in groups:
            if words is not None and numbers_match(group[0], words):
                group[1] += words_weight
        winner = sorted(groups, key=lambda g: (-g[1], g[2]))[0][0] if groups else None
        right = numbers_match(winner, result["expected"])
        gained += right and not result["plain_vote_correct"]
        lost += result["plain_vote_correct"] and not right
    print(f"{asked} questions worked out in words; words weight {words_weight:g}: against the first weak vote, "
          f"{gained} turned right and {lost} turned wrong")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("collect")
    run.add_argument("--offset", type=int, default=0)
    run.add_argument("--limit", type=int, default=40)
    run.add_argument("--checks", action="store_true", help="also ask the yes/no check per distinct answer")
    run.add_argument("--out", default="bench-results/selection.jsonl")
    report = commands.add_parser("score")
    report.add_argument("file")
    again = commands.add_parser("recount")
    again.add_argument("report")
    again.add_argument("trace")
    again.add_argument("--words-weight", type=float, default=1.0)
    args = parser.parse_args()
    if args.command == "collect":
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        collect(args)
    elif args.command == "score":
        score(args.file)
    else:
        recount(args.report, args.trace, args.words_weight)


if __name__ == "__main__":
    main()
