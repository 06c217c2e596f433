"""What a session learnt, read from its transcript: pure functions over a parsed Transcript.

* **failure → fix**: a command failed (not a rejected, interrupted or sibling-cancelled call),
  the agent said why in its next words, and a later run of an equivalent command (`cd assets &&
  node build.js` is `node assets/build.js`) no longer showed the error. The lesson leads with the
  agent's diagnosis, then names the error, the fix (the edits and commands in between) and
  whether a later run verified it. A failure with no later equivalent pass is left open.
* **answers**: what the person picked when the agent asked (AskUserQuestion) is a decision of
  the person, with the options they turned down.
* **discoveries**: the few sentences of the agent's prose that read most like a finding about the
  code ("the root cause was…", "`X` returns a record, not `{:ok, _}`"), said after a failure or
  before the edit they motivated.

Each lesson's key is its error signature (command family + masked error), not its session, so the
same pitfall met in two sessions stays one item.
"""

from __future__ import annotations

import html
import json
import posixpath
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher
from itertools import islice
from typing import Any

from graphmem.capture.compress import ASIDE as _ASIDE
from graphmem.capture.compress import (
    CHECKING,
    COMMIT_HOOK,
    EDIT_TOOLS,
    HEREDOC,
    LONG_PROMPT,
    NEVER_RAN,
    REPORTED,
    TASK_OUTPUT_TOOLS,
    WRITE_TOOLS,
    Command,
    Draft,
    asks_told,
    background_id,
    delegates_work,
    parse_command,
    session_key,
    states_something,
    task_outcome,
    told_failure,
)
from graphmem.capture.compress import NOTICED_TOOL as _NOTICED_TOOL
from graphmem.capture.compress import chain as _chain
from graphmem.capture.compress import short as _short
from graphmem.capture.compress import step_of as _step
from graphmem.capture.compress import unbold as _unbold
from graphmem.capture.compress import uniq as _uniq
from graphmem.capture.failures import lint_findings, signature
from graphmem.capture.failures import unescaped as _unescaped
from graphmem.capture.redact import redact

__all__ = ["Lesson", "discoveries", "failure_lessons", "is_command_failure", "lint_lessons", "user_answers"]

# Claude Code's shell tools (Bash; PowerShell on Windows, held-out review 14) and other agents'
COMMAND_TOOLS = frozenset({"Bash", "bash", "PowerShell", "shell", "exec_command", "local_shell", "Skill",
                           "run_terminal_cmd", "execute_command"})
NOT_A_FAILURE = re.compile(  # what never ran, and what was stopped or cut short
    NEVER_RAN.pattern + r"|user (?:rejected|denied|declined)|reason for the rejection|the user said:|"
    r"\[Request interrupted|was blocked by|Sibling tool call errored|operation was aborted|Command timed out|"
    r"Error: No such tool available", re.IGNORECASE)
_ACTION = re.compile(
    r"^(?:let me|let's|lets|now\b|next\b|i'll|i will|i'm going|i am going|first\b|then\b|"
    r"good\b|great\b|perfect\b|ok\b|okay\b|done\b|excellent\b|nice\b|all (?:green|clean|done)|"
    r"running|checking|looking|waiting|still\b|continuing|progress\b|clean compile|here'?s|"
    r"сейчас|теперь|проверю|проверяю|смотрю|запускаю|жду|ahora|voy a|vamos a|primero|déjame)",
    re.IGNORECASE)
_CAUSE = re.compile(
    r"(?i)\b(?:because|since|so that|which (?:means|is|isn't|doesn't|does not|can't|cannot)|"
    r"needs?|requires?|required|missing|expects?|must|instead|only|without|doesn't|does not|"
    r"don't|can't|cannot|couldn't|isn't|aren't|wasn't|no longer|not\b|no\b|never|wrong|"
    r"issue is|problem is|root cause|caused by|the cause|turns out|ignored|gitignored|relative|"
    r"separate|unsupported|not supported|rather than|fails? (?:when|if|because)|conflict|interfer(?:es|ing))\b")
_CODE = re.compile(r"`[^`]+`|\b[\w./-]+\.\w{1,5}\b|\b[A-Z][a-z]+[A-Z]\w*|\b\w+_\w+\b|\b\w+\(\)|"
                   r"\b[a-z]+\.[a-z_]+\b|--?\w[\w-]*")
_CAUSAL = re.compile(r"(?i)\b(?:because|since|so|which means|due to|caused by|returns?|reuses?|requires?|"
                     r"needs?|expects?|missing|without|instead of|only|can't|cannot|doesn't|does not|"
                     r"won't|isn't (?:supported|allowed|installed|set|defined|exported)|"
                     r"never|always|overrides?|ignores?|drops?|loses?)\b")
_GENERIC_ISSUE = re.compile(r"(?i)\bthe (?:real |only |main )?(?:issue|problem|bug) (?:is|was)(?: that)?\b")
_DISCOVERY = re.compile(
    r"(?i)\b(?:found it|found the (?:bug|issue|problem|cause)|turns out|it turned out|actually|that's why|"
    r"this is why|which explains|explains (?:why|the)|so (?:we|i) don't need|(?:the )?(?:real )?"
    r"(?:cause|culprit|reason) (?:is|was)|root cause|it's the|is expected|expected behaviou?r|by design|"
    r"misleading|silently|the (?:real )?(?:issue|problem|bug) (?:is|was)|the fix is|fixed by|"
    r"the trick is|the key is|needs? to be|has to be|must be|оказывается|оказалось|причина|дело в том|"
    r"вот почему|поэтому|resulta que|por eso|la causa|el problema (?:es|era))\b")
_NEGATION = re.compile(r"(?i)\b(?:not|doesn't|does not|don't|isn't|aren't|can't|cannot|won't|never|"
                       r"no longer|instead|rather than|only|without|missing|не|нельзя|нет|без|вместо|только|"
                       r"nunca|sin|en lugar de|solo)\b|\(not ")
_BEHAVES = re.compile(r"(?i)\b(?:returns?|requires?|needs?|expects?|generates?|uses?|means|blocks?|"
                      r"ignores?|removes?|deletes?|creates?|calls?|lives? in|reads?|writes?|overrides?|"
                      r"defaults? to|triggers?|inherits?)\b")
# where the work stands: "Only `agent_test.go` remains — those use `os.Chdir`…" (entire-cli afb1dd35)
_STATUS = re.compile(r"(?i)^(?:all|both|\d+) (?:\w+ )?(?:tests?|checks?)\b|^(?:tests? )?pass(?:ed|es)?\b|"
                     r"^compiles? clean|^only\b[^;:—]{1,80}?\b(?:remains?|is left|are left)\b")
# The agent agreeing with the person or a reviewer first ("You're right — `fix: true` … makes
# `nolintlint` remove …"): what follows is weighed alone. What it agrees to do is a to-do, not a
# finding ("Fair point from Copilot — the exception should mention `t.Setenv` too.").
_AGREES = (r"(?:ah,? |oh,? )?(?:you(?:['’]re| are) (?:absolutely |quite |totally )?(?:right|correct)|"
           r"(?:fair|good) (?:point|catch|call|hit)(?: from [\w.-]+)?|that['’]s (?:right|correct)|my (?:mistake|bad))")
_AGREEING = re.compile(rf"(?i)^{_AGREES}\s*[—–:,-]+\s*")
# what leads into a finding, not a step: "Now I see the issue: `pool.go` never returns …", and "Then, I read
# the `Get` path in `pool/pool.go`; it never returns …", a report of a look already taken (the review of
# 05b2f49, L5); not "Then I'll read …" nor "Next, I need to …"
_INSIGHT = re.compile(r"(?i)^(?:(?:now|ok(?:ay)?|ah|right),? )?i (?:can )?(?:see|understand)"
                      r"(?:(?: (?:it|the (?:issue|problem|bug|cause|root cause|culprit)))?\s*(?::|\s[—–])| that)\s+(?=\S+(?:\s+\S+){3})|"
                      r"^(?:then|next|first),?\s+(?=(?:I|we)\s+(?!(?:['’]ll|will|am|['’]m|need|want|have|should|can|could|"
                      r"must|would|shall|may|might|try|let)\b)(?:[a-z]+ed|read|ran|found|saw|went|took|got|made|wrote|split|"
                      r"set|put|cut|kept|dug|reran|rewrote)\b[^;:—–]{3,120}(?:;|:|\s[—–])\s*\S+(?:\s+\S+){3})")
_AGREED_TO_DO = re.compile(r"(?i)\b(?:should|needs? to|must) (?:also )?(?:mention|say|cover|include|add|handle|note)\b")
_HEADING = re.compile(r"(?i)^(?:task|step|epic|phase|part)\s*\d*\b")
_TO_DO = re.compile(r"(?i)^(?:(?:so|right|ok|okay|ah|now)[,!.]? )?(?:i|we) (?:still )?(?:need|have|must|should|want) to\b|"
                    # the steps it is about to take (held-out review 25: "The plan is: fetch `origin`, …")
                    r"^(?:(?:the|my|our) )?plan(?: here| now)? is(?: to\b|:)|^(?:(?:the|my|our) )?next steps?(?: is| are)?:|"
                    r"^(?:here(?:['’]s| is) )?(?:the |my )?plan:|"
                    # held-out review 69: "Time for me to actually read the code myself — it's small enough …"
                    r"^(?:(?:ok(?:ay)?|so|now|right)[,!.]? )?(?:it['’]s )?time (?:for (?:me|us) )?to\b")
# what follows is a plan, not what was seen (held-out review 88: a sub-agent asked to answer a scenario
# in writing reports "Concrete plan, not executed: **1. Establish ground truth by running the suite …**")
# (an announcement that introduces what the writer would do, not "Reproduction steps:" or "the rollout plan:")
_PLAN_AHEAD = re.compile(r"(?i)^[^\w:]*+(?:(?:concrete|proposed|suggested|my|our)\s+)+(?:plan|steps|approach)\b[^.:]{0,60}:\W*$|"
                         r"^[^\w:]*+(?:(?:the|a)\s+)?(?:plan|steps|approach)\b[^.:]{0,40}\b(?:not (?:yet )?(?:executed|carried "
                         r"out)|nothing (?:executed|run))\b[^.:]{0,20}:\W*$|"
                         r"^[^\w:]*+here(?:['’]s| is) what (?:i|we)(?:['’]d| would) do\b")
_LIST_MARK = re.compile(r"\W*\d{1,2}[.)]\W*")
_STEP_LABEL = re.compile(r"(?i)^(?:(?:for (?:each|every|all)|per) [^:,—–]{1,40}|then|first|second|third|next|finally|lastly|"
                         r"step \d+|method|process)\s*(?:[:,]|\s[—–])\s+")
_ROOT_CAUSE = re.compile(r"(?i)\broot cause\b|\bthe (?:issue|problem|bug|culprit) (?:is|was)\b")
# a numbered step that opens with what to do to something (the same report's "2. Re-run it by node id
# (`pytest …`) and confirm it was actually collected"), not a finding that opens with a noun that is also
# a verb ("1. Read replicas are the root cause: …", "1. Use of `pickle.loads` …")
_STEP = re.compile(r"(?i)^(?:re-?)?(?:run|check|verify|confirm|add|fix|edit|stop|treat|establish|land|read|grep|"
                   r"assert|create|write|commit|push|open|install|update|remove|delete|replace|rename|move|mark|"
                   r"use|try|make|keep|drop|apply|revert|restart|rebuild|start|look|compare|ensure|record|surface|"
                   r"report|tell|wait|skip|switch|copy|merge|split|extract|inline|document|search|find|inspect|"
                   r"review|measure|pin|bump|upgrade|downgrade|clean|reset|restore|fetch|pull|clone)"
                   r" (?:it|them|this|that|these|those|the|a|an|and|each|every|all|any|your|my|our|its|in|`|\()")
_TO_BE_DONE = re.compile(r"(?i)\b(?:needs?|has) to be (?:merged|moved|split|extracted|ported|folded|rewritten|"
                         r"combined|refactored) (?:into|to)\b")
_OWN_WORK = re.compile(r"(?i)\b(?:i'm|i am|i've|i have|i was|my|(?:not|are|is|were|was) mine|i (?:still )?need to|let me)\b")
_LINE_REF = re.compile(r"(?i)\blines? \d+|\b\d+->(?:\d+|exit)\b|:\d+\b|`\d+`")
_PROPOSAL = re.compile(r"(?i)^(?:so |then )?(?:we|you) (?:can|could|should)\b|\b(?:we|you) can (?:just|simply)\b|"
                       r"\b(?:best|cleanest|simplest|easiest|quickest|lightest[- ]weight|most [\w-]+) "
                       r"(?:approach|solution|option|way|fix)\b|"
                       # what it would do (held-out review 93: "One boundary I'd draw: the compaction-summary blocks
                       # … stay", a repair it proposed, the person challenged and it withdrew)
                       r"^(?!\W*(?:otherwise|without|if|unless|then|in that case|that['’]s why|which is why)\b)[^:.]{0,40}\b(?:I|we)(?:['’]d| would) (?:draw|suggest|propose|recommend|keep|drop|split|move|"
                       r"change|use|go with|take|put|leave|rather|prefer|start|set|lean toward|opt for|pick)\b[^:.]{0,30}:")
# What the person is told to do ("Simplest: create an empty private repo at https://github.com/new"):
# an instruction of the moment, not a finding (held-out review 5, solar 4b2b2b4d).
_INSTRUCTION = re.compile(r"(?i)^(?:[\w ]{1,25}:\s*)?(?:create|open|go to|click|sign in|log in|type|paste|enter|"
                          r"restart|visit|grant|approve|install)\s+(?:a|an|the|your|this|that|these|it|`|https?://)")
_DONE = re.compile(r"(?i)^(?:fixed|added|updated|removed|changed|created|renamed|moved|implemented|"
                   r"refactored|replaced|wrote|rewrote)\b")
DISCOVERY_FLOOR = 3.0
MAX_DISCOVERIES = 3
# A fix the agent announces, and the person's later word against a fix: that fix was not the one.
_FIX_CLAIM = re.compile(r"(?i)\bthe (?:fix|solution|workaround|way to fix \w+) (?:is|was|would be)\b")
_REJECTED = re.compile(r"(?i)\b(?:(?:that|this|it)(?: is|'s)? no good|is the fix not\b|that'?s (?:not (?:it|right|"
                       r"the fix|what i)|wrong)|not what i (?:want|asked|meant)|don'?t (?:do|add|use) that|"
                       r"that (?:won'?t|doesn'?t) (?:work|fix)|wrong (?:fix|approach))")
# The person's next words doubt what the agent just concluded (claude-code-log 9e953218: "the
# real issue is that Next.js doesn't serve `index.html` …" → "Are you sure the HTML is the issue?").
_DISPUTED = re.compile(r"(?i)\bare you (?:sure|certain)(?:,|\?| that\b| about\b| (?:the|this|it'?s|it is)\b)|\bis that (?:really|actually) (?:it|the (?:issue|problem|cause))\b|"
                       r"\bi (?:don'?t|do not) think (?:that'?s|that is|this is|it'?s) (?:it|the (?:issue|problem|cause))\b|"
                       r"\b(?:that'?s|that is|this is|it'?s) not the (?:issue|problem|cause|reason)\b|"
                       # held-out review 96: "Just totally off base … you are trying to merge unrelated concepts"
                       r"^\W*(?:(?:no|nope|hmm+|honestly|well|just|totally|completely|way|really|i think|that['’]?s|this is|"
                       r"it['’]?s|you['’]re|you are|this|that|is)\W+){0,5}off[- ]base\b")
# The person's next words set right what the agent just said: a short reply with a rule word that
# names one of the claim's literals (held-out review 13, chkit e1731008: "I used `minor` rather than
# `patch` since this is a meaningful feature change…" → "we are prerelease, we only do patch").
_CORRECTION = re.compile(r"(?i)\b(?:only|always|never|not|no|don'?t|do not|instead|should|must)\b")
_LITERAL = re.compile(r"`([^`\n]{3,60})`")
MORE_FINDINGS = 3
MAX_LINT_LESSONS = 5
_FINDINGS = re.compile(r"(?im)(?:^|[.!]\s+)\W*(?:key findings|findings|what i found|root causes?|the root cause|"
                       r"diagnosis|summary of (?:the )?(?:findings|issue|problem)|caveats?|gotchas?)\W*$|"
                       r"^\W*(?:\w+ ){0,5}(?:things? |points? |notes? )?worth knowing\b(?:[ ,]+[\w'’-]+){0,8}\W*$")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.+)$")
MAX_FINDINGS = 2
_PLAN = re.compile(r"(?i)i (?:need|have|will need) to (?:fix|address|look|check|investigate|update|"
                   r"handle|figure|understand|see|find|debug)\b")
_PREAMBLE = re.compile(r"(?i)^(?:all (?:\w+ )?tests pass(?:ed)?,? but |(?:i see |i found |found |here'?s )?"
                       r"the (?:issue|problem|culprit|cause|bug)(?: is clear)?\s*(?:[—–:]|-(?=\s))\s*|"
                       r"(?:ok|okay|good|great|i see|ah|hmm)[\s,.!:;—–-]+|so(?! far| that| much| many| long| too)\b,?\s+|"
                       r"(?:but |and |also )?(?:note|nb|n\.b\.)(?: that)?(?::\s*|,\s*|\s+(?=that\b))(?:that\s+)?)")
_POINTS_BACK = re.compile(r"(?i)(?:this|that|it)(?: is|'s| was)\b")
_IF_TRUE = re.compile(r"(?i)if (?:that'?s |this is |it'?s |so,? |that holds,? )?true\b|assuming (?:that|this|it) holds\b")
# the agent says it has yet to check what it just claimed (held-out review 46: "This is the correct continuous GPU
# load. Let me launch a bounded sweep across all 8 GPUs and verify it actually saturates them", and one GPU ran)
_YET_TO_CHECK = re.compile(r"(?i)\b(?:verify|confirm|check|prove|see) (?:that |whether |if )?(?:it|this|that|they|these) "
                           r"(?:actually|really|indeed|truly)\b|\b(?:verify|check|test) (?:that|this|the) claim\b")
# what it checks then is its fix, not the claim ("Let me fix that and verify it actually works", the review of session 27)
_FIX_WORD = re.compile(r"(?i)\b(?:fix|patch|apply|change|switch|update|rewrite|correct|add|remove|implement|replace|"
                       r"refactor|wire|move|rename|revert|edit)\w*\b(?!\W+(?:\w+\W+){0,2}?(?:debug|print|log|logging|"
                       r"trace|tracing|instrumentation|probe|timer|counter)s?\b)")
_VERIFY_WORD = re.compile(r"(?i)\b(?:verify|confirm|check|prove|see)\b")


def _checks_its_fix(sentence: str) -> bool:
    """Whether what the sentence verifies is a fix it makes first ("Let me fix that and verify it actually
    works"), not the claim; a print or a log it adds to look is no fix (the reviews of session 27)."""
    head = sentence[:400]
    fix = _FIX_WORD.search(head)
    return fix is not None and _VERIFY_WORD.search(head, fix.end()) is not None
_HAS_SUBJECT = re.compile(r"(?:A|An|The|Every|Each|All|No|Any|Only|Both)\b")
_LETS = re.compile(r"(?i)let(?:'s| me| us)\b")
_INTENT = re.compile(r"(?i)\bI(?:'ll| will| can| could| should|'m going to| am going to)\b")
_HEDGE = re.compile(r"(?i)\b(?:might|maybe|may|probably|perhaps|possibly|potential|likely|could be|seems?|"
                    r"looks like|looks (?:correct|fine|good|right|ok)|i think|i suspect|suspicion|hypothes[ie]s|not sure|guess|"
                    r"false positives?|возможно|наверное|кажется|похоже|вероятно|может быть|quizás?|tal vez|"
                    r"probablemente|parece|puede que|"
                    # the guess a "must" makes of a state it has not looked at (held-out review 47: "the d_lr update
                    # math itself must be broken", then "Prodigy's d-update matches the canonical paper formula")
                    r"must (?:be|have been) (?:the (?:cause|culprit|issue|problem|bug|reason)|the one (?:holding|causing|"
                    r"breaking|that (?:holds|causes|breaks))|(?:itself |also |somehow |completely |totally |just )?(?:broken|"
                    r"wrong|corrupt(?:ed)?|buggy|faulty|misconfigured|stale|at fault|to blame))|must have (?:broken|failed|"
                    r"changed|corrupted|crashed|been (?:broken|lost|overwritten|deleted))|"
                    # and what it has yet to settle ("But whether P1 is real depends on the exact formula …", held-out
                    # review 47, a minute before "P1 CONFIRMED")
                    r"whether (?:it|this|that|P\d+|the (?:bug|issue|hypothesis|theory|fix|claim|finding)) is (?:real|right|"
                    r"correct|true|the cause) depends on)\b")  # a checker overruled is the agent's verdict: spotter and entire-cli both took it back
_FENCE_BLOCK = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_SENTENCE_SPLIT = re.compile(r"(?<=[^.][.!])(?<!\betc\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)\s+"
                             r"(?=[A-ZÀ-ÖØ-ÞА-ЯЁ¿¡`*(\"'])|(?<=\betc\.)\s+(?=[A-Z][a-z])|\n+")
MAX_LESSONS = 10


@dataclass
class _Call:
    id: str
    tool: str
    input: dict[str, Any]
    pos: int
    cwd: str = ""
    command: Command | None = None
    result: str = ""
    failed: bool = False
    answered: bool = False
    errored: bool = False  # the tool result said it was an error
    clean: list[Command] = field(default_factory=list)  # the steps of its line that ran without error
    answered_at: int | None = None  # the position of the message that brought its outcome
    started: str = ""  # the harness's words when it ran on in the background


@dataclass
class Lesson:
    """A failed command, what the agent made of it and how (or whether) it was resolved."""

    call: _Call
    error: str
    sig: str
    diagnosis: list[str] = field(default_factory=list)
    fixed_by: _Call | None = None
    fix_step: Command | None = None  # the step of fixed_by's line that re-ran the failed command
    fix_clean: bool = False  # that step ran without error (else it only failed differently)
    verified: bool = False
    edits: list[_Call] = field(default_factory=list)
    commands: list[_Call] = field(default_factory=list)
    late: bool = False  # in the last fifth of the session: a failure it may have ended on
    moved_on: bool = False  # a script on the same remote host ran clean after it, or the program alone ran
    created: set[str] = field(default_factory=set)  # files the session had written anew by then
    took_out: str = ""  # the text the session's own edits had replaced by then
    put_in: str = ""  # and the text they had written
    typed: bool = True  # the error says what failed, not only where (`a_test.exs:734: (test)`)
    edited_after: list[str] = field(default_factory=list)  # unresolved: the files edited after it


def is_command_failure(tool: str, is_error: bool, text: str) -> bool:
    """A command that ran and failed, not a call the person rejected or the harness cancelled."""
    if not is_error or tool not in COMMAND_TOOLS:
        return False
    return not NOT_A_FAILURE.search(text[:400]) and not persons_words(tool, text)


_OUTPUT_MARK = re.compile(r"(?i)\b(?:error|errors|failed|failure|fatal|exception|warning|traceback|"
                          r"denied|not found)\b|\\n|^\S+:\s|\[[A-Z]+\]")


def persons_words(tool: str, text: str) -> bool:
    """An error result that is what the person typed when they stopped the call (some clients
    put it there bare): a shell's failure starts with its exit code or prints output."""
    body = text.strip()
    if tool not in ("Bash", "bash", "PowerShell") or not body or body.startswith(("Exit code", "<", "[")):
        return False
    if NOT_A_FAILURE.search(body[:400]) or _OUTPUT_MARK.search(body):
        return False  # the harness's own notice, or a program's output
    return len(body) < 600 and body.count("\n") <= 2 and bool(re.match(r"[A-Za-z]", body)) and \
        len(re.findall(r"[A-Za-z]{2,}", body)) >= 4


def _walk(transcript: Iterable[Any], rel: Callable[[str], str]) -> tuple[list[_Call], list[tuple[int, str]]]:
    """The main chain's tool calls (with results) and the agent's prose, in order."""
    calls: dict[str, _Call] = {}
    ordered: list[_Call] = []
    prose: list[tuple[int, str]] = []
    started: dict[str, _Call] = {}  # background commands by task id, until their outcome comes
    typed: _Call | None = None  # a command the person ran with `!`, until its output comes
    pos = 0
    for msg in transcript:
        if msg.sidechain:
            continue
        pos += 1
        if msg.role == "user" and msg.meta and (ran := _BASH_INPUT.match(msg.text.strip())):
            # the person's own shell command (held-out review 23, forem: `! heroku config:set … -a
            # thepracticaldev` → "Couldn't find that app", then `-a practicaldev` worked)
            typed = _Call(f"bash-input:{pos}", "Bash", {"command": ran.group(1)}, pos, msg.cwd)
            cwd_rel = rel(msg.cwd) if msg.cwd else ""
            typed.command = parse_command(ran.group(1), "" if cwd_rel in (".", msg.cwd) else cwd_rel, rel)
            ordered.append(typed)
        elif msg.role == "user" and typed is not None and msg.meta and msg.text.lstrip().startswith(
                ("<bash-stdout>", "<bash-stderr>")):
            output = "\n".join(html.unescape(part).strip() for tag in ("bash-stdout", "bash-stderr")
                               for part in [_inside(msg.text, tag)] if part.strip())
            # bash mode records no exit status: the output says whether it failed
            _answer(typed, output, bool(failure_lines(output)), rel)
            typed.answered_at, typed = pos, None
        elif msg.role == "assistant":
            if msg.text:
                prose.append((pos, msg.text))
            for use in msg.tool_uses:
                call = _Call(use.id, use.name, use.input, pos, msg.cwd)
                command = use.input.get("command") if use.name in COMMAND_TOOLS else None
                if isinstance(command, str) and command.strip():
                    cwd_rel = rel(msg.cwd) if msg.cwd else ""
                    call.command = parse_command(command, "" if cwd_rel in (".", msg.cwd) else cwd_rel, rel)
                calls[use.id] = call
                ordered.append(call)
        elif msg.role == "tool_result":
            answered = calls.get(msg.tool_use_id)
            if answered is None:
                continue
            if answered.command is not None and (task := background_id(msg.text)):
                answered.result = answered.started = msg.text  # no outcome yet
                started[task] = answered
                continue
            _answer(answered, msg.text, bool(msg.is_error), rel)
            answered.answered_at = pos
            if answered.tool in TASK_OUTPUT_TOOLS:
                task, code, output = task_outcome(answered.tool, answered.input, msg.text)
                if code is not None and (bg := started.pop(task, None)) is not None:
                    _answer(bg, output, False, rel, code)
                    bg.answered_at = pos
        elif msg.role == "user" and started and "<task-notification>" in msg.text[:300]:
            task, code, _ = task_outcome("", {}, msg.text)
            if code is not None and (bg := started.pop(task, None)) is not None:
                _answer(bg, msg.text, False, rel, code)
                bg.answered_at = pos
    return ordered, prose


def _answer(call: _Call, text: str, is_error: bool, rel: Callable[[str], str], exit_code: int | None = None) -> None:
    """Record a call's result (a background command's comes later, with its exit code)."""
    call.result, call.answered, call.errored = text, True, is_error
    call.failed = is_command_failure(call.tool, is_error, text) or bool(exit_code)
    if not call.failed and call.command is not None and not is_error:
        call.failed = _exit_failure(text) or _shows_exception(text) or _filtered_failure(call.command, text)
    told = told_failure(call.command, text, rel) if call.command is not None else None
    if call.command is not None and told is not None:
        call.failed, call.clean = True, [st for st in _chain(call.command, rel) if st.raw != told.raw]
        call.command = told
    elif call.command is not None:
        steps = _chain(call.command, rel)
        if call.failed:
            call.command, call.clean = _failed_step(steps, text, rel)
        else:
            call.clean = steps


_SPEAKER = re.compile(r"(?m)^\s*([\w.+-]+): ")


def _with_env(fixed: Command, failed: Command) -> str:
    """The variables the working run set that the failed one did not (`LANG`, `LC_ALL`)."""
    added = [k for k in {**fixed.exports, **fixed.env} if k not in {**failed.exports, **failed.env}]
    return f" with {', '.join(added[:3])} set" if added else ""


# The shell refusing to start a program: the step it names is the one that failed (held-out review
# 8, faber: `mkdir -p … && cat > … && analysis/scripts/journal-append.sh … && git commit` printed
# "(eval):94: permission denied: analysis/scripts/journal-append.sh"). An absolute path may hold
# spaces ("/bin/bash: line 1: /mnt/c/Program Files/…/make.exe: No such file or directory").
_SHELL_REFUSED = re.compile(
    r"(?mi)(?:permission denied|command not found|no such file or directory|not found):\s*(\S+)\s*$|"
    r"^[^\n:]*:\s*(?:line \d+:\s*)?(?:\d+:\s*)?(/[^\n:]+?|\S+?): (?:permission denied|command not found|"
    r"no such file or directory|not found)\s*$")


def failed_step_of(line: Command, output: str, rel: Callable[[str], str]) -> Command:
    """The step of a failed chained line that the failure belongs to (see _failed_step)."""
    if not line.others:
        return line
    return _failed_step(_chain(line, rel), output, rel)[0]


def _refusals(line: str, output: str) -> Iterator[tuple[str, re.Match[str]]]:
    """Each program the shell refused to start (by the output) with where the line runs it as a
    step (group 1: the step), found in the line's text: past a heredoc, which the step split does
    not see through."""
    for match in _SHELL_REFUSED.finditer(output[-6000:]):
        name = next(g for g in match.groups() if g)
        # the name may be quoted ("/mnt/c/Program Files/…/make.exe"), the step end in `2>&1 | tail`
        at = re.search(rf"(?:^|\n|&&|\|\||;)\s*(['\"]?{re.escape(name)}['\"]?(?:[ \t][^\n&|;]*?)?)"
                       r"(?=\s*(?:$|\n|&&|\|\|?|;|\d*>&))", line)
        if at:
            yield name, at


def _refused_step(line: Command, output: str, rel: Callable[[str], str]) -> Command | None:
    """The step of the line the shell refused to start, when it is not the line's main command."""
    return next((_step(line, at.group(1).strip(), rel) for name, at in _refusals(line.raw[:4000], output)
                 if not line.main.startswith(name)), None)


def _failed_step(steps: list[Command], output: str, rel: Callable[[str], str]) -> tuple[Command, list[Command]]:
    """The step of a chained line (`initdb -D d && pg_ctl start`) that failed, and the steps before
    it that ran clean: the one the shell refused to start, else the last whose program speaks in
    the error (`pg_ctl: could not start server`), else the line's main command."""
    refused = _refused_step(steps[0], output, rel)
    if refused is not None:
        at = steps[0].raw.find(refused.main.split()[0])
        return refused, [step for step in steps if step.main.split() and 0 <= steps[0].raw.find(step.main.split()[0]) < at]
    speakers = _SPEAKER.findall(output[-6000:])
    main = steps[0]
    named = [n for n, step in enumerate(steps) if n and step.exe and step.exe != main.exe and step.exe in speakers]
    if not named:
        return main, []
    at = max(named, key=lambda n: len(speakers) - speakers[::-1].index(steps[n].exe))
    return steps[at], [step for step in steps[:at] if step.exe not in speakers]


def tool_calls(transcript: Iterable[Any], rel: Callable[[str], str]) -> list[tuple[str, dict[str, Any], str, bool]]:
    """The main chain's tool calls as (tool, input, result, errored): a call never answered, one
    the person stopped and one that failed count as errored."""
    calls, _ = _walk(transcript, rel)
    return [(c.tool, c.input, c.result, not c.answered or c.failed or c.errored or _errored(c)) for c in calls]


_INLINE = re.compile(r"(?:^|[\s;&|(])(?:python\d?(?:\.\d+)?|node|ruby|perl|php|deno|bun)\s+(?:-\w*[ce]\b|-\s*<<|<<)")
_EXCEPTION = re.compile(r"(?m)^Traceback \(most recent call last\):|^\s*\*\* \(\w+(?:\.\w+)*\) |"
                        r"^(?:\w+\.)*\w+(?:Error|Exception): \S")


def _shows_exception(text: str) -> bool:
    """Output that ends in an uncaught exception although the exit status was not reported."""
    return bool(_EXCEPTION.search(text[-4000:]))


# `… 2>&1 | tail -20`: the status the agent gets is tail's (held-out reviews 15 and 17: "sh: line 1:
# ./script/renovate_validate.sh: Permission denied" and "…/v6.25/…/make.exe: No such file or
# directory" came back as passes, so no failure met its fix).
_TAIL_FILTER = re.compile(r"\|&?\s*(?:tail|head)\b(?![^|]*\|)")
_RUNNER_FAILED = re.compile(r"(?mi)^\s*(?:\[[\w:-]+\]\s*)?(?:ERROR\s+)?task failed\b|^make(?:\[\d+\])?: \*\*\* |"
                            r"^npm ERR!|\bELIFECYCLE\b|^error: Recipe `[^`]+` failed")
# pip refusing a system Python: behind `| tail -3` only its hint is left (held-out review 19)
_PIP_REFUSED = re.compile(r"(?m)\bexternally-managed-environment\b|^hint: See PEP 668\b")
# what prints other runs' failures: a CI run's log, a container's, the journal
_LOG_READER = re.compile(r"\bgh run (?:view|watch)\b|\bjournalctl\b|(?<![\w-])logs(?![\w-])")


def _filtered_failure(line: Command, text: str) -> bool:
    """A line whose last filter is tail or head, running something (not reading a file or a log),
    whose output shows the shell refusing one of its steps, a task runner giving up, from a check
    failed tests, or from an install an error (held-out review 19: pip's "error:
    externally-managed-environment" behind `| tail -3` was listed as installed)."""
    if not _TAIL_FILTER.search(line.raw) or line.is_read_only or _LOG_READER.search(line.main):
        return False
    end = text[-6000:]
    return bool(_RUNNER_FAILED.search(end) or next(_refusals(line.raw[:4000], end), None) is not None
                or line.is_check and _SOME_FAILED.search(end) or line.is_install and (failure_lines(end) or _PIP_REFUSED.search(end))
                # a check whose last lines are errors and no count of passes (held-out review 156: `bun test --filter
                # "!tmp/" src/ | tail -5` printed "error: Cannot find tsconfig file …" and was told as the fix)
                or line.is_check and not _PASS_COUNT.search(end) and bool(failure_lines(end)))


def _exit_failure(text: str) -> bool:
    head = text.lstrip()[:40]
    return bool(re.match(r"Exit code [1-9]", head))


def _resolved_path(cmd: Command, target: str) -> str:
    if not cmd.dir or cmd.dir == "." or target.startswith("/") or "/" not in target and "." not in target:
        return target
    return f"{cmd.dir.rstrip('/')}/{target}"


_QUERY_ONLY = re.compile(r"(?<!\S)(?:--help|-h|--version|-V|--markers|--collect-only|--co|--fixtures|"
                         r"--list(?:-\w+)?|--dry-run)(?!\S)")


def equivalent(passing: Command, failing: Command) -> bool:
    """Whether a later run exercises what a failed one did (same program, subcommand, targets);
    a run that only asks the program about itself (`--help`, `--markers`) exercises nothing."""
    if passing.family != failing.family or passing.sub != failing.sub or not passing.exe:
        return False
    if _QUERY_ONLY.search(passing.main) and passing.main != failing.main:
        return False
    fail_targets = {_resolved_path(failing, t) for t in failing.targets}
    pass_targets = {_resolved_path(passing, t) for t in passing.targets}
    if not fail_targets or not pass_targets:
        # One of them runs the whole thing (`mix test` covers `mix test a_test.exs`), unless the
        # passing line names paths of its own (`git add -f other/file` is no rerun of `git add x`).
        own = {t for t in re.findall(r"(?<!\S)[\w.-]*/[\w./-]+", passing.main) if t not in fail_targets}
        return not (fail_targets and own)
    return fail_targets <= pass_targets or all(
        any(f.startswith((p + "/", p + ":")) for p in pass_targets) for f in fail_targets)


def _unfenced(text: str) -> str:
    """The text without its code blocks; where the words go on in lower case after one, the
    blank lines around it go too."""
    out: list[str] = []
    last = 0
    for block in _FENCE_BLOCK.finditer(text):
        before = text[last:block.start()]
        gap = len(text[block.end():]) - len(text[block.end():].lstrip())
        if text[block.end() + gap:block.end() + gap + 1].islower():
            out.append(before.rstrip() + " ")
            last = block.end() + gap
        else:
            out.append(before + " ")
            last = block.end()
    out.append(text[last:])
    return "".join(out)


def _sentences(text: str) -> list[str]:
    # a sentence that goes on in lower case after a code block it shows is one sentence (held-out
    # review 24, gkeyll: "… defined directly in `Makefile:405`: ```…``` which has two independent
    # prerequisite chains …")
    text = _unfenced(text)
    out = []
    for part in _SENTENCE_SPLIT.split(text):
        part = re.sub(r"^\s*(?:[-*•]|\d+[.)]|#+)\s+", "", part).strip().strip("*").strip()
        if part:
            out.append(part)
    return out


def explanation(text: str, limit: int = 2) -> list[str]:
    """The sentences of an agent's message that say why, not what it will do next."""
    picked: list[str] = []
    for sentence in _sentences(text)[:8]:
        sentence = _PREAMBLE.sub("", sentence)
        if not picked and (_PLAN.match(sentence) or _HEDGE.search(sentence)):
            continue
        if not picked and _GENERIC_ISSUE.search(sentence) and \
                not _CAUSAL.search(_GENERIC_ISSUE.sub("", sentence)):
            continue  # "the issue is that the link is not appearing": a symptom, no cause
        if (len(sentence) < 20 or sentence.endswith(("?", ":")) or _ACTION.match(sentence)
                or _INTENT.search(sentence)):
            if picked:
                break
            continue
        if not _CAUSE.search(sentence) and not picked:
            continue
        picked.append(" ".join(sentence.split()))
        if len(picked) >= limit:
            break
    return picked


_SIFTED = re.compile(r"\|\s*(?:e?grep|rg|awk|sed\s+-n)\b")
_PASS_COUNT = re.compile(r"(?mi)^[ \t]*\d+ pass[ \t]*$|\b\d+ passed\b|\ball (?:\d+ )?tests? pass")


def failure_lessons(transcript: Iterable[Any], rel: Callable[[str], str]) -> list[Lesson]:
    """Every failing command run and what became of it, in order."""
    calls, prose = _walk(transcript, rel)
    lessons: list[Lesson] = []
    open_: list[Lesson] = []
    for call in calls:
        cmd = call.command
        if cmd is None or not call.answered:
            continue
        probe = not cmd.exe or cmd.is_read_only or bool(_INLINE.search(cmd.raw))
        if probe and not call.clean:
            continue  # `ls` or `git status` failing teaches little, an ad-hoc `python -c` nothing
        sig = signature(call.result) if call.failed and not probe else None
        for lesson in list(open_):
            failed = lesson.call.command
            if failed is None:
                continue
            # Any step of a line that ran clean can be the re-run of a failed command; not a check whose output
            # went through a filter that keeps only some lines and shows no clean tally: grep's status is its own
            # (held-out review 144: `bun test src/ | grep -E "^(src/|✓|✗…)" | tail -20`, and 114 tests failed)
            # (clean: a count of passes and no failure counted anywhere, "Tests: 2 failed, 10 passed" is none: the
            # review of a28347e, H2)
            sifted = bool(_SIFTED.search(cmd.raw[:4000])) and not (_PASS_COUNT.search(call.result[-4000:])
                                                                   and not _SOME_FAILED.search(call.result[-4000:]))
            step = next((st for st in call.clean if equivalent(st, failed) and not (sifted and st.is_check)), None)
            clean = step is not None
            if not clean and call.failed and not probe and equivalent(cmd, failed) and sig is not None \
                    and sig.key != lesson.sig:
                step = cmd  # the same command failing differently: no longer this error
            if step is None:
                continue
            lesson.fixed_by, lesson.fix_step, lesson.fix_clean = call, step, clean
            open_.remove(lesson)
        if call.failed and not probe:
            if sig is None or any(o.sig == sig.key and o.call.command is not None
                                  and equivalent(cmd, o.call.command) for o in open_):
                continue
            lesson = Lesson(call, sig.text, sig.key,
                            typed=len(re.findall(r"[A-Za-z]{3,}", sig.message)) >= 3)
            lesson.diagnosis = _diagnosis_after(call.pos, prose, calls, call)
            lessons.append(lesson)
            open_.append(lesson)
    final = max((c.pos for c in calls), default=0)
    writes = [(c.pos, f) for c in calls if c.tool in WRITE_TOOLS
              and re.match(r"(?i)\s*(?:file )?created", c.result) for f in files_of(c, rel)]
    replaced = [(c.pos, "\n".join(ln for ln in old.splitlines() if ln not in new.splitlines()), new)
                for c in calls if c.tool in EDIT_TOOLS and c.answered and not _errored(c)
                for old, new in edit_texts(c.input) if old]  # what an edit took out, not the context it kept
    for lesson in lessons:
        lesson.created = {f for pos, f in writes if pos < lesson.call.pos}
        lesson.took_out = "\n".join(old for pos, old, _ in replaced if pos < lesson.call.pos)
        lesson.put_in = "\n".join(new for pos, _, new in replaced if pos < lesson.call.pos)
        lesson.late = lesson.call.pos >= 0.8 * final
        end = lesson.fixed_by.pos if lesson.fixed_by else lesson.call.pos
        between = [c for c in calls if lesson.call.pos < c.pos < end or
                   (c.pos == end and lesson.fixed_by is not None and c is not lesson.fixed_by
                    and c.pos == lesson.fixed_by.pos and calls.index(c) < calls.index(lesson.fixed_by))]
        lesson.edits = [c for c in between if c.tool in EDIT_TOOLS and c.answered and not _errored(c)]
        if lesson.fixed_by is None:
            # (an edit still without its result when the session ended counts: it was under way)
            lesson.edited_after = _uniq(f for c in calls if c.pos > lesson.call.pos and c.tool in EDIT_TOOLS
                                        and not (c.answered and _errored(c)) for f in files_of(c, rel))
        lesson.commands = [c for c in between if c.command is not None and not c.failed
                           and not c.command.is_read_only and c.command.exe]
        host = _remote_host(lesson.call.command)
        ran = _remote_programs(lesson.call.command)
        lesson.moved_on = bool(host) and any(
            c.pos > lesson.call.pos and c.answered and not c.failed and not c.errored
            and _remote_host(c.command) == host and ran & _remote_programs(c.command) for c in calls) \
            or _ran_alone(lesson.call, [c for c in calls if c.pos > lesson.call.pos]) is not None
        failed = lesson.call.command
        if lesson.fixed_by is not None and failed is not None:
            after = [c for c in calls if c.pos >= lesson.fixed_by.pos and c.command is not None and c.answered
                     and (equivalent(c.command, failed) or any(equivalent(st, failed) for st in c.clean))]
            lesson.verified = bool(after) and any(equivalent(st, failed) for st in after[-1].clean)
    return lessons


def lint_lessons(transcript: Iterable[Any], rel: Callable[[str], str], session_id: str,
                 told: set[int] | None = None) -> list[Draft]:
    """What a linter or type checker demanded and how the session satisfied it: per rule of a
    failed check that an equivalent later run passed, the agent's words naming the rule (else the
    lines its edit of the flagged file added, and its diagnosis if it gave one). A rule with
    neither is left out, and so is every unnamed rule after the first: fixes it did not think
    worth a word are routine. `told` gathers the positions of the failed calls these drafts tell."""
    calls, prose = _walk(transcript, rel)
    drafts: dict[str, Draft] = {}
    unnamed = 0
    for n, call in enumerate(calls):
        cmd = call.command
        if cmd is None or not cmd.exe or not (call.failed or call.answered):
            continue
        complaints = lint_findings(call.result)
        # a check that only warned (exit 0) counts once an equivalent later run is clean of it
        # (held-out review 34, vertumnus: Biome's unused-import warnings in `.astro` files, turned
        # off for them in biome.json)
        passed = next((c for c in calls[n + 1:] if c.command is not None and not c.failed and c.answered
                       and equivalent(c.command, cmd) and (call.failed or _clean_check(c))), None)
        if not complaints or passed is None:
            continue
        said = [(at, text) for at, text in prose if call.pos < at <= passed.pos]
        edits = [c for c in calls[n + 1:] if c.pos < passed.pos and c.tool in EDIT_TOOLS
                 and c.answered and not _errored(c)]
        configs = [f for e in edits for f in files_of(e, rel) if _CHECKER_CONFIG.search(f)]
        by_rule: dict[str, list[Any]] = {}
        for finding in complaints:
            by_rule.setdefault(finding.rule, []).append(finding)
        for rule, seen in by_rule.items():
            key = session_key("", "lint", f"{cmd.family}\x1f{rule}")
            if key in drafts or len(drafts) >= MAX_LINT_LESSONS:
                continue
            finding = seen[0]
            how, at = _naming(said, rule)
            why = [] if how else _diagnosis_after(call.pos, prose, calls, call)
            after = [e for e in edits if e.pos >= at]
            added = _uniq(line for f in seen for line in _added_lines(after, f.path, rel))[:4]
            where, setting = next(((f, lines) for f in configs for lines in [_added_lines(after, f, rel, most=12)]
                                   if _sets_aside(lines, rule, seen)), ("", [])) if not added else ("", [])
            if setting:  # the rule set aside where the checker is configured
                added = [f"({where}) " + " ".join(setting)]
                # the agent's verdict that the checker was wrong is what the config acts on: its
                # cause is the diagnosis ("Those are false positives — Biome's `.astro` support
                # parses the frontmatter but not the template, so …")
                why = why or next((found for at, text in said if at < passed.pos and _OVERRULED.match(_unbold(text))
                                   for found in [explanation(_OVERRULED.sub("", _unbold(text), 1))] if found), [])
            if not how and (not added or unnamed):
                continue  # beyond the first, a rule the agent never named is routine to it
            unnamed += not how
            messages = _uniq(f.message for f in seen)[:3]
            step = refused_step(cmd, call.result)
            tool = f"{step}` hook" if step in _HOOKED else _short(" ".join(
                (cmd.raw if call.failed else cmd.main).split()), 60) + "`"
            title = f"`{tool} flags {rule}" + (f": {_short('; '.join(messages), 90)}" if messages != [rule] else "")
            body = [f"{f.path}:{f.line}: " + (f"{f.message} ({rule})" if f.message != rule else rule) for f in seen[:3]]
            if how:
                body.append(f"Fixed: {how}")
                title += f"; {_short(how, 90)}"
            elif why:
                body.append(f"Why (the agent's diagnosis): {' '.join(why)}")
                title += f"; {_short(' '.join(why), 90)}"
            if added:
                body.append("The edit added: " + " | ".join(added))
            assert passed.command is not None
            again = passed.command.raw if call.failed else passed.command.main
            body.append(f"Then `{_short(again, 120)}` passed.")
            if told is not None:
                told.add(call.pos)
            drafts[key] = Draft(
                kind="pitfall", title=_short(title, 200), body="\n".join(body),
                files=_uniq(rel(f.path) for f in seen)[:6], confidence=0.75, importance=0.65,
                source="rule", key=key, tags=_uniq(["lint", rule, cmd.exe]))
    return list(drafts.values())


def _sets_aside(lines: list[str], rule: str, seen: list[Any]) -> bool:
    """Whether lines added to a checker's config name the rule, or the kind of file it flagged
    (`"noUnusedImports": "off"`, `"includes": ["**/*.astro"]`), not an unrelated dependency."""
    text = " ".join(lines).lower()
    kinds = {posixpath.splitext(f.path)[1].lower() for f in seen} - {""}
    return rule.lower() in text or any(re.search(rf"\*{re.escape(k)}\b", text) for k in kinds) and bool(_TURNS_OFF.search(text))


def _clean_check(call: _Call) -> bool:
    """Whether a check ran to its own end and complained of nothing: output with no finding and no
    tally of warnings, not sifted by a filter that could have hidden them (spotter 4d5611e5: `mix
    dialyzer --format short 2>&1 | grep "subagent_live"` printing nothing is no clean run)."""
    assert call.command is not None
    line = re.sub(r"[ \t]+", " ", call.command.raw.replace("\\\n", " "))  # one line per step, spaced once
    step = re.search(re.escape(call.command.main) + r"(?:[^;&\n]|(?<=>)&)*", line)
    sifted = step is not None and re.search(r"\|\s*(?:grep|rg|egrep|awk|sed|jq|cut)\b", step.group(0))
    return bool(call.result.strip()) and not sifted and not lint_findings(call.result) and not _WARNED.search(call.result)


def _naming(said: list[tuple[int, str]], rule: str) -> tuple[str, int]:
    """The agent's first words that name the rule (without its "let me"; with the next sentence
    when they are only "fix the X error"), and where it said them."""
    word = re.compile(rf"(?<![\w-]){re.escape(rule)}(?![\w-])", re.IGNORECASE)
    for at, text in said:
        sentences = _sentences(text)
        for n, sentence in enumerate(sentences):
            if not word.search(sentence) or len(sentence) < 20 or sentence.endswith("?"):
                continue
            sentence = re.sub(r"(?i)^(?:now,? |next,? |first,? )?(?:let me|let's|i'll|i will)\s+", "", sentence)
            if len(sentence.split()) < 8 and n + 1 < len(sentences):
                sentence += " " + sentences[n + 1]
            return " ".join(_unbold(sentence).split()), at
    return "", 0


def _added_lines(edits: list[_Call], path: str, rel: Callable[[str], str], most: int = 3) -> list[str]:
    """Up to `most` lines the first edit of `path` added (what the fix looked like)."""
    for edit in edits:
        if not any(f == rel(path) or f.endswith("/" + path) for f in files_of(edit, rel)):
            continue
        old = set((edit.input.get("old_string") or "").splitlines())
        new = edit.input.get("new_string") or edit.input.get("content") or ""
        lines = [" ".join(ln.split()) for ln in str(new).splitlines() if ln.strip() and ln not in old]
        return [_short(ln, 100) for ln in lines[:most]]
    return []


_REFUSED_CALL = ("<tool_use_error>", "Error", "The user doesn't want")


def _errored(call: _Call) -> bool:
    """The call did not do its work: a tool other than the shell whose result was flagged an error
    (an edit waiting on a permission: "Claude requested permissions to write to …"), or a result
    that reads as one. A command's error flag is its exit status: it ran."""
    return (call.errored and call.command is None) or call.result.lstrip().startswith(_REFUSED_CALL)


def _diagnosis_after(pos: int, prose: list[tuple[int, str]], calls: list[_Call],
                     failed: _Call | None = None) -> list[str]:
    """The agent's explanation in its first words after a failure (before its next command), or
    after a look around if it says why in so many words (held-out review 15 grepped beside the
    failing lint, then: "The script isn't executable — that's why it was never wired up.")."""
    later = [c.pos for c in calls if c.pos > pos and c.command is not None]
    next_command = min(later, default=10**9)
    next_change = min((c.pos for c in calls if c.pos > pos and c.command is not None
                       and not c.command.is_read_only), default=10**9)
    for at, text in prose:
        if pos < at <= next_change:
            found = explanation(text)
            if found and (at <= next_command or _SAYS_WHY.search(found[0]) and _about(found[0], failed)):
                return found
    return []


def _about(said: str, call: _Call | None) -> bool:
    """Whether words the agent said after other calls speak of the failed call: a word of four
    letters or more they share with its line or its output (not an answer to a question between)."""
    if call is None or call.command is None:
        return False
    theirs = set(re.findall(r"[a-z]{4,}", f"{call.command.raw[:2000]}\n{call.result[-3000:]}".lower())) - _COMMON
    ours = set(re.findall(r"[a-z]{4,}", said.lower())) - _COMMON
    return any(t in w or w in t for w in ours for t in theirs)  # `yaml` in PyYAML


_COMMON = frozenset({"that", "this", "with", "from", "because", "when", "have", "will", "there", "their", "which",
                     "what", "were", "been", "into", "then", "than", "just", "only", "also", "does", "doesn", "isn",
                     "wasn", "the", "error", "failed", "fails", "failing", "file", "line", "why"})


_SAYS_WHY = re.compile(r"(?i)\b(?:because|that['’]s why|which is why|root cause|caused by|due to|the reason)\b")


def _own_new_code(lesson: Lesson, rel: Callable[[str], str]) -> bool:
    """Every edit that fixed it went to files the session itself created before the failure."""
    edited = {f for e in lesson.edits for f in files_of(e, rel)}
    return bool(edited) and edited <= lesson.created


def _held_own_old_words(lesson: Lesson) -> bool:
    """Whether the failure is a check expecting words the session's own edit had just replaced: a
    test kept up to date with the change, nothing for a later session (claude-code-log a7da6a22:
    `assert 'not a directory or zip file' in '… is not a directory or supported archive'` after the
    message was changed)."""
    expected = re.findall(r"""assert\s+(['"])(.{12,200}?)\1\s+(?:in|==)\s""", lesson.call.result[-6000:])
    return bool(lesson.took_out) and any(text in lesson.took_out and text not in lesson.put_in for _, text in expected)


def files_of(call: _Call, rel: Callable[[str], str]) -> list[str]:
    path = call.input.get("file_path") or call.input.get("path") or call.input.get("notebook_path")
    return [rel(path)] if isinstance(path, str) and path else []


def _set_up_first(lesson: Lesson) -> list[str]:
    """The steps the fixing line ran before the step that re-ran the failed command, that change
    something and that the failing line did not run."""
    if lesson.fixed_by is None or lesson.fix_step is None:
        return []
    steps = lesson.fixed_by.clean
    at = next((k for k, step in enumerate(steps) if step.main == lesson.fix_step.main), 0)
    failing = {step.main for step in ([lesson.call.command] if lesson.call.command else []) + lesson.call.clean}
    return [step.main for step in steps[:at] if step.main not in failing and step.exe not in ("cd", "pushd", "echo")
            and (not step.is_read_only or _SETS_GIT.search(step.main)) and not _LOOKS_UP.search(step.main)]


# git's "read" subcommands that set something (`git remote set-url`, `git config user.name x`)
_SETS_GIT = re.compile(r"^git\s+(?:-C\s+\S+\s+)?(?:remote\s+(?:set-url|add|rename|remove|rm|set-head)|"
                       r"config\s+(?:--(?:global|local|system)\s+)?(?!-)[\w.-]+\s+(?!-)\S)")
# a step that only asks (`gh auth status`, `git stash list`, `entire agent-help trail create`)
_LOOKS_UP = re.compile(r"^\S+(?:\s+[\w-]+)?\s+[\w-]*(?:help|status|list|show|view|info|whoami|version|get)\b|\s--(?:help|list|get)\b")


def lesson_drafts(lessons: list[Lesson], rel: Callable[[str], str], session_id: str,
                  relative: Callable[[str], str] = lambda text: text) -> list[Draft]:
    """Lessons worth keeping as drafts: resolved ones with a diagnosis or a visible fix."""
    drafts = []
    for lesson in lessons:
        cmd = lesson.call.command
        assert cmd is not None
        fixed = lesson.fix_step
        if lesson.fixed_by is None or fixed is None:
            continue
        if not lesson.fix_clean and not lesson.verified:
            continue  # it only failed differently, and nothing passed in the end: no fix seen
        edit_files = _uniq(f for e in lesson.edits for f in files_of(e, rel))
        other = [c.command.main for c in lesson.commands if c.command is not None][-3:]
        hooked = refused_step(cmd, lesson.call.result) in _HOOKED and not _shows_exception(lesson.call.result)
        if _own_new_code(lesson, rel) and not hooked:
            continue  # a bug in code the agent wrote this session, fixed there: no lesson for later
        if _held_own_old_words(lesson):
            continue
        if _not_on_path(lesson):
            continue  # the shell found no such program: shell_pitfalls' env item says how it ran
        same = (relative(fixed.main) == relative(cmd.main) and (fixed.dir or ".") == (cmd.dir or ".")
                and not _with_env(fixed, cmd))
        if same and not edit_files and not other and not lesson.diagnosis:
            continue  # passed again unchanged: nothing learnt, maybe flaky
        asked = _uniq(c.command.main for c in lesson.commands
                      if c.command is not None and (c.command.family, c.command.sub) != (cmd.family, cmd.sub)
                      and asked_for(c.command, lesson.call.result))[-2:]
        if not lesson.diagnosis and not asked and (same or not lesson.typed or _SHELL_ERROR.search(lesson.error)):
            continue  # no word of why, and no other command that made it pass: nothing to learn
        # Edits count as the fix only where the failure or the diagnosis names the file.
        said = f"{lesson.call.result[-6000:]}\n{' '.join(lesson.diagnosis)}"
        plausible = [f for f in edit_files if f in said or f.rsplit("/", 1)[-1] in said
                     or (_CONFIG_WORDS.search(said) and _CONFIG_FILE.search(f))
                     or (_DEPENDENCY_WORDS.search(said) and _MANIFEST.search(f))]
        if not lesson.diagnosis and (edit_files or other) and not plausible and not asked:
            continue  # a changed command line among other edits and runs: which one fixed it is a guess
        fix_parts = []
        # what the passing line did before the rerun, that the failing one did not (held-out review
        # 25: `git remote set-url origin …/gh/MuskanPaliwal/… && entire trail create …`, where the
        # lookups in between had only been read)
        before = _set_up_first(lesson)
        if before:
            fix_parts.append("ran " + " && ".join(f"`{_short(redact(c), 90)}`" for c in before) + " first, in the same line")
            other = [c for c in other if not parse_command(c).is_read_only and not _LOOKS_UP.search(c)]
        if asked:
            fix_parts.append("ran " + ", ".join(f"`{_short(c, 60)}`" for c in asked) + ", as the error said")
        # a run that only failed otherwise got past the error, it did not work (held-out review 124: "`cd . &&
        # bun run lint` worked", and it failed with the formatter's error)
        got_past = "worked" if lesson.fix_clean else "got past it"
        if not same and not asked:  # another command line, or the same one from another directory
            fix_parts.append(f"`{_short(fixed.raw, 120)}` {got_past}" + _with_env(fixed, cmd))
        if other and not asked:
            fix_parts.append("ran " + ", ".join(f"`{_short(c, 60)}`" for c in other))
        if plausible:
            fix_parts.append("changes in " + ", ".join(plausible[:4]))
        elif edit_files:
            fix_parts.append("edits in between (not named by the error): " + ", ".join(edit_files[:4]))
        if lesson.diagnosis:
            head = " ".join(lesson.diagnosis)
        else:
            error = re.sub(rf"^(?:{re.escape(cmd.exe)}:\s*)?(?:error|fatal):\s*", "", lesson.error, flags=re.IGNORECASE)
            head = f"`{refused_step(cmd, lesson.call.result)}` fails with {_short(error, 100)}"
            if asked:
                head += f"; run `{_short(asked[-1], 50)}` first"
            elif plausible:
                head += f"; fixed in {', '.join(plausible[:2])}"
            elif not same:
                head += f"; `{_short(fixed.main, 70)}` {got_past}" + _with_env(fixed, cmd)
        title = _short(head, 200)
        body = []
        if lesson.diagnosis:
            body.append(f"Why (the agent's diagnosis): {' '.join(lesson.diagnosis)}")
        body.append(f"Failed: `{_short(cmd.raw, 200)}` with {lesson.error}")
        body.append("Fix: " + ("; ".join(fix_parts) if fix_parts else "unknown (the command passed later)"))
        if not lesson.fix_clean:
            body.append(f"Then `{_short(fixed.raw, 160)}` no longer showed it (it failed "
                        "with another error), and the last run of it passed.")
        else:
            body.append(f"Then `{_short(fixed.raw, 160)}` passed"
                        + (", and the last run of it passed too." if lesson.verified else "."))
        drafts.append(Draft(
            kind="pitfall", title=title, body="\n".join(body),
            files=(plausible or edit_files)[:6], confidence=0.8 if lesson.verified else 0.65,
            importance=0.8 if lesson.diagnosis else 0.6, source="rule",
            key=session_key("", "lesson", f"{cmd.family}\x1f{cmd.sub}\x1f{lesson.sig}"),
            tags=_uniq(["failure-fix", "lesson", cmd.exe, *(["verified"] if lesson.verified else [])])))
    drafts.sort(key=lambda d: (-d.importance, -d.confidence))
    return drafts[:MAX_LESSONS]


_HINT = re.compile(r"(?i)\b(?:run|try|use|please|to fix|to update|to resolve|to apply|fix (?:it|this|them) "
                   r"(?:with|by)|did you (?:mean|forget)|hint|consider)\b")
_QUOTED_CMD = re.compile(r"[`'\"]([^`'\"]{3,120})[`'\"]")
_HOOKED = {"git commit": COMMIT_HOOK,
           "git push": re.compile(r"(?i)\bpre-?push\b")}  # the step a hook's refusal speaks of


def asked_for(cmd: Command, output: str) -> bool:
    """Whether a failure's output told to run this command line (`Run 'mix format' to fix.`, go's
    `to update it:` + `go mod tidy`): a fixer it named, not another use of the same program
    (`Use `mix credo explain`` is no `mix credo --strict`) nor a re-run of a check."""
    if not cmd.exe or not cmd.sub or cmd.is_check or cmd.is_read_only:
        return False
    ran = " ".join(cmd.main.split())
    lines = _unescaped(output[-6000:]).splitlines()
    for n, line in enumerate(lines):
        named = [*_QUOTED_CMD.findall(line), line]
        for span in named:
            span = " ".join(span.split()).removesuffix("...").removesuffix("…").strip()
            if (span.split()[:2] == [cmd.exe, cmd.sub] and ran.startswith(span)
                    and (span == line.strip() or _HINT.search(line) or n and _HINT.search(lines[n - 1]))):
                return True
    return False


def refused_step(cmd: Command, output: str) -> str:
    """The step of a command line a failure speaks of: the commit when a pre-commit hook refused
    `git add x && git commit`, else the line's main command."""
    for step, mark in _HOOKED.items():
        if mark.search(output[-6000:]) and any(re.match(rf"{step}\b", part) for part in [cmd.main, *cmd.others]):
            return step
    return " ".join(filter(None, (cmd.exe, cmd.sub)))


_CONFIG_WORDS = re.compile(r"(?i)\bconfig(?:ure|ured|uration)?\b|\bsettings?\b|\benv(?:ironment)?\b")
# where a linter or type checker is configured
_CHECKER_CONFIG = re.compile(r"(?i)(?:^|/)(?:biome\.jsonc?|\.?eslintrc[\w.]*|eslint\.config\.\w+|tsconfig[\w.-]*\.json|"
                             r"\.?ruff\.toml|pyproject\.toml|setup\.cfg|\.flake8|mypy\.ini|\.pylintrc|\.golangci\.ya?ml|"
                             r"\.credo\.exs|\.markdownlint[\w.-]*|\.rubocop\.yml|clippy\.toml|deno\.jsonc?)$")
_TURNS_OFF = re.compile(r"\b(?:off|ignore\w*|disable\w*|exclude\w*|false|none|allow)\b")
_OVERRULED = re.compile(r"(?i)^\s*(?:(?:th(?:ose|ese|is|at|ey)|it|all \w+) (?:are|is|were|was) )?(?:all )?(?:just )?"
                        r"false[ -]positives?\s*[—–:-]+\s*")
_WARNED = re.compile(r"(?i)\b(?:found )?[1-9]\d* (?:warnings?|problems?)\b")
_CONFIG_FILE = re.compile(r"(?i)(?:^|/)(?:config|conf|settings)(?:/|\.)|\.(?:env|ini|toml|ya?ml|cfg|conf)$|config\.\w+$")
_DEPENDENCY_WORDS = re.compile(r"(?i)\bdep(?:endency|endencies|s)?\b|\bpackage\b|\bmodule\b|\brequires?\b|not installed")
_MANIFEST = re.compile(r"(?:^|/)(?:mix\.exs|package\.json|pyproject\.toml|requirements[\w.-]*\.txt|go\.mod|Cargo\.toml|"
                       r"Gemfile|composer\.json|build\.gradle(?:\.kts)?|pom\.xml|setup\.(?:py|cfg))$")


_NOT_THERE = re.compile(r"(?i)no such file or directory|file or directory not found|does not exist|"
                        r"cannot find (?:the )?(?:path|file)")


def open_failures(lessons: list[Lesson]) -> list[Lesson]:
    """Failures nothing later resolved, near the session's end (earlier ones it moved past); a
    command pointed at a path that is not there (a slip of where it ran) leaves nothing open, nor
    does a script on a remote host that later scripts there ran clean: which of its steps failed,
    and whether a later one redid it, the line does not show (held-out review 18: a `git push
    --dry-run` rejected inside `ssh zurich '…'`, then a real push there worked)."""
    return [lesson for lesson in lessons if lesson.fixed_by is None and lesson.late
            and not _slip(lesson) and not lesson.moved_on]


_SSH_VALUED = frozenset("bcDEeFIiJLlmOopQRSWw")


def _remote_programs(cmd: Command | None) -> set[str]:
    """The programs (besides looking around) a remote script runs: a later script on the host
    that runs none of them says nothing of the failed one."""
    if cmd is None or len(cmd.targets) < 2:
        return set()
    steps = _chain(parse_command(cmd.targets[-1]), lambda path: path)
    return {step.exe for step in steps if step.exe and step.exe != "ssh" and not step.is_read_only}


def _remote_host(cmd: Command | None) -> str:
    """The host an `ssh [options] host '<script>'` line runs its script on, else ""."""
    if cmd is None or cmd.exe != "ssh":
        return ""
    words = cmd.main.split()  # the options and the host come before the (quoted) script
    words = words[next((n for n, w in enumerate(words) if w.rsplit("/", 1)[-1] == "ssh"), 0) + 1:]
    while words and words[0].startswith("-"):
        flag = words.pop(0)
        if len(flag) == 2 and flag[1] in _SSH_VALUED and words:
            words.pop(0)
    return words[0].rsplit("@", 1)[-1] if len(words) > 1 else ""


_MISSING = re.compile(r"(?m)no such file or directory:\s*(\S+)\s*$")  # zsh's words for a step it could not run


def _not_on_path(lesson: Lesson) -> bool:
    """The failing line's own program was not on PATH (`pytest: command not found`)."""
    cmd = lesson.call.command
    unrun = _NOT_ON_PATH.search(lesson.error)
    word = next((g for g in unrun.groups() if g), "") if unrun else ""
    return bool(word) and cmd is not None and parse_command(word).exe == cmd.exe


def _slip(lesson: Lesson) -> bool:
    """A command pointed at a path that is not there, or a step the shell could not run at all (a
    stray token like `.venv=../.venv`, a tool not on PATH: shell_pitfalls says that one)."""
    cmd = lesson.call.command
    if cmd is None:
        return False
    unrun = _MISSING.search(lesson.error) or _NOT_ON_PATH.search(lesson.error)
    word = next((g for g in unrun.groups() if g), "") if unrun else ""
    if word and re.search(rf"{_SEGMENT}{re.escape(word)}(?:\s|$)", cmd.raw[:4000], re.MULTILINE):
        return True
    return bool(_NOT_THERE.search(lesson.error)) and any(
        t in lesson.error or t.rsplit("/", 1)[-1] in lesson.error for t in cmd.targets)


_RECOMMENDED = re.compile(r"\s*\((?:recommended|suggested|default)\)", re.IGNORECASE)
# Held-out review 10 (cipher-box, a planning interview): "More questions about migration, or move to
# next area?" → "Next area"; "Which areas do you want to discuss?"; "how difficult is it to change
# direction on this later?"; "could you please expand on these options…" were stored as decisions.
_STEERING = re.compile(r"(?i)\bmore questions\b|\bnext area\b|\bare we done\b|\bready to (?:create|write|move|proceed)\b|"
                       r"\bwhich (?:areas?|topics?) (?:do you want|would you like|should we)\b|\banything else\b")
_ASKS_BACK = re.compile(r"(?i)\?\s*(?:\S+\s*){0,12}$|\?\s|\b(?:explain|expand|exapnd|elaborate|tell me more|pros/cons|pros and cons|"
                        r"would like to (?:hear|know|understand|see)|i need (?:comparisons|more)|what do you (?:mean|think))\b")
_ANSWER = re.compile(r'"((?:[^"\\]|\\.)+)"="((?:[^"\\]|\\.)*)"')
_LOCATION = re.compile(r"(?<!\S)(?:[A-Za-z]:\\|~/|\.{1,2}/|/|https?://)\S+")
_LOOK_THERE = re.compile(r"(?i)\b(?:here|there|is at|are at|located|you(?:'ll| will)? find|find it|saved|downloaded|"
                         r"uploaded|attached|pasted|see)\b")


def _points_to(answer: str) -> bool:
    """An answer that only says where to look ("the console output is here: ~/Downloads/run_10.txt",
    held-out review 24): a path or address, and a few words around it that say to look there."""
    rest = _LOCATION.sub(" ", answer)
    words = re.findall(r"[^\W\d_]+", rest)
    return rest != answer and (not words or len(words) <= 6 and bool(_LOOK_THERE.search(rest)))


# an answer that puts the question off (held-out review 42: "Yeah that was something else I wanted to
# talk about with you on.", kept as a decision that outranked the real one)
_PUTS_OFF = re.compile(r"(?i)\bsomething else\b|\b(?:want(?:ed)? to|let['’]?s|we (?:should|can)) (?:talk|chat|discuss)\b|"
                       r"\bnot sure yet\b|\bget back to (?:you|this|that)\b|\b(?:decide|think about it) later\b")
# the person picking one of the lettered options of the agent's last message ("I would say b is the
# real goal", held-out review 42, to "**(B) A demonstrably peak-performance portable megakernel** …")
# or in a later clause of its reply (held-out review 60: "Yes kill it. I am only accessing this through
# you. And I’ll go with option a, but I also want you to fix the honest failures you listed.")
_PICKS_LETTER = re.compile(r"(?i)(?:^|[.!;]\s+|,\s*|\b(?:and|but|so|then)\s+)\W*(?:(?:ok(?:ay)?|so|well|hmm+|yeah|yes|and|then)\W+)*"
                           r"(?:i(?:['’]d| would|['’]ll| will) (?:say|go with|pick|choose|take)|we(?:['’]ll| will) (?:go with|take)|"
                           r"i (?:think|choose|pick|prefer)|let['’]?s (?:go with|do)|go with|definitely|option)\s+(?:option\s+)?"
                           # "b is the real goal", "(b)", "option 2"; not "I think a better plan …", "I think 3 of those"
                           r"(?:\(([a-d])\)|([a-d])(?=\s+(?:is|as|because|for|please|then|sounds|seems|it is)\b|[.,;:!)]|\s*$)|"
                           r"(?<=option )([1-4])\b)")


_NOT_PICKED = re.compile(r"(?i)\b(?:no|not|neither|nor|never|too (?:much|many|slow|risky|big|complex|expensive)|"
                         r"out of the question|rather not|don['’]t|won['’]t|instead of)\b")


def _sentence_at(text: str, at: int) -> str:
    """The sentence of `text` that holds position `at`."""
    start = max(text.rfind(stop, 0, at) for stop in (". ", "! ", "? ", "\n")) + 1
    ends = [e for e in (text.find(stop, at) for stop in (". ", "! ", "? ", "\n")) if e >= 0]
    return text[start:min(ends) if ends else len(text)]


def lettered_choices(transcript: Iterable[Any], session_id: str) -> list[Draft]:
    """The person's pick of a lettered option the agent's message before laid out, with what it means."""
    drafts = []
    said = ""
    for msg in transcript:
        if msg.sidechain or msg.compact:
            continue
        if msg.role == "assistant" and msg.text.strip():
            said = msg.text
        elif msg.role == "user" and not msg.meta and not msg.tool_use_id and msg.text.strip():
            pick = _PICKS_LETTER.search(msg.text[:300])
            letter = next((g for g in pick.groups() if g), "") if pick else ""
            if pick and _NOT_PICKED.search(_sentence_at(msg.text, pick.end())):
                letter = ""  # "No, option b is too much code for us." (the review of session 28)
            option = _option(said, letter) if letter and said else ""
            said_then, said = said, ""
            if not option:
                continue
            words = " ".join(msg.text.split())
            body = [f"The agent offered: {_short(option, 400)}"]
            others = [f"({o.upper()}) {_short(text, 200)}" for o in "abcd" if o != letter.lower()
                      for text in [_option(said_then, o)] if text]
            if others:
                body.append("Over: " + "; ".join(others))
            body.append(f"The user decided: {_short(words, 700)}")
            body += _listed(said_then, msg.text)
            drafts.append(Draft(
                kind="decision", title=_short(redact(f"Chose ({letter.upper()}) {option}"), 240),
                body=redact("\n".join(body)),
                confidence=0.85, importance=0.8, source="user",
                key=session_key(session_id, "choice", words[:200].lower()), tags=["user-stated", "reply"]))
    return drafts


# what a reply points back at in the agent's message ("fix the honest failures you listed", held-out
# review 60)
_POINTS_AT_LIST = re.compile(r"(?i)\bthe ((?:\w[\w-]*\s+){0,3}\w[\w-]*) (?:that )?you (?:listed|mentioned|named|flagged|found|raised|"
                             r"proposed|suggested|outlined)\b")


_NO_LABEL_WORDS = frozenset({"one", "ones", "thing", "things", "stuff", "it", "them", "those", "these", "other"})


def _listed(said: str, reply: str) -> list[str]:
    """The list a reply points back at, from the message it answers: the bullets under the label that
    names what it points at ("**Honest failures (all reverted clean):**")."""
    out = []
    for hit in _POINTS_AT_LIST.finditer(reply[:1000]):
        words = [w for w in hit.group(1).lower().split() if w not in _NO_LABEL_WORDS]
        lines = said.splitlines()
        for k, line in enumerate(lines):
            plain = _unbold(line).strip().lower()
            if not words or plain.startswith(("-", "*", "•")) or len(plain) > 160 or not plain.rstrip().endswith(":") \
                    or not all(re.search(rf"\b{re.escape(w)}", plain) for w in words):
                continue
            bullets = []
            for below in lines[k + 1:]:
                text = _unbold(below).strip()
                if not re.match(r"(?:[-*•]|\d+[.)])\s", text):
                    break
                bullets.append("- " + _short(text.lstrip("-*• "), 240))
            if bullets:
                out.append(f"The {hit.group(1)} it listed:")
                out += bullets[:6]
                break
    return out


def _option(text: str, letter: str) -> str:
    """The text of option `letter` among the lettered lines of a message: "- **(B) A … megakernel** …"."""
    lines = [_unbold(line).strip() for line in text.splitlines()[-200:]]
    # the list nearest the question first; a line that starts with the option before one that names it
    # inside ("2. The 8×H100 — Option A (my rec): one more focused 1× session … Option B: …", held-out
    # review 60; not "last week you picked Option A: keep SQLite" above the list, the review of session 28)
    for plain in reversed(lines):
        hit = re.match(rf"(?i)^(?:[-*•]\s*)?(?:\({letter}\)|{letter}[).:]|option {letter}\b:?)\s+(\S.*)$", plain) \
            if letter.isalpha() else re.match(rf"(?i)^(?:[-*•]\s*)?option {letter}\b:?\s+(\S.*)$", plain)
        if hit:
            return " ".join(hit.group(1).split())
    for plain in reversed(lines):
        hit = re.search(rf"(?i)(?<![\w-])option {letter}(?:\s*\([^()]{{0,30}}\))?:\s+(\S.*?)\s*(?=\boption \w\b|$)", plain)
        if hit:
            return " ".join(hit.group(1).split())
    return ""


def user_answers(transcript: Iterable[Any], session_id: str) -> list[Draft]:
    """The person's answers to the agent's questions, as decisions with the options turned down."""
    asked: dict[str, dict[str, Any]] = {}
    drafts = []
    for msg in transcript:
        if msg.sidechain:
            continue
        for use in getattr(msg, "tool_uses", []):
            if use.name == "AskUserQuestion":
                asked[use.id] = use.input
        if msg.role != "tool_result" or msg.tool_use_id not in asked or msg.is_error:
            continue
        questions = {q.get("question", ""): q for q in asked[msg.tool_use_id].get("questions") or []
                     if isinstance(q, dict)}
        for question, answer in _ANSWER.findall(msg.text):
            answer = answer.replace('\\"', '"')
            offered = [o for o in (questions.get(question) or {}).get("options") or [] if isinstance(o, dict)]
            options = [str(o.get("label") or "") for o in offered]
            # Options are turned down only by picking others: a free-text answer picks none.
            chosen = [o for o in options if o and (o == answer or o in answer.split(", "))]
            if _STEERING.search(question) or not chosen and (_ASKS_BACK.search(answer) or _points_to(answer)
                                                             or _PUTS_OFF.search(answer) and len(answer) < 200):
                continue  # where the talk goes next, a question back, where to look, not now: no decision
            # The label is the agent's shorthand ("Trial install (Recommended)"); what it means is
            # in the option's description (held-out review 5: the meaning was lost).
            meant = [str(o.get("description") or "").strip() for o in offered
                     if o.get("label") in chosen and isinstance(o.get("description"), str)]
            picked = _RECOMMENDED.sub("", answer).strip() or answer
            gloss = f": {_short(meant[0], 120)}" if len(meant) == 1 and meant[0] else ""
            title = _short(f"{picked}{gloss} (the user's answer to: {question})", 240)
            body = [f"Asked: {question}", f"The user answered: {answer}"]
            body += [f"Meaning: {m}" for m in meant if m]
            if chosen and len(chosen) < len(options):
                body.append("Not chosen: " + "; ".join(o for o in options if o and o not in chosen))
            elif options and not chosen:
                body.append("Options offered: " + "; ".join(o for o in options if o))
            drafts.append(Draft(
                kind="decision", title=title, body="\n".join(body), confidence=0.9,
                importance=0.8, source="user",
                key=session_key(session_id, "answer", question),
                tags=["user-stated", "answer"]))
    return drafts


def ranked_findings(transcript: Iterable[Any]) -> list[tuple[float, int, str, str]]:
    """Every distinct finding of the session, strongest first, as (weight, message position,
    sentence, its message)."""
    found: list[tuple[float, int, str, str]] = []
    kept_msgs = [m for m in transcript if not m.sidechain and not m.compact]
    msgs = _with_reports(kept_msgs)
    stale = _StaleReports(kept_msgs, msgs)
    refusals = _Refusals(msgs)
    undone = _Undone(msgs)
    after_failure = spoke = False
    explaining = False  # answering "what do you mean…" before looking at anything
    edits = {u.id for m in msgs if m.role == "assistant" for u in m.tool_uses if u.name in EDIT_TOOLS | WRITE_TOOLS}
    overturned = overturns(msgs)
    prompts = [k for k, m in enumerate(msgs) if m.role == "user" and not m.meta and not m.tool_use_id and m.text.strip()]
    said_later = _Said([(k, _unbold(m.text)) for k, m in enumerate(msgs) if m.role == "assistant" and m.text],
                       [k for k, m in enumerate(msgs) if m.role == "assistant" and any(u.name in EDIT_TOOLS for u in m.tool_uses)])
    for n, msg in enumerate(msgs):
        typed = msg.role == "user" and msg.meta and msg.text.lstrip().startswith(("<bash-stdout>", "<bash-stderr>"))
        if msg.role == "tool_result" or typed:
            # a failure (of a call, or of the person's own `!` command) since the agent last spoke:
            # it may look around before it explains, but once it edits, what it says next is
            # about its change
            failed = bool(failure_lines(msg.text)) if typed else msg.is_error or _exit_failure(msg.text)
            after_failure = (after_failure and not spoke or failed) and msg.tool_use_id not in edits
            spoke = False
            explaining = explaining and typed
            continue
        if msg.role == "user" and not msg.meta and not msg.tool_use_id:
            explaining = bool(_ASKS_TO_EXPLAIN.search(msg.text[:2000]))
            after_failure = False
            continue
        if msg.role != "assistant" or not msg.text or explaining:
            continue
        spoke = True
        ahead = next((m for m in msgs[n:n + 4] if m.role == "assistant" and m.tool_uses), None)
        before_edit = ahead is not None and any(u.name in EDIT_TOOLS for u in ahead.tool_uses)
        best: tuple[float, str] | None = None
        offered = _options_offered(msg.text)
        marked = False
        items = [" ".join(_unbold(m.group(1)).split())[:60] for line in msg.text[:20000].splitlines()
                 for m in [_BULLET.match(line)] if m]
        for sentence in _sentences(msg.text)[:10]:
            sentence = " ".join(_unbold(sentence).split())
            step, marked = marked, _LIST_MARK.fullmatch(sentence) is not None
            if _PLAN_AHEAD.search(sentence):
                break
            lead = _INSIGHT.match(sentence)
            if lead:
                sentence = sentence[lead.end():]
            labelled = _STEP_LABEL.match(sentence)
            if (_STEP.match(sentence) and (step or any(sentence.startswith(item[:30]) for item in items))
                    or labelled and _STEP.match(_as_process_step(labelled.group(0), sentence[labelled.end():]))) \
                    and not (_ROOT_CAUSE.search(sentence) or re.search(r"\bbecause\b", sentence)):
                continue  # "For each rule: pull all sources with `rule.py -r <id> -c`, read …" (held-out review 92)
            if sentence in offered:
                continue  # one of the ways the person is asked to choose among: a plan, not a finding
            if _OFFERS.match(sentence) or _WOULD_INCLUDE.search(sentence):
                break  # what it offers to do next (held-out review 27: "Should I build the fix now? Here's what it would include: …")
            if _FOR_YOU.search(sentence) and _THIS_MOMENT.search(sentence) or _BOOKKEEPING.match(sentence):
                continue  # the person's next step ("You will need to push this … first"), the agent's note-taking
            agreeing = _AGREEING.match(sentence)
            if agreeing:
                sentence = sentence[agreeing.end():]
                if _AGREED_TO_DO.search(sentence):
                    continue
            weight = _claim_weight(sentence, after_failure, before_edit) if not _asks_in(sentence) else None
            if weight is not None and _ANAPHORIC.match(sentence):
                weight -= 1.0  # "That's why the CI failure earlier surfaced as …": its subject was said before
            if weight is not None and (best is None or weight > best[0]):
                best = (weight, sentence)
        if (best is None or best[0] < DISCOVERY_FLOOR) and ahead is not None:
            cause = _diagnosis(msg.text)
            later = [m.text for m in msgs[n + 1:n + 8] if m.role == "assistant" and m.text][:3]
            best = (DISCOVERY_FLOOR, cause) if cause and not any(_RETRACTED.search(t) for t in later) else None
        if best is not None and best[0] >= DISCOVERY_FLOOR:
            if _NOT_YET.search(best[1]):
                continue  # "two models don't yet have mappings": true until someone acts, then false
            if _REPO_STATE.search(best[1]) and _changed_later(msgs, n, best[1]):
                continue  # "… has never been committed", then committed: that moment's state, now false
            if _undone_later(msgs, n, best[1]) or _NO_PR_YET.search(best[1]) and _opened_later(msgs, n) \
                    or _denied_later(msgs, n, best[1]) or _said_of_later(said_later, n, best[1]) \
                    or _lead_speaks_of(msgs, n, best[1]) or _taken_down_later(said_later, n, best[1]) \
                    or stale.of(n, best[1]) or refusals.overtaken(n, best[1], msg.text) or undone.of(n, best[1]):
                continue  # "`x.sh` has zero CI references", then the session wired it in
            if _value_replaced_later(msgs, n, best[1]):
                # what a label reads, then changed by the session (held-out review 130: "`FileRow` components
                # use \"Browse\" …", then the edit that put `actionLabel="Display all"` in its place)
                continue
            if _FIX_CLAIM.search(best[1]) and any(
                    m.role == "user" and not m.meta and _REJECTED.search(m.text) for m in msgs[n + 1:]):
                continue
            at = next((k for k in range(n + 1, len(msgs)) if msgs[k].role == "user" and not msgs[k].meta
                       and not msgs[k].tool_use_id and msgs[k].text.strip()), len(msgs))
            reply = msgs[at].text if at < len(msgs) else ""
            if _DISPUTED.search(reply[:600]) or _corrected(best[1], reply) or _conceded(best[1], reply, msgs[at + 1:]) \
                    or _said_no_to(best[1], msg.text, reply):
                continue  # the person doubted it or set it right at once: not a finding
            if _taken_back(msgs, n) or _owned_too_hasty(msgs, prompts, n, best[1]):
                continue  # the agent took it back ("this is the real state, and it's actually wired correctly")
            if _overturned_later(overturned, n, best[1]):
                continue
            found.append((best[0], n, best[1], msg.text))
    found = _without_set_right(found, msgs)
    found.sort(key=lambda f: -f[0])
    kept: list[tuple[float, int, str, str]] = []
    for candidate in found:
        words = set(re.findall(r"\w{3,}", candidate[2].lower()))
        if not any(len(words & set(re.findall(r"\w{3,}", k[2].lower()))) > 0.5 * len(words) for k in kept):
            kept.append(candidate)
    return kept


_REPORTED = re.compile(r"<status>completed</status>.*?<result>(.*?)(?:</result>|\Z)", re.DOTALL)


def _with_reports(msgs: list[Any]) -> list[Any]:
    """The messages, with the report a sub-agent sent to work in the background hands back when it
    finishes read as the agent's own words (held-out reviews 42, 44, 45, 49, 50: "ncu was unavailable
    (`ERR_NVGPUCTRPERM` — perf counters blocked in this container; `nsys` not installed)" was in no
    item). What a workflow hands back as data (JSON) and what an explorer found are not."""
    asked = {u.id: u for m in msgs if m.role == "assistant" for u in m.tool_uses}
    out = []
    for m in msgs:
        told = _REPORTED.search(m.text[:20000]) if m.role == "user" and m.meta and "<task-notification>" in m.text[:300] else None
        said = html.unescape(told.group(1)).strip() if told else ""
        if not said or said[:1] in "[{":
            out.append(m)
            continue
        called = _NOTICED_TOOL.search(m.text[:600])
        use = asked.get(called.group(1)) if called else None
        # one launched before the transcript's window (or its compaction) is known by its notice
        agent = "<summary>Agent " in m.text[:1200] if use is None else delegates_work(use.name, use.input)
        out.append(replace(m, role="assistant", text=said, meta=False, tool_uses=[], uuid=REPORT_MARK + m.uuid)
                   if agent else m)
    return out


REPORT_MARK = "report:"  # the uuid's prefix of a sub-agent's report read as the agent's words
_FROM_HERE = r"(?:\.{1,2}/|~/)?"  # `./scripts/build.sh`, `~/.config/tool.toml`
_FILE_NAMED = re.compile(rf"(?<![\w./~@-]){_FROM_HERE}(?:[\w@.-]*/)*(?:[\w-]+\.)+[A-Za-z]\w{{0,5}}\b|"
                         rf"(?<![\w./~@-]){_FROM_HERE}(?:[\w@.-]*/)*(?:Makefile|GNUmakefile|Dockerfile|Containerfile|"
                         rf"Justfile|Rakefile|Gemfile|Procfile|Vagrantfile|Jenkinsfile|Brewfile|Caddyfile|Taskfile)\b|"
                         rf"(?<![\w./~@-]){_FROM_HERE}(?:[\w@.-]+/)*\.[\w-]+(?:/[\w.-]+)*")
_SELF_FIX = re.compile(r"(?i)\b(?:fixed|guarded|patched|changed|updated|rewrote|committed|added|removed|replaced|wrapped|"
                       r"renamed|moved|edited|made|wrote)\b")
_FIXER = re.compile(r"(?i)(?:(?:I|we)(?:'ve|\s+have)?(?:\s+(?:also|just|then|already|now))?\s+|(?:and|then|so)\s+)?$")


def _fixed_itself(report: str) -> bool:
    """Whether a report says its writer changed things: a verb of change whose clause has no subject
    ("…; guarded it and added a test") or its writer's ("I made it return `None`"), not another's ("the id
    format changed in v2": the review of 1e53e97, L1)."""
    for verb in _SELF_FIX.finditer(report):
        if re.match(r"(?i)\s+(?:no|nothing|none)\b", report[verb.end():verb.end() + 12]):
            continue  # "I made no changes"
        clause = re.split(r"[.;:!?\n—–]\s*|,\s+(?=(?:and|then|so)\b)", report[max(0, verb.start() - 80):verb.start()])[-1]
        if _FIXER.fullmatch(clause.strip() + (" " if clause.strip() else "")):
            return True
    return False


WHOLE_TREE = "."
_STASH_BACK = re.compile(r"\bgit\s+(?:-C\s+\S+\s+)?stash\s+(?:pop|apply)\b")


def restored_paths(step: Command) -> list[str]:
    """The files and directories a `git checkout … -- <paths>` or `git restore <paths>` puts back as they
    were; `.` for the whole tree (`git checkout .`, `git restore :/`, `git stash`, `git reset --hard`)."""
    if step.exe != "git" or step.sub not in ("checkout", "restore", "stash", "reset"):
        return []
    words = step.main.split()
    after = words[words.index(step.sub) + 1:] if step.sub in words else []
    if step.sub == "stash":
        if after and after[0] not in ("push", "save", "-u", "--include-untracked"):
            return []
        # `git stash push -m "msg" <paths>` puts back those paths only
        paths = [w for k, w in enumerate(after[1:], 1) if not w.startswith("-") and after[k - 1] not in ("-m", "--message")]
        return paths if after and after[0] == "push" and paths else [WHOLE_TREE]
    if step.sub == "reset":
        return [WHOLE_TREE] if "--hard" in after else []
    if "--" in words:
        paths = words[words.index("--") + 1:]
    elif step.sub == "restore" and not ("--staged" in words or "-S" in words) or "--worktree" in words or "-W" in words:
        paths = [w for w in after if not w.startswith("-")]
    elif step.sub == "checkout" and after in ([WHOLE_TREE], [":/"]):
        paths = after
    else:
        return []
    return [WHOLE_TREE if p.rstrip("/") in ("", ".", ":/", ":") else p.rstrip("/") for p in paths]


def _changed_by(use: Any) -> list[tuple[str, bool]]:
    """The files a call changes, each with whether the call only staged it for a commit: an edit's, a
    command's writes and what it stages."""
    if use.name in EDIT_TOOLS | WRITE_TOOLS:
        return [(str(use.input.get("file_path") or use.input.get("notebook_path") or ""), False)]
    line = use.input.get("command") if use.name in COMMAND_TOOLS else None
    if not isinstance(line, str) or not line.strip():
        return []
    cmd = parse_command(line[:4000])
    return [*((f, False) for f in cmd.writes),
            *((f, False) for step in _chain(cmd) for f in restored_paths(step)),
            *((f, True) for step in _chain(cmd) if step.exe == "git" and step.sub == "add" for f in step.targets)]


class _StaleReports:
    """A sub-agent's report on a file the session edited after handing it the work (or, when the
    hand-over is not in the transcript, before the report came) speaks of the file as it was (held-out
    review 91: "`d020s2-*` ids are quoted … and therefore unresolvable by `.coordination/tools/rule.py`",
    after the lead had taught rule.py quoted ids)."""

    def __init__(self, before: list[Any], msgs: list[Any]) -> None:
        self.msgs = msgs
        self.since = {k: -1 for k, m in enumerate(msgs) if m.uuid.startswith(REPORT_MARK)}
        self._edits: list[tuple[int, str, bool]] | None = None
        if self.since:
            notice = {m.uuid: t.group(1) for m in before if m.role == "user" and m.meta
                      for t in [_NOTICED_TOOL.search(m.text[:600])] if t}
            called = {u.id: k for k, m in enumerate(msgs) if m.role == "assistant" for u in m.tool_uses}
            self.since = {k: called.get(notice.get(msgs[k].uuid[len(REPORT_MARK):], ""), -1) for k in self.since}

    def edits(self) -> list[tuple[int, str, bool]]:
        if self._edits is None:  # read only when a report has a finding
            last = max(self.since)
            edits: list[tuple[int, str, bool]] = []
            pending: list[str] = []  # what the session changed since its last commit
            lines = [(k, str(u.input.get("command") or "")) for k, m in enumerate(self.msgs) if m.role == "assistant"
                     for u in m.tool_uses if u.name in COMMAND_TOOLS]
            for k, m in enumerate(self.msgs[:last]):
                for u in m.tool_uses if m.role == "assistant" else ():
                    line = str(u.input.get("command") or "") if u.name in COMMAND_TOOLS else ""
                    for path, staged in _changed_by(u):
                        if path == WHOLE_TREE:
                            # the whole tree put back: what the session changed since its last commit goes back
                            # with it, unless a stash is popped again (the review of 6bdf030, M6)
                            if "stash" in line and any(_STASH_BACK.search(later) for j, later in lines if j >= k):
                                continue
                            edits += [(k, p, False) for p in _uniq(pending)]
                        elif path:
                            edits.append((k, path, staged))
                            pending.append(path)
                    if re.search(r"\bgit\s+(?:-C\s+\S+\s+)?commit\b", line):
                        pending = []
            self._edits = edits
        return self._edits

    def of(self, n: int, claim: str) -> bool:
        """Whether the finding at n is a report's, on a file its main clause names and the session changed
        since (a path matched by its end, `src/api/__init__.py` not `src/cli/__init__.py`; a file only staged counts unless the report
        says it changed things itself: the lead committing the sub-agent's fix)."""
        if n not in self.since:
            return False
        # the files of its main clause: not "…; `utils.py` calls it for every upload", but past a label
        # ("Root cause — the ids are … unresolvable by `rule.py`")
        clauses = re.split(r";\s|\s[—–]\s", claim, maxsplit=2)
        found = _FILE_NAMED.findall(clauses[0]) or (_FILE_NAMED.findall(clauses[1])
                                                     if len(clauses) > 1 and len(clauses[0].split()) <= 4 else [])
        names = [re.sub(r"^(?:\.{1,2}/|~/)+", "", name) for name in found]
        own = _fixed_itself(self.msgs[n].text)
        changed = [(k, path, staged) for k, path, staged in self.edits() if self.since[n] < k < n and not (staged and own)]
        # a bare name stands for a file only when the session changed one of that name
        return any(posixpath.basename(path) == name
                   and len({p for _, p, _ in changed if posixpath.basename(p) == name}) == 1
                   if "/" not in name else path.endswith("/" + name) or path == name or name.startswith(path + "/")
                   for _, path, _ in changed for name in names)


_REFUSAL_TALK = re.compile(r"(?i)\b(?:approv\w*|permission\w*|denie[sd]|deny|blocked|blocks|refuse[sd]|classifier|"
                           r"allow(?:ed|s)? rule|allowlist|not allowed)\b")
REFUSAL_WINDOW = 30  # messages a finding may come after the refusal it speaks of
_SELF_REFUSED = re.compile(r"(?i)\b(?:den(?:ies|ied|y)|refuse[sd]?|block(?:s|ed)?|won['’]t let)\b[^.;\n]{0,60}?\b(?:me|my)\b|"
                           r"\bI(?:['’]m| am)?\b[^.;\n]{0,30}?\b(?:can['’]t|cannot|am not allowed|was(?:n['’]t| not) allowed|"
                           r"was denied|was refused|was blocked|got denied|got blocked)\b")


class _Refusals:
    """Commands the agent's permission check refused, each with the message its refusal came in and
    that of the next run of the same command, if one ran (held-out review 102: "the runtime's permission
    classifier denies `git push` from me (tried twice) … Only you can break the tie — approve the push",
    and four minutes later the same push went through)."""

    def __init__(self, msgs: list[Any]) -> None:
        results = {m.tool_use_id: (k, m) for k, m in enumerate(msgs) if m.role == "tool_result"}
        runs: list[tuple[int, Command, bool, bool]] = []  # (message of its result, command, refused, ran)
        for msg in msgs:
            for use in msg.tool_uses if msg.role == "assistant" else ():
                line = use.input.get("command") if use.name in COMMAND_TOOLS else None
                got = results.get(use.id)
                if isinstance(line, str) and got is not None:
                    k, result = got
                    text = result.text[:400]
                    refused = bool(result.is_error and _AWAITS_APPROVAL.search(text))
                    runs.append((k, parse_command(line[:4000]), refused, not refused and not NEVER_RAN.search(text)))
        runs.sort(key=lambda run: run[0])
        # a later run that failed still ran: the check let it through
        self.spans = [(k, next((j for j, other, _, ran in runs if j > k and ran and equivalent(other, cmd)), None), cmd)
                      for k, cmd, refused, _ in runs if refused and cmd.exe]

    def overtaken(self, n: int, sentence: str, message: str) -> bool:
        """Whether the finding at n, in a message that says the agent itself was refused, speaks of a refusal
        shortly before it, of a command that ran after it (not a cause found: "branch protection blocks
        `git push --tags` because it requires approvals", the review of ebcbfbc, M1)."""
        if not self.spans or _ROOT_CAUSE.search(sentence) or not _SELF_REFUSED.search(message):
            return False
        for k, ran, cmd in self.spans:
            if n - REFUSAL_WINDOW <= k < n and ran is not None and ran > n and _REFUSAL_TALK.search(sentence) \
                    and any(re.search(rf"(?i)\b{re.escape(word)}\b", sentence) for word in (cmd.sub, cmd.exe) if len(word) >= 3):
                return True
        return False


def _lead_speaks_of(msgs: list[Any], n: int, sentence: str) -> bool:
    """Whether the lead agent, in its next words after a sub-agent's report, names what the report's
    finding names: it told it in its own words, or set it right (held-out review 67: the worker's
    "concurrency cap `min(16, nproc-2)` kept scoped", then the lead's "I can: it's verbatim in the
    Workflow tool's own description … Trimming the formula")."""
    names = {lit.replace("−", "-") for lit in re.findall(r"`([^`\n]{3,80})`", sentence)}
    if not names or not msgs[n].uuid.startswith(REPORT_MARK):
        return False
    after = [m.text.replace("−", "-") for m in msgs[n + 1:n + 12]
             if m.role == "assistant" and m.text and not m.uuid.startswith(REPORT_MARK)][:3]
    return any(f"`{name}`" in text for name in names for text in after)


_CONTRASTS = re.compile(r"(?i)\binstead of\b|\brather than\b|\bactually\b|\bin fact\b|\bare the ones?\b|\bis the one\b")
LATER_WORD_WINDOW = 20  # later findings a finding is weighed against


# a message that ends asking the person which of its points to take up (held-out review 72: "The agenda
# on record: 1. **Contradiction ledger** — run it over the 24 mining YAMLs … Where do you want to start —
# or reshape the agenda first?", and the person wanted no menu)
_CHOOSE_ASK = re.compile(r"(?i)\b(?:where|which|what) (?:\w+ )?(?:do|would|shall|should) (?:you|we) (?:like to |want to )?"
                         r"(?:start|begin|pick|choose|prefer|go|tackle|take)\b[^?]*\?\W*$")


_CALLED_WRONG = re.compile(r"(?i)[\"“']([^\"”'\n]{6,80})[\"”']\W{0,4}(?:was|is) (?:wrong|off|incorrect|mistaken|false)\b")


def _called_wrong(msgs: list[Any]) -> list[tuple[int, str]]:
    """Where the agent says a quoted phrase was wrong, and the phrase, lower-cased."""
    return [(k, hit.group(1).lower()) for k, m in enumerate(msgs) if m.role == "assistant" and m.text
            for hit in _CALLED_WRONG.finditer(_unbold(m.text)[:20_000])]


def _options_offered(text: str) -> set[str]:
    """The first sentences of the numbered points of a message that ends asking the person which to
    take (its options), as `ranked_findings` reads sentences; empty for any other message."""
    if not _CHOOSE_ASK.search(text[-300:]):
        return set()
    items = [m.group(1) for line in text.splitlines() for m in [re.match(r"\s*(?:\d+[.)]|[-*•])\s+(\S.*)", line)] if m]
    return {" ".join(_unbold(first).split()) for item in items for first in _sentences(item)[:1]}


def _asks_in(sentence: str) -> bool:
    """A question inside the sentence, its guess or its answer after it ("**Which roofline number is
    the objective?** Your own HANDOFF flags the trap: …", held-out reviews 36 and 38): no finding."""
    plain = re.sub(r"`[^`]*`|\S+\?\S+", "", sentence)  # not `/api/items?page=2`, `user?.name`
    return bool(re.search(r"\?(?=[\s*)\]\"'”]|$)", plain))


def _code_terms(sentence: str) -> set[str]:
    return {c.strip("`").lower() for c in _CODE.findall(sentence)}


def _without_set_right(found: list[tuple[float, int, str, str]], msgs: list[Any]) -> list[tuple[float, int, str, str]]:
    """The findings but those a later one on the same code sets right, said after the agent looked
    again: it says more, and contrasts ("instead of", "actually") where this one did not. The later
    word stands. Each is weighed against the next LATER_WORD_WINDOW findings only."""
    found = sorted(found, key=lambda f: f[1])
    looked = [0]  # tool results up to each message
    for m in msgs:
        looked.append(looked[-1] + (m.role == "tool_result"))
    said = [(_code_terms(f[2]), set(re.findall(r"\w{3,}", f[2].lower())), bool(_CONTRASTS.search(f[2]))) for f in found]
    kept = []
    for i, finding in enumerate(found):
        terms, words, contrasts = said[i]
        set_right = not contrasts and any(
            said[j][2] and len(terms & said[j][0]) >= 2 and len(said[j][1] - words) >= 0.4 * len(said[j][1])
            and looked[found[j][1]] > looked[finding[1] + 1]
            for j in range(i + 1, min(len(found), i + 1 + LATER_WORD_WINDOW)) if found[j][1] > finding[1])
        if not set_right:
            kept.append(finding)
    return kept


_THIS_MOMENT = re.compile(r"(?i)\b(?:first|now|right away|before (?:you|we) (?:can|start|deploy|push|run))\b")  # held-out review 29
# held-out review 31 (vertumnus): "I saved that to project memory so a future `typescript` bump doesn't
# silently break `check`." titled a finding; "That's why the CI failure earlier surfaced as …" another
_BOOKKEEPING = re.compile(r"(?i)^\W*I(?:['’]ve| have)? (?:also |just )?(?:saved|noted|recorded|written|wrote|added|stored|put)"
                          r"(?: (?:that|this|it|these|them))?(?: down)? (?:to|in|into) (?:the |my |our |your )?(?:project )?"
                          r"(?:memory|memories|MEMORY\.md|CLAUDE\.md|AGENTS\.md)\b")
_ANAPHORIC = re.compile(r"(?i)^\W*(?:that['’]s|this is|which is|that is|which means|that means|that explains|"
                        r"this explains) (?:why|how|because)\b")
_CONCEDES = re.compile(rf"(?i)^\W*{_AGREES}\b")
_ASKS_MORE = re.compile(r"(?i)\b(?:can|could|would|will) you\b|\bplease\b|^\W*(?:also|now|next|and)\b")
_CONFIRMS = re.compile(r"(?i)^\W*(?:yes|yeah|yep|yup|right|correct|exactly|agreed|true|indeed|ok(?:ay)?|sure)\b")


def _conceded(claim: str, reply: str, after: list[Any]) -> bool:
    """Whether the agent's next words grant that the person's short reply, which pushed back, set
    the claim right on a point the claim quotes (held-out review 25, skill-picker: "… `entire trail
    list` returns `API error: no read access to repo (status 403)`", then "it's my fork like my
    origin", then "You're right, you do have access")."""
    answer = next((m.text for m in after if m.role == "assistant" and m.text.strip()), "")
    if not reply.strip() or len(reply) > 300 or _CONFIRMS.match(reply) or _ASKS_MORE.search(reply) \
            or not _CONCEDES.match(answer):
        return False
    first = next(iter(_sentences(answer)), "")
    quoted = " ".join(_LITERAL.findall(claim)).lower()
    return bool({w for w in re.findall(r"[a-z]{5,}", first.lower())} & set(re.findall(r"[a-z]{5,}", quoted)))


_FLAT_NO = re.compile(r"(?i)^\W*(?:no|nope|nah)\b(?![-'’])")


def _said_no_to(claim: str, said: str, reply: str) -> bool:
    """Whether the person's next words open with a flat "No" about what the claim speaks of, to a
    message that asked them nothing (held-out review 79: "… DP+ZeRO weak-scales near-linearly just by
    raising the batch — no TP needed.", then "No I mean I am saying 4D+zero3, with a maxed out batch size.")."""
    if not _FLAT_NO.match(reply) or len(reply) > 600 or "?" in said.rstrip()[-200:]:
        return False
    words = {w for w in re.findall(r"[a-z]{5,}", claim.lower())}
    return bool(words & set(re.findall(r"[a-z]{5,}", reply.lower())))


def _corrected(claim: str, reply: str) -> bool:
    """Whether the person's reply sets the claim right: a few words with a rule word in them that
    name one of the claim's literals."""
    if not reply.strip() or len(reply) > 400 or not _CORRECTION.search(reply):
        return False
    said = set(re.findall(r"[\w.@/-]+", reply.lower()))
    return any(lit.lower() in said for lit in _LITERAL.findall(claim))


# The person asks what the agent meant or how something works: the reply teaches what it already
# knew (held-out review 4, DefaultWatch: "What do you mean by …" → "`default payment next month`
# has spaces, so you can't write `df.default payment next month`.").
_ASKS_TO_EXPLAIN = re.compile(
    r"(?i)\bwhat (?:do|did) you mean\b|\bi (?:still )?do(?:n'?t|n’t| not) (?:really )?(?:understand|get) "
    r"(?:what you|your (?:answer|explanation|point))|\b(?:you(?:'re| are)|that'?s|it'?s) not making sense\b|"
    r"\bexplain (?:what you (?:said|meant)|your (?:answer|explanation))\b")


# What a repository holds or lacks at one moment (held-out review 5: "There's no shared
# `.entire/settings.json`, and `.entire/` … have never been committed." two minutes before the
# commit that added them; "this restored `model-mapping.json` exists only locally — it won't be
# committed" a minute before it was moved and committed).
_REPO_STATE = re.compile(
    r"(?i)\b(?:never been (?:committed|tracked|pushed)|(?:is|are)n['’]t (?:tracked|committed|pushed)|"
    r"(?:is|are) not (?:yet )?(?:tracked|committed|pushed)|untracked|exists? only (?:locally|on disk)|"
    r"only (?:lives|exists) (?:locally|on disk)|won['’]t be (?:committed|tracked)|there['’]?s no (?:shared )?`|"
    r"there is no (?:shared )?`|nothing is committed|(?:does|do)n['’]t exist yet|not created yet)")
_NOT_YET = re.compile(r"(?i)(?:\b(?:not|no|nothing|none|never)\b|n't\b)[^.;:]{0,40}\byet\b"
                      r"(?!\s+(?:when|before|while|at the time|by the time|on the first|the first time)\b)|"
                      r"\byet to be\b")
_CREATED = re.compile(r"(?i)\bcreate mode \d+ |^\s*A\s{1,2}\S|\bConfigured\b|\bCreated\b|\bWrote\b", re.MULTILINE)


# What a sentence says is missing or unused at that moment (held-out review 15, flutter-docker-image:
# "`renovate_validate.sh` has zero CI references", "bookworm has a `.sources` file, trixie doesn't",
# both made false by the same session's next turn)
_ABSENT = re.compile(
    r"(?i)\b(?:orphan(?:ed)?|unreferenced|zero (?:\w+ )?(?:references|coverage|callers|uses)|"
    r"no (?:\w+ )?(?:references?|callers?|workflows?|tasks?|coverage|documentation|docs|readme|usage|tests)\b|"
    r"undocumented|untested|nothing (?:calls|uses|references|runs)|"
    r"never (?:called|used|referenced)|(?:is|are)(?:n['’]t| not) (?:wired|referenced|called|used)|"
    r"doesn['’]t(?=\W*(?:$|[.;,—–]))|does not exist|doesn['’]t exist|is missing)")


# a later word that one thing the claim names has not, holds not or passes not the other
_DENIES = re.compile(r"(?i)\b(?:has|have|had|holds?|contains?) no\b|\b(?:does|do|did)(?:n['’]t| not) (?:have|hold|contain|include|"
                     r"set|pass|use|pull|read|add|call)\b|\b(?:is|are)(?:n['’]t| not) (?:in|from|set by|passed by|part of)\b")


def _denied_later(msgs: list[Any], n: int, sentence: str) -> bool:
    """Whether the agent said later, right between two things the claim ties together, that the one
    has not the other (held-out review 47: "setup.py's distutils linker pulls `-flto` from Python's
    `LDSHARED`", then "`LDSHARED` has no `-flto`, so the LTO is triggered by the objects themselves")."""
    quoted = _uniq([q.lower() for q in _LITERAL.findall(sentence)])[:6]
    claim = _unbold(sentence).lower()
    if _DENIES.search(claim):
        return False  # "… `load_session_messages` doesn't include it": a later "doesn't include" agrees
    pairs = []
    for a in quoted:
        for b in quoted:
            at, to = claim.find(f"`{a}`"), claim.find(f"`{b}`")
            if a != b and at >= 0 and to >= 0 and not _DENIES.search(claim[min(at, to):max(at, to)]) \
                    and not _NEGATION.search(claim[min(at, to):max(at, to)]):
                pairs.append((f"`{a}`", f"`{b}`"))
    if not pairs:
        return False
    # what it found on looking again, before it changed anything: after an edit, "`Pool.release` doesn't
    # call `conn.close()` any more" tells the fix (the review of session 27)
    named = {x.strip("`") for pair in pairs for x in pair}
    for m in msgs[n + 1:n + 1 + DENIAL_WINDOW]:
        if m.role == "assistant" and any(u.name in EDIT_TOOLS | WRITE_TOOLS and any(
                x in json.dumps(u.input)[:20000].lower() for x in named) for u in m.tool_uses):
            break  # an edit of what the claim names: what it says next may be its fix (a debug print is not)
        if m.role != "assistant" or not m.text:
            continue
        said = _unbold(m.text[:20000]).lower()
        for a, b in pairs:
            at = said.find(a)
            while at >= 0:
                gap = said[at + len(a):at + len(a) + 40]
                if b in gap and _DENIES.search(gap[:gap.find(b)]) and not _NOW_FIXED.search(gap[gap.find(b):]) \
                        and not _FIXED_BEFORE.search(said[max(0, at - 40):at]):
                    return True
                at = said.find(a, at + 1)
    return False


DENIAL_WINDOW = 80  # later messages a claim is weighed against
_FIXED = r"fixed|done|removed|no longer|after the (?:fix|change)"
_NOW_FIXED = re.compile(rf"(?i)\b(?:now|any ?more|{_FIXED})\b")  # what it says after the second name
_FIXED_BEFORE = re.compile(rf"(?i)\b(?:{_FIXED})\b")  # and before the first: not a bare "now" ("Looking at it again now, …")


def _undone_later(msgs: list[Any], n: int, sentence: str) -> bool:
    """Whether a sentence that says something is missing or unused names a file or name that the
    session's own later edits then add to (an edit whose new text holds it, a file of it written),
    or finds fault with a name the session then renamed: a state the work itself ended."""
    if _renamed_later(msgs, n, sentence) or _branch_deleted_later(msgs, n, sentence):
        return True
    if not _ABSENT.search(sentence):
        return False
    names = {lit.split(":")[0].rstrip("/").rsplit("/", 1)[-1] for lit in _LITERAL.findall(sentence)}
    names = {x for x in names if len(x) >= 4}
    for msg in msgs[n + 1:] if names else ():
        for use in msg.tool_uses if msg.role == "assistant" else ():
            if use.name in EDIT_TOOLS:
                written = [str(use.input.get("file_path") or ""), *(new for _, new in edit_texts(use.input))]
            elif isinstance(use.input.get("command"), str):
                written = list(parse_command(use.input["command"]).writes)
            else:
                continue
            if any(x in text for x in names for text in written):
                return True
    return False


def _branch_deleted_later(msgs: list[Any], n: int, sentence: str) -> bool:
    """Whether the sentence names a git branch that the session threw away after message n: force
    deleted (`git branch -D`), or deleted on the remote (`git push … --delete`, `git push origin
    :name`) without having merged it. What it says of that branch, or how to move it, is about a
    ref that is gone (held-out review 22, JusPrin 8672a8e2: "the command to force push
    claude/…-before-stupid-fixes to …" and what that comparison showed, then both copies deleted).
    A branch is named in full, or by the quoted tail of its name ("`before-stupid-fixes`")."""
    if "-" not in sentence and "/" not in sentence:
        return False  # a branch worth the rule has a name of parts ("feature/x", "fix-login")
    results = {m.tool_use_id: m.text for m in msgs[n + 1:] if m.role == "tool_result"}
    quoted = set(_LITERAL.findall(sentence))
    merged = {m.group(1) for msg in msgs if msg.role == "assistant" for use in msg.tool_uses
              if isinstance(line := use.input.get("command"), str) and "merge" in line
              for m in _MERGED.finditer(line) if m.group(1)}
    for msg in msgs[n + 1:]:
        for use in msg.tool_uses if msg.role == "assistant" else ():
            line = use.input.get("command") if use.name in COMMAND_TOOLS else None
            if not isinstance(line, str) or not _DELETES_BRANCH.search(line) or \
                    NEVER_RAN.search(results.get(use.id, "")[:400]):
                continue
            for name in _deleted_branches(line, merged):
                parts = name.rsplit("/", 1)[-1].split("-")
                if ("-" in name or "/" in name) and re.search(rf"(?<![\w/.-]){re.escape(name)}(?![\w/-])", sentence) \
                        or any(len(parts) - k >= 3 and "-".join(parts[k:]) in quoted for k in range(1, len(parts))):
                    return True
    return False


_DELETES_BRANCH = re.compile(r"\bgit\b[^\n]*?\s(?:branch\s[^\n]*?(?:-D|--delete\s+--force|-d\s+-f|-df|-fd)\b|"
                             r"push\s[^\n]*?(?:--delete\b|\s-d\b|\s:[\w./-]))")
_MERGED = re.compile(r"\bgit\s+merge\s+(?:-\S+\s+)*([\w./-]+)")


def _deleted_branches(line: str, merged: set[str]) -> list[str]:
    """The branches a command line force-deletes or deletes on a remote, less those merged."""
    names: list[str] = []
    for step in _chain(parse_command(line)):
        words = step.main.split()
        at = next((k for k, w in enumerate(words) if w == "git"), None)
        if step.exe != "git" or at is None or len(words) < at + 2:
            continue
        sub, rest = words[at + 1], words[at + 2:]
        flags = {w for w in rest if w.startswith("-")}
        plain = [w.strip("'\"") for w in rest if not w.startswith("-")]
        if sub == "branch" and ("-D" in flags or {"-d", "-f"} <= flags or flags & {"-df", "-fd"} or
                                {"--delete", "--force"} <= flags):
            names += plain
        elif sub == "push" and (flags & {"--delete", "-d"}):
            names += plain[1:]
        elif sub == "push":
            names += [w[1:] for w in plain[1:] if w.startswith(":") and len(w) > 1]
    return [name for name in names if name not in merged and len(name) >= 4]


_IDENTIFIER = re.compile(r"[A-Za-z_]\w{3,}")
# A complaint about a name, which a rename settles; a root cause in a function the fix renamed
# stays a lesson (spotter ae4a77f8: `get_current_trace_id` always returns `:error`, then renamed).
_NAMING = re.compile(r"(?i)\b(?:misnamed|misleading|confusing name|(?:better|clearer) name|would be clearer|"
                     r"rename)\b")
_SED_RENAME = re.compile(r"\bs([/|#,])(?:\\b|\\<)?([A-Za-z_]\w{3,})(?:\\b|\\>)?\1([A-Za-z_]\w*)\1")


def _renamed_later(msgs: list[Any], n: int, sentence: str) -> bool:
    """Whether the sentence finds fault with a name it quotes that a later edit renamed: the edit's
    new text is its old text with that name, and only it, replaced (held-out review 17, daqifi:
    "`firstLog` flag in streaming.c:419 — … the name is slightly misleading", then `firstLog` →
    `streamingLoggedOnce`)."""
    names = {lit for lit in _LITERAL.findall(sentence) if _IDENTIFIER.fullmatch(lit)}
    for msg in msgs[n + 1:] if names and _NAMING.search(sentence) else ():
        for use in msg.tool_uses if msg.role == "assistant" else ():
            line = use.input.get("command")
            if use.name in EDIT_TOOLS:
                pairs = edit_texts(use.input)
            elif isinstance(line, str) and parse_command(line).writes:
                pairs = [(old, new) for _, old, new in _SED_RENAME.findall(line)]
            else:
                continue
            for old, new in pairs:
                for name in names:
                    word = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
                    if not word.search(old) or word.search(new):
                        continue
                    # what stands where the name stood in the old text, if only the name changed
                    at = word.search(old)
                    other = re.match(r"\w+", new[at.start():]) if at and old[:at.start()] == new[:at.start()] else None
                    if _IDENTIFIER.fullmatch(new) or other and word.sub(other.group(0), old) == new:
                        return True
    return False


# what a blocker says (held-out review 61: "This repo was cloned on a feature branch with no
# `origin/main`, so the git-worktree mechanism parallel-write agents need won't spin up"), and what the
# agent says once it is gone ("`origin/main` now resolves → worktrees are unblocked")
_BLOCKS = re.compile(r"(?i)\b(?:no|not|won['’]t|can['’]t|cannot|doesn['’]t|isn['’]t|fails?|broken|blocked|missing|"
                     r"unresolvable|unavailable)\b")
_NOW_WORKS = re.compile(r"(?i)^[^.;\n]{0,40}?\b(?:now (?:resolves|exists|works|points|is (?:there|set|present|available|"
                        r"reachable|created|fixed|resolvable))|(?:is|are) (?:now )?(?:unblocked|resolvable)|unblocked)\b")


# what the agent says of a name a claimed cause blamed, once it has looked (held-out review 62: "Found
# it: … pass `q_W` … into `project()`/`compress_csa()`, which compute in fp32", then "`project`
# correctly dispatches on dtype")
_CLEARED = re.compile(r"(?i)^\W{0,4}(?:\s*(?:also|itself|too|as well|here)\W{0,2})?\s*(?:correctly (?:dispatches|handles|converts|casts|"
                      r"checks|returns|passes|sets|uses)|(?:is|was|are|were) (?:fine|correct))\b")
# and what clears it whatever the session did in between
_RULED_OUT = re.compile(r"(?i)^\W{0,4}(?:\s*(?:also|itself|too|as well|here)\W{0,2})?\s*(?:(?:is|was|are|were) (?:innocent|ruled out|"
                        r"not (?:the )?(?:cause|culprit|problem|issue|bug))|(?:is|was)n['’]t (?:the )?(?:cause|culprit|problem|issue|bug)|"
                        # held-out review 69: "`fa0bc72` now reads more charitably than the analysts framed it: … fixing
                        # the target was mechanical, not sinister"
                        r"(?:now )?(?:reads|looks) (?:more )?(?:charitably|benign|harmless|innocent)|(?:is|was) (?:benign|harmless))\b")


class _Said:
    """The agent's messages as one text, so a name is looked for in many of them at once."""

    def __init__(self, said: list[tuple[int, str]], edits: list[int]) -> None:
        self.edits = edits  # the positions of its messages that edit files
        self.positions = [k for k, _ in said]
        self.starts = []
        parts = []
        at = 0
        for _, text in said:
            self.starts.append(at)
            parts.append(text)
            at += len(text) + 1
        self.text = "\n".join(parts)
        self.starts.append(len(self.text) + 1)
        # where a name is said to be correct (1), ruled out (2) or now working (4): read once for all findings
        self.marks: dict[str, list[tuple[int, int]]] = {}
        for named in re.finditer(r"`([^`\n]{3,80})`", self.text):
            after = self.text[named.end():named.end() + 160]
            bits = (1 if _CLEARED.search(after) else 0) | (2 if _RULED_OUT.search(after) else 0) \
                | (4 if _NOW_WORKS.search(after) else 0)
            if bits:
                self.marks.setdefault(named.group(1).removesuffix("()"), []).append((named.start(), bits))

    def position_at(self, offset: int) -> int:
        return self.positions[bisect_right(self.starts, offset) - 1]

    def edited_between(self, n: int, k: int) -> bool:
        at = bisect_right(self.edits, n)
        return at < len(self.edits) and self.edits[at] < k

    def span_after(self, n: int, count: int) -> tuple[int, int]:
        first = bisect_right(self.positions, n)
        return self.starts[first], self.starts[min(first + count, len(self.positions))]


# what the session set going, told as it is now (held-out review 76: "Watchdog upgraded — the 75-minute self
# check-in now also batch-commits …", then "swarm stopped, watchdog paused")
_SET_GOING = re.compile(r"(?i)^\W*((?:the |a |our |my )?[\w-]+(?: [\w-]+)?) (?:(?:is|was|has been) )?(?:upgraded|armed|re-armed|"
                        r"enabled|installed|configured|set up|started|launched|scheduled|running)\b")


def _taken_down_later(said: _Said, n: int, sentence: str) -> bool:
    """Whether what a sentence says the session set going, the agent later says it paused, stopped,
    disabled or removed: how it stood that minute, no longer true."""
    going = _SET_GOING.match(sentence)
    if not going:
        return False
    name = re.sub(r"(?i)^(?:the|a|our|my) ", "", going.group(1)).lower()
    lo, hi = said.span_after(n, 400)
    down = re.compile(rf"(?i)\b{re.escape(name)}s? (?:(?:is|was|were|are|has been|now) )?(?:paused|disabled|stopped|removed|"
                      r"killed|reverted|torn down|cancell?ed|switched off|turned off)\b")
    return down.search(said.text, lo, hi) is not None


def _said_of_later(said: _Said, n: int, sentence: str) -> bool:
    """Whether the agent, in one of its next 400 messages, says a name the sentence blames is correct
    after all, or, of a blocker, that the thing it names now works."""
    names = {lit.removesuffix("()") for lit in re.findall(r"`([^`\n]{3,80})`", sentence)}
    if not names:
        return False
    blocker = bool(_BLOCKS.search(sentence))
    lo, hi = said.span_after(n, 400)
    for name in names:
        marks = said.marks.get(name, [])
        for at, bits in marks[bisect_right(marks, (lo, -1)):]:
            if at >= hi:
                break
            if bits & 2 or bits & 4 and blocker:
                return True
            # code it says is correct after it edited is its fix working, not the guess ruled out (the
            # review of session 28: "`load_user` now works correctly" after the fix)
            if bits & 1 and not said.edited_between(n, said.position_at(at)):
                return True
    return False


_NOW_HOLDS = re.compile(r"(?i)\bnow (?:contains|holds|has|carries|includes)\b")
_OWN_DOING = re.compile(r"(?i)\W{0,4}(?:(?:resolved|fixed|solved|handled|silenced|worked around)\b[^:;.]{0,60}:|"
                        r"I(?:['’]ve| have)? (?:added|created|put|wrote|dropped|placed)\b)")
_DELETES = frozenset({"rm", "unlink", "trash", "del", "rmdir", "Remove-Item"})


class _Undone:
    """The files the session wrote (a command's writes, an edit or a write) and those it deleted, by
    message, read once when a finding needs them."""

    def __init__(self, msgs: list[Any]) -> None:
        self.msgs = msgs
        self._calls: list[tuple[int, set[str], set[str]]] | None = None

    def calls(self) -> list[tuple[int, set[str], set[str]]]:
        if self._calls is None:
            self._calls = []
            results = {m.tool_use_id: m for m in self.msgs if m.role == "tool_result"}
            for k, msg in enumerate(self.msgs):
                for use in msg.tool_uses if msg.role == "assistant" else ():
                    result = results.get(use.id)
                    if result is not None and not result.is_error:
                        self._calls.append(self._call(k, use))
        return self._calls

    @staticmethod
    def _call(k: int, use: Any) -> tuple[int, set[str], set[str]]:
        line = use.input.get("command") if use.name in COMMAND_TOOLS else None
        wrote = {posixpath.basename(p) for p, staged in _changed_by(use) if not staged}
        gone: set[str] = set()
        if isinstance(line, str):
            for step in _chain(parse_command(line[:4000])):
                words = step.main.split()
                if step.exe in _DELETES or step.exe == "git" and step.sub == "rm" and "--cached" not in words:
                    gone |= {posixpath.basename(w.strip("'\"").rstrip("/")) for w in words[1:] if not w.startswith("-")}
        return k, wrote, gone

    def of(self, n: int, sentence: str) -> bool:
        """Whether a sentence that tells what a place now holds, of the agent's own doing (it says so, or the
        session wrote the file before), names a file the session deleted after it: its own change, undone
        (held-out review 102: "Resolved the hook loop …: `.coordination/` now contains a `.gitignore` with
        `*`", then `rm .coordination/.gitignore`); not a cause found ("`dist/` now contains a stale
        `index.js` …, so …", then its fix, `rm dist/index.js`: the review of ebcbfbc, M3)."""
        if not _NOW_HOLDS.search(sentence) or _ROOT_CAUSE.search(sentence) or _GIVES_CAUSE.search(sentence):
            return False
        names = {posixpath.basename(lit.rstrip("/")) for lit in _LITERAL.findall(sentence)}
        names = {x for x in names if len(x) >= 4 and ("." in x or "/" in x)}
        if not names:
            return False
        calls = self.calls()
        return (bool(_OWN_DOING.match(sentence)) or any(k < n and wrote & names for k, wrote, _ in calls)) \
            and any(k > n and gone & names for k, _, gone in calls)


def _changed_later(msgs: list[Any], n: int, sentence: str) -> bool:
    """Whether the session, after message n, wrote, added or committed a file the sentence names."""
    near = " ".join(sentence[max(0, m.start() - 80):m.end() + 40] for m in _REPO_STATE.finditer(sentence))
    names = {w.rstrip("/").rsplit("/", 1)[-1].lower() for w in re.findall(r"`([^`\s]+)`", near)
             if re.search(r"\w\.\w|/", w)}
    names.discard("")
    if not names:
        return False
    for msg in msgs[n + 1:]:
        if (msg.role == "user" and not msg.tool_use_id and any(x in msg.text.lower() for x in names)
                and _CREATED.search(msg.text)):
            return True  # the person's own `!` command reporting it
    for use, result in _answered_after(msgs, n + 1):
        said = json.dumps(use.input).lower()
        if not any(x in said or x in result.text.lower() for x in names):
            continue
        line = use.input.get("command") if use.name in COMMAND_TOOLS else None
        if use.name in EDIT_TOOLS or isinstance(line, str) and (
                re.search(r"\bgit\s+(?:add|commit|mv)\b", line) or parse_command(line).writes) or \
                _CREATED.search(result.text[:4000]) and any(x in result.text.lower() for x in names):
            return True
    return False


def more_findings(ranked: list[tuple[float, int, str, str]]) -> list[str]:
    """Of ranked_findings, those after the few a session keeps as items: its summary lists them,
    but not one whose subject is in the sentence before it ("But they're parameterized by size — …",
    held-out review 41)."""
    return [_short(f[2], 220) for f in ranked[MAX_DISCOVERIES:MAX_DISCOVERIES + MORE_FINDINGS]
            if not _LEANS_BACK.match(f[2])]


# "they're …", "it's parameterized …", not "It's the go-git loose object accumulation → auto-GC → … chain"
# (entire-cli 03a1382e), which names what it is
_LEANS_BACK = re.compile(r"(?i)^\W*(?:(?:but|and|so|yet)\s+)?(?:(?:they|these|those)\b|(?:it|this|that)(?:['’]s|\s+(?:is|was))\s+"
                         r"(?!(?:the|a|an|because|why|what|how)\b))")


def discoveries(transcript: Iterable[Any], session_id: str,
                ranked: list[tuple[float, int, str, str]] | None = None,
                rel: Callable[[str], str] = lambda path: path) -> list[Draft]:
    """What the agent found out about the code: the few sentences of its prose that read most like a
    finding (they name code, state how it behaves, often against expectation), said right after a
    failure or right before the edit it motivated; one per message, at most MAX_DISCOVERIES per
    session, each kept with the message it was said in and the files that edit changed
    (`ranked`: ranked_findings, if known)."""
    transcript = list(transcript)
    kept = (ranked_findings(transcript) if ranked is None else ranked)[:MAX_DISCOVERIES]
    msgs = [m for m in transcript if not m.sidechain and not m.compact]
    # the error as the agent quoted it when it began to look ("The error is clear: `ld: library
    # 'fuse-t' not found`"), told with the first finding it led to: the words a later search for
    # that error uses (held-out review 10, cipher-box c318c9e9)
    asks = [n for n, m in enumerate(msgs) if m.role == "user" and not m.meta and not m.tool_use_id and m.text.strip()]
    quoted = [(n, q.group(1)) for n, m in enumerate(msgs) if m.role == "assistant" and m.text
              for q in [_QUOTES_ERROR.search(_unbold(m.text))] if q]
    # or as the person pasted it under the ask ("when trying to run `bun release:manual` i am getting
    # this error:" and, below, "… Error: Found changeset … which is not in the workspace", held-out
    # review 13); their own line is the ask, not the error
    quoted += [(n, _gist(lines[0], 160)) for n in asks
               for lines in [failure_lines(msgs[n].text.partition("\n")[2], passed=False)] if lines]
    quoted.sort()
    # what later messages say did not help, by position: read once for all findings
    called_wrong = _called_wrong(msgs)
    no_help = [(k, lit) for k, m in enumerate(msgs) if m.role == "assistant" and m.text
               for lit in _did_not_help(m.text)]
    drafts = []
    for _, n, sentence, text in sorted(kept, key=lambda k: k[1]):
        # The rest of the message, a sentence a line: what the prompt hook picks from.
        whole = [" ".join(_unbold(s).split()) for s in _sentences(_short_code_inline(text))]
        rest = [s for s in whole if s != sentence and len(s) > 3]
        said = sentence  # its key: the item stays the one it was
        # "This is actually expected behavior for auto-commit strategy!" names nothing: the
        # sentence after it says what (entire-cli f6833005).
        following = whole[whole.index(sentence) + 1:] if sentence in whole else []
        if following and _IF_TRUE.match(following[0]) or _asks_in(sentence) \
                or any(_YET_TO_CHECK.search(s[:400]) and not _checks_its_fix(s) for s in following[:3]):
            # "The package claims …. If true, …", "So why does `pip install` fail …? The `.` must be
            # resolving to …" (held-out review 36): a claim it had yet to check, a question and its guess
            continue
        if _POINTS_BACK.match(sentence) and "`" not in sentence and following and "`" in following[0] \
                and following[0] in rest and not _INTENT.search(following[0]) \
                and not _LETS.match(following[0]):
            rest.remove(following[0])
            sentence = f"{sentence} {following[0]}"
        # what the agent does next or how it feels is no part of what it found ("Let me confirm…",
        # "The mechanism is now crystal clear."): it took the room of lines that say something
        rest = [s for s in rest if not _FILLER.search(s) and not _ETA.search(s) and not _ON_THEIR_GO.search(s)]
        # nor how far the work has come this minute (held-out review 86: "Overall: 21+/24, with day-009/010/011
        # and 020-s5 still mining.", when day-009's harvest was already committed)
        # (a line that names code or gives a cause says more: "Redis is running, but its `maxmemory-policy` …")
        rest = [s for s in rest if "`" in s or _GIVES_CAUSE.search(s) or not (_MOMENT.search(s) or _STILL_GOING.search(s))]
        # nor what it will do next, which the person may yet redirect (held-out review 96: "when the revision lands
        # I'll make one final pass on the WHY section myself, centering falsifiability in close-to-your words", and
        # the person asked for the agent's own words)
        # (a plan that opens a line before a result leaves the result: "I'll fix that next, but the real problem
        # is that `retry()` swallows `CancelledError`")
        rest = [kept for kept in map(_past_plan, rest) if kept]
        # a phrase a later message says was wrong (held-out review 84: "parked three days ago", then
        # "\"three days ago\" was wrong — P1 was parked yesterday")
        wrong = {said for k, said in called_wrong if n < k <= n + 200}
        rest = [s for s in rest if not any(w in s.lower() for w in wrong)]
        # the ways out it then offers are a plan, which the session may yet refute (held-out review
        # 18: "Options to fix…: Enable `--gradient_checkpointing`…", a no-op for that model, it found)
        offer = next((k for k, s in enumerate(rest) if _OFFERS.match(s)), len(rest))
        rest = rest[:offer]
        # a step it meant to take that a later message says did not do it (held-out review 32: "So I'll
        # add `@types/bun`", then "`astro check` can't resolve `bun:test` even with `@types/bun` installed")
        failed = {lit for k, lit in no_help if k > n}
        rest = [s for s in rest if not failed & set(_LITERAL.findall(s))]
        if _opened_later(msgs, n):
            rest = [s for s in rest if not _NO_PR_YET.search(s)]
        # the words that hand over to the next call ("Let me confirm the built SVG actually contains the
        # strawberry data:", held-out review 34) show nothing of what it found
        while rest and rest[-1].endswith(":") and (_LETS.match(rest[-1]) or re.match(r"(?i)(?:now,? )?I(?:'ll| will)\b", rest[-1])):
            rest.pop()
        while len("\n".join(rest)) > 900:
            rest.pop()
        # The file the finding led to edit names the part of the code it is about ("the waiting
        # summary service"), which the sentence itself often does not (spotter 4d5611e5).
        edited = _edited_next(msgs, n, rel)
        if edited and all(_gone_by_end(f, msgs[n + 1:], rel) for f in edited):
            continue  # about a file the session then deleted
        if edited and _went_back_on(msgs, n):
            continue
        if edited:
            rest.append("Then edited: " + ", ".join(edited))
        # of the same ask: a quote before the person's next prompt explains nothing after it
        symptom = next((q for at, q in quoted if at <= n and not any(at < a < n for a in asks)), "")
        if symptom:
            quoted = [(at, q) for at, q in quoted if at > n]
            if symptom not in f"{sentence}\n" + "\n".join(rest):
                rest.insert(0, f"{ERROR_EXPLAINED}`{symptom}`")
        missing = _NOT_INSTALLED.search(sentence)
        # the packages of the clause that says it is missing ("pandas needs `xlrd` for `.xls`")
        clause = re.split(r"[.;:]\s|,\s(?:but|and|so|while)\s|\s[—–]\s", sentence[:missing.start()])[-1] if missing else ""
        package = re.findall(r"`[\w.\-\[\]]+`", clause)
        installed = _installed_later(msgs, n, " ".join(package)) if package else ""
        if installed:
            if missing and missing.end() >= len(sentence.rstrip(" .")):  # only a closing clause goes
                sentence = sentence[:missing.start()].rstrip(" ,;") + "."
            rest.append(f"Then installed: `{installed}`")
        # "On your two deferred items: object-key … sorting … are *not* enabled" (held-out review 31)
        sentence = _ASIDE.sub("", re.sub(r"(?<![\w*`])\*([A-Za-z][A-Za-z' -]{0,40})\*(?![\w*`])", r"\1", sentence))
        # "I see - `entire enable` creates …", "The issue is clear — the LiveView process can't …"
        # (entire-cli f6833005, spotter 8463c716): the lead-in says nothing of what it found
        led = _PREAMBLE.sub("", sentence)
        if led != sentence and len(led) >= 20:
            first = led.split(" ", 1)[0]
            sentence = led[:1].upper() + led[1:] if first.islower() else led  # not "IOS Safari"
        # a bold label the agent put before a sentence of its own names an option or a part of its
        # answer, not what it found ("**Cheap & Biome-native (catches the hooks case):** A component
        # that uses `useState` … must be an island", held-out review 34); before "Uses `#session-id`
        # for TOC mode" it is the subject
        label, _, said_after = sentence.partition(": ")
        if said_after and len(label) <= 60 and "`" not in label and _HAS_SUBJECT.match(said_after) \
                and re.search(rf"\*\*{re.escape(label)}:?\*\*:?\s", text):
            rest.insert(0, sentence)  # kept whole, below the title
            sentence = said_after
        drafts.append(Draft(
            kind="fact", title=_short(sentence, 200), body="\n".join(rest) or sentence, files=edited,
            confidence=0.6, importance=0.6, source="rule",
            key=session_key(session_id, "discovery", said.lower()), tags=["discovery"]))
    return drafts


_FILLER = re.compile(r"(?i)^(?:let(?:'s| me| us) (?:verify|confirm|check|double-check|look|see|test|re-?run|think|try)\b"
                     r"(?:\W+\w+){0,5}\W*$|now i (?:see|understand|know)\W*$|(?:the \w+ is )?now (?:crystal |very |"
                     r"perfectly )?clear\W*$|found (?:it|the (?:issue|problem|bug|root cause))\W*$|"
                     r"(?:excellent|perfect|great|good)\W*$|[^`=]*\?$)")

# when it will report next, how long a stage takes: stale within the hour (held-out review 38: "Next
# update:* ~15–30 min, when the prodigy fix lands", "Stage 0 overall:* ~1–2h")
_ETA = re.compile(r"\bETAs?\b|(?i:\bnext update\b|\b(?:overall|total|eta)\W{0,3}\s*~\s?\d|\b(?:in|another|expect)\s+~\s?\d+"
                  r"(?:\s?[–-]\s?\d+)?\s?(?:min(?:ute)?s?|h|hrs?|hours?)\b)")

_STILL_GOING = re.compile(r"(?i)\b\d+\+?(?:\s*/\s*| of )\d+\b[^.;]{0,80}?\b(?:still \w+ing|in flight|in progress|under ?way|"
                          r"to go|remaining|pending|outstanding|busy|left)\b|"
                          r"\bstill (?:mining|running|working|building|going|in flight|pending)\b|"
                          r"\b(?:worker|agent|job|run|build|task)s?\b[^.;]{0,40}\b(?:is|are) still out\b(?! of\b)")
_OWN_PLAN = re.compile(r"(?i)(?:^|[;:] |\s[—–] )\W{0,4}(?:(?:so|and|then|but|next),? )?"
                       r"(?:(?:when|once|after|before|while) (?:(?!\b(?:so|and|but|because)\b)[^,;`]){1,60}?[,;]? )?"
                       r"(?:I(?:['’]ll| will| am going to|['’]m going to)\b(?! (?:note|admit|say|grant|concede|confess|"
                       r"be honest|be frank|point out|mention|add that)\b)|my plan is to\b)")
_AFTER_PLAN = re.compile(r",\s+but\s+|;\s+|\s[—–]\s+")


def _as_process_step(label: str, rest: str) -> str:
    """The step after a label, without the first person that says "for each …" is how it works ("For each
    rule, I pull all sources …", the review of 869d546^..4098c81, L10); not after "Finally, I read …", a
    report of what was done (the review of ebcbfbc, M7)."""
    if re.match(r"(?i)(?:for (?:each|every|all)|per)\b", label) and not re.search(r"\s[—–]\s|:\s", rest):
        return re.sub(r"(?i)^(?:I|we)(?:['’]ll| will)? ", "", rest)
    return rest


def _past_plan(line: str) -> str:
    """A body line without the agent's plan: what comes before it (four words at least), or, when the line
    opens with it, what follows its turn ("…, but the real problem is …"); nothing when that is all it says
    (the review of 1e53e97, L3: "I'll bump `MAX_CONNS` to 64 and rerun the load test after lunch.")."""
    plan = _OWN_PLAN.search(line)
    if plan is None:
        return line
    if plan.start() > 0:
        before = line[:plan.start()].rstrip(" ;:,—–")
        return before if len(before.split()) >= 4 else ""
    turn = _AFTER_PLAN.search(line, plan.end())
    after = line[turn.end():].strip() if turn else ""
    if _OWN_PLAN.match(re.sub(r"(?i)^(?:then|and|so),? ", "", after)):
        return ""  # "…, but I'll first rerun the load test": a plan after the turn too
    return after if len(after.split()) >= 4 else ""


_GIVES_CAUSE = re.compile(r"(?i)\b(?:because|since|due to|caused by|which means)\b|, (?:so|but) ")

ERROR_EXPLAINED = "The error it explains: "
_LINE_LEADS = (ERROR_EXPLAINED, "Then edited:", "Then installed:", "The agent found:")


_WOULD_INCLUDE = re.compile(r"(?i)\b(?:here['’]s|here is) what (?:it|that|the fix|this) would\b|\bwould (?:include|involve|do)\s*:")
# a state of the work a later branch, push or PR undoes (held-out review 27: "there's no PR or branch for
# the jury email fix", "It isn't pushed and there's no PR yet", minutes before PR #116)
_NO_PR_YET = re.compile(r"(?i)\bthere(?:['’]s| is) no (?:open )?(?:PR|pull request|branch)\b|\bno PR yet\b|"
                        r"\b(?:isn['’]t|is not|hasn['’]t been|has not been|not yet) pushed\b")
_OPENS_WORK = re.compile(r"\bgh\s+pr\s+create\b|\bgit\s+(?:switch\s+-c|checkout\s+-b|push)\b")


def _opened_later(msgs: list[Any], n: int) -> bool:
    """Whether the session made a branch, pushed or opened a pull request after message n."""
    return any(isinstance(line := use.input.get("command"), str) and _OPENS_WORK.search(line)
               for msg in msgs[n + 1:] if msg.role == "assistant" for use in msg.tool_uses if use.name in COMMAND_TOOLS)


_OFFERS = re.compile(r"(?i)^\W*(?:(?:here are |the |two |three |a few |some |possible )?(?:options?|approaches|alternatives|"
                     r"fixes|ways to (?:fix|solve|avoid|work around|get))\b[^.:]{0,60}:|"
                     r"(?:i['’]?d|i would) (?:default to|go with|suggest|recommend|pick)\b|(?:want me to|should i|shall i)\b|"
                     # held-out review 84: "So the offer is simply: say **go** and I do one of those as a live … cycle"
                     r"(?:so )?the offer is\b|say \W*go\W* and I\b)")


_NO_HELP = re.compile(r"(?i)\b(?:even with|even after|despite|in spite of)\s+`([^`\n]{3,60})`|"
                      r"`([^`\n]{3,60})`[^.\n]{0,40}\b(?:didn['’]t|did not|doesn['’]t|does not|wasn['’]t|was not)\s+"
                      r"(?:help|fix it|fix this|fix the|resolve|enough)\b")


def _did_not_help(text: str) -> set[str]:
    """The literals an agent message says did not help ("even with `@types/bun` installed")."""
    return {lit for found in _NO_HELP.finditer(text[:20000]) for lit in found.groups() if lit}


def _gone_by_end(path: str, later: list[Any], rel: Callable[[str], str]) -> bool:
    """Whether a file the session edited was deleted later in the session (held-out review 20: the
    spec ambiguity in docs/superpowers, which `rm -rf docs/superpowers` took away)."""
    where = "/" + path.replace("\\", "/").lstrip("/")
    for msg in later:
        for use in msg.tool_uses if msg.role == "assistant" else ():
            line = use.input.get("command") if use.name in COMMAND_TOOLS else None
            if not isinstance(line, str) or not re.search(r"\brm\b", line):
                continue
            removed = [t.strip("/") for step in _chain(parse_command(line, "", rel), rel)
                       if step.exe == "rm" or step.exe == "git" and step.sub == "rm" for t in step.targets]
            if any(t and (where.endswith("/" + t) or f"/{t}/" in where) for t in removed):
                return True
    return False


def following_claim(finding: str, text: str) -> str:
    """The sentence that completes a finding in its message: the one before, when the finding goes
    on from it ("The record has `hex_trace_id` as a binary already. And `current_span_ctx()`
    returns a `span_ctx` record directly."), else the one after; when it says what is, not what
    the agent does next ("Let me rewrite…", "I need to rewrite it …") or how it feels ("You're
    absolutely right!")."""
    said = [" ".join(_unbold(s).split()) for s in _sentences(text)]
    at = said.index(finding) + 1 if finding in said else 0
    if at > 1 and re.match(r"(?i)(?:and|also|plus)\b", finding):
        at -= 2
    sentence = said[at] if at < len(said) else ""
    if (not sentence or sentence == finding or sentence.startswith(_LINE_LEADS) or _LETS.match(sentence)
            or _INTENT.search(sentence) or _ACTION.match(sentence) or sentence.endswith(("!", "?"))
            or re.search(r"(?i)\bI (?:need|have|want) to\b", sentence)):
        return ""
    return sentence


_QUOTES_ERROR = re.compile(r"(?i)\b(?:error|failure)\b[\w' ]{0,30}?:\s*`([^`\n]{6,200})`")


def _short_code_inline(text: str) -> str:
    """A message with its one- or two-line code blocks as inline code lines: "Your entry point
    already works:" means nothing without the `uv run personal-projects` under it (held-out
    review 4, DefaultWatch). Longer blocks (listings, diffs) stay out of a memory's body."""

    def inline(block: re.Match[str]) -> str:
        lines = [ln.strip() for ln in block.group(1).splitlines() if ln.strip()]
        if not lines or len(lines) > 2 or sum(map(len, lines)) > 160 or any("`" in ln for ln in lines):
            return block.group(0)
        return "".join(f"\n`{ln}`\n" for ln in lines)

    return re.sub(r"```[\w+-]*[ \t]*\n(.*?)```", inline, text, flags=re.DOTALL)


def _edited_next(msgs: list[Any], n: int, rel: Callable[[str], str]) -> list[str]:
    """The files of the agent's next edit that took (see _next_edits)."""
    paths = [u.input.get("file_path") or u.input.get("path") for u in _next_edits(msgs, n)[1]]
    return _uniq(rel(p) for p in paths if isinstance(p, str) and p)[:3]


def _next_edits(msgs: list[Any], n: int) -> tuple[int, list[Any]]:
    """The position and the edits that took of the agent's next message that edits, if it only
    reads on the way there (held-out review 9, acmebank: every edit waited on a permission never
    granted, and none took)."""
    results = {m.tool_use_id: m for m in msgs[n:n + 16] if m.role == "tool_result"}
    for at in range(n, min(n + 8, len(msgs))):
        msg = msgs[at]
        if msg.role == "user" and not msg.tool_use_id and not msg.meta:
            break
        if msg.role != "assistant" or not msg.tool_uses:
            continue
        edits = [u for u in msg.tool_uses if u.name in EDIT_TOOLS]
        if edits and not any(u.id in results and not results[u.id].is_error
                             and not results[u.id].text.lstrip().startswith(_REFUSED_CALL) for u in edits):
            continue  # refused ("File has not been read yet"): a retry may follow, else nothing was edited
        took = [u for u in edits if u.id in results and not results[u.id].is_error
                and isinstance(u.input.get("file_path") or u.input.get("path"), str)]
        if took:
            return at, took
        if any(u.name not in _LOOKS for u in msg.tool_uses):
            break
    return n, []


_ALIKE = 0.75  # a line this like another is that line changed, not another one
_STEP_LINES = 40
_LIKE_MAX = 300
_PROBE_LINE = re.compile(r"\b(?:console\.(?:log|debug|error)|print(?:ln|f)?|IO\.inspect|dbg!?|debugger|pp|"
                         r"fmt\.Print\w*|log(?:ger)?\.debug|puts|dump|var_dump|breakpoint)\b\s*[(!\s]")


def _code_line(line: str) -> str:
    return " ".join(line.split())


def _alike(line: str, others: Iterable[str]) -> bool:
    """Whether a line of about the same length is that line changed (cheap bounds first)."""
    if len(line) > _LIKE_MAX:
        return False  # a paragraph, not a line of code: only the same one counts
    for other in others:
        if abs(len(line) - len(other)) > len(line) // 2:
            continue
        match = SequenceMatcher(None, line, other, autojunk=False)
        if match.real_quick_ratio() >= _ALIKE and match.quick_ratio() >= _ALIKE and match.ratio() >= _ALIKE:
            return True
    return False


_BACKS_OUT = re.compile(r"(?i)\b(?:revert\w*|remov\w+|undo\w*|drop\w*|back(?:ing)? out|get rid of|instead|"
                        r"rather than|no longer need\w*|not needed|simplif\w+|roll(?:ing)? back|rip\w* out)\b")


def _edits_said(msgs: list[Any], start: int) -> list[tuple[Any, str, str, str]]:
    """The edits that took from message `start` on, each part with the agent's last words before it."""
    took = {use.id for use, _ in _answered_after(msgs, start)}
    out: list[tuple[Any, str, str, str]] = []
    said = ""
    for msg in msgs[start:]:
        if msg.role != "assistant":
            continue
        said = msg.text or said
        out += [(u, old, new, said) for u in msg.tool_uses if u.name in EDIT_TOOLS and u.id in took
                for old, new in edit_texts(u.input)]
    return out


def _went_back_on(msgs: list[Any], n: int) -> bool:
    """Whether the change a finding led to was taken out again: every line its next edit inserted
    (else, if it only changed lines, every line it changed), a later edit that took, said to back
    it out ("Let me revert the `<base>` tag and instead …"), removed with no line like it in its
    place, there or in any later edit (moved code stands) (claude-code-log
    9e953218: "… Let me add a `<base>` tag" inserted `<base href="/tokenizer/">`, gone two edits
    later for a script, itself gone for rewrites: the finding was a step the session went back
    on). A change of more than a few dozen lines is no step to go back on; the rule leaves it."""
    at, took = _next_edits(msgs, n)
    inserted: dict[str, set[str]] = {}
    changed: dict[str, set[str]] = {}
    for u in took:
        path = str(u.input.get("file_path") or u.input.get("path"))
        for old, new in edit_texts(u.input):
            before = {_code_line(ln) for ln in old.splitlines()}
            fresh = [ln for ln in map(_code_line, new.splitlines())
                     if ln not in before and len(ln) >= 8 and re.search(r"\w{3}", ln)]
            if len(fresh) > _STEP_LINES or len(before) > _STEP_LINES * 10:
                return False
            for ln in fresh:
                (changed if _alike(ln, before) else inserted).setdefault(path, set()).add(ln)
    added = inserted or changed
    if not added or all(_PROBE_LINE.search(ln) for lines in added.values() for ln in lines):
        return False  # instruments put in to look, and taken out once they had shown it
    later = _edits_said(msgs, at + 1)
    written = {ln for _, old, new, _ in later for ln in {_code_line(x) for x in new.splitlines()}
               - {_code_line(x) for x in old.splitlines()}}  # put in again, here or elsewhere
    for u, old, new, said in later:
        path = str(u.input.get("file_path") or u.input.get("path") or "")
        if not added.get(path) or not _BACKS_OUT.search(said):
            continue  # "Let me tighten the guard" refines the change: the finding stands
        before = {_code_line(ln) for ln in old.splitlines()}
        after = {_code_line(ln) for ln in new.splitlines()}
        added[path] -= {ln for ln in added[path] if (ln in before or not old) and ln not in written
                        and not _alike(ln, after)}
    return not any(added.values())


# "pandas needs `xlrd` for `.xls`, which isn't installed." held two commands, until `uv add xlrd`
# (held-out review 4): the need is the finding, the missing package was that moment's state.
_NOT_INSTALLED = re.compile(
    r"(?i),?\s*(?:(?:which|that|but it|and it)\s+)?(?:is|was|are|were)(?:n['’]t|\s+not)\s+(?:yet\s+)?installed"
    r"(?:\s+(?:here|yet|in (?:this|the) (?:env|environment|venv|project)))?(?=[\s.,;:!)]|$)")


def _installed_later(msgs: list[Any], n: int, sentence: str) -> str:
    """The install, later in the session and successful, of a package the sentence names."""
    names = {w.lower() for w in re.findall(r"`([\w.\-\[\]]+)`", sentence)}
    if not names:
        return ""
    for use, result in _answered_after(msgs, n):
        line = use.input.get("command") if use.name in COMMAND_TOOLS else None
        if not isinstance(line, str) or _exit_failure(result.text):
            continue
        first = parse_command(line)
        for cmd in (first, *(parse_command(step) for step in first.others)):
            if cmd.is_install and names & {t.lower().split("==")[0].split("[")[0] for t in cmd.targets}:
                return cmd.main
    return ""


def _answered_after(msgs: list[Any], start: int) -> Iterator[tuple[Any, Any]]:
    """The tool calls from message `start` on, each with its result, those that did not error."""
    results = {m.tool_use_id: m for m in msgs[start:] if m.role == "tool_result"}
    for msg in msgs[start:]:
        for use in msg.tool_uses if msg.role == "assistant" else ():
            result = results.get(use.id)
            if result is not None and not result.is_error:
                yield use, result


_LOOKS = frozenset({"Read", "Grep", "Glob", "LS", "read_file", "grep", "glob"})


# A short message that names a symptom, its cause and the fix it goes on to make, in plain words
# (held-out review 8, flowstate: "Label truncates because the cell adds 4 px of padding; switching
# to the cell size."; "The capsule corners show a square halo (the vibrancy view ignores the layer
# corner radius). Applying a proper mask image.").
_CAUSED_BY = re.compile(r"(?i)\b(?:because|due to|caused by)\b|\((?:the |its |it )?[^()]{3,80}\b(?:ignores?|adds?|"
                        r"omits?|drops?|strips?|overrides?|resets?|clips?|doesn't|does not|isn't|can't|won't)\b[^()]{0,80}\)")
_FIXING = re.compile(r"(?i)(?:^|[;.]\s+|,\s+(?:so\s+)?)(?:(?:switching|applying|changing|replacing|falling back|"
                     r"clipping|wrapping|sizing|pinning|forcing)\b|(?:I'll|I will|let me|let's) (?:switch|apply|change|"
                     r"replace|fall back|clip|wrap|size|pin|force)\b)")


# The agent taking its diagnosis back ("That wasn't it: the padding is zero.").
_RETRACTED = re.compile(r"(?i)\b(?:that|this|it) (?:wasn't|was not|isn't|is not) (?:it|the (?:cause|issue|problem|"
                        r"reason|culprit))\b|\bnot the (?:cause|culprit|reason)\b|\bdidn't (?:help|fix it|work)\b|"
                        r"\bwrong (?:guess|diagnosis)\b")
# What takes back any finding said before (held-out review 11, gtm-sdk: "Excellent — this is the real
# state, and it's actually wired correctly"); not "I was wrong about the line number", "not a false
# alarm", "… correctly now" (the fix working).
_TAKES_BACK = re.compile(r"(?i)\bI was wrong\b(?! about)|(?<!not a )\bfalse alarm\b|\bmy (?:earlier|first|initial) "
                         r"(?:diagnosis|assumption|guess|read(?:ing)?) was (?:wrong|off|mistaken)\b|"
                         r"\b(?:it's|it is|this is|that's|that is) actually (?:wired|set up|configured) correctly\b(?! now)|"
                         # held-out review 26, Orva: "CI has a real failure — `server installer (rocky9)`",
                         # then "That's the documented flake, not a real failure"
                         r"\b(?:it['’]s|it is|this is|that['’]s|that is|that one is|this one is)(?: just)?"
                         r"(?: the| a| an)?(?: (?:documented|known|pre-existing))? (?:flake|flaky (?:test|job|check))\b|"
                         r"\b(?:it['’]s|it is|this is|that['’]s|that is|it|this|that) (?:is )?(?:not|n['’]t|isn['’]t)"
                         r"(?: actually)? a real (?:failure|error|bug|problem|regression)\b")
_THEIR_WORDS = re.compile(r"(?i)\byou (?:said|mentioned|suggested|think|thought|guessed)\b|\bas you\b|\bper your\b")


def _taken_back(msgs: list[Any], n: int) -> bool:
    """Whether the agent takes back what message n said within its next three messages (however
    many calls between), before any edit: "it's actually wired correctly" after a fix is the fix working, not a retraction."""
    said = 0
    for m in msgs[n + 1:n + 30]:  # however many calls it looks with in between
        if m.role != "assistant":
            continue
        if m.text and _TAKES_BACK.search(m.text):
            return True
        if any(u.name in EDIT_TOOLS for u in m.tool_uses):
            return False
        said += bool(m.text)
        if said >= 3:
            return False
    return False


# the agent granting, in its answer to one of the person's next two prompts, that it concluded too soon
# (held-out review 90: "the dry run holds up almost embarrassingly well … P-14's trigger survived compile
# fine", then "This is not good at all to check just the first one and spin a story." and "You're right —
# I generalized from the primary source alone and left thirteen merged sources unread.")
_OWNS_FAULT = re.compile(r"(?i)\bI (?:generali[sz]ed|jumped to|over-?claimed|overstated|over-?reached|stopped at|"
                         r"only (?:read|checked|looked at)|read only)\b|\btoo (?:quick|hasty)\b")
# what the person said of the reading: not a process slip ("you forgot the changelog entry")
_REPROACH = re.compile(r"(?i)\boff[- ]base\b|\bspin(?:ning)? a story\b|\bscant (?:evidence|reading)\b|\bexpect (?:a lot |much )?more\b|"
                       r"\byou (?:just|only) (?:looked|read|checked)\b|\b(?:just|only) the first\b|\btoo (?:quick|hasty)\b|"
                       r"\bsuperficial\b|\bcherry-?pick")
_NAMES_IN = re.compile(r"`([^`\n]{3,80})`|\b((?!(?:UTF|SHA|ISO|MD|RFC)-)[A-Z]{1,5}-\d{1,4})\b")


def _owned_too_hasty(msgs: list[Any], prompts: list[int], n: int, claim: str) -> bool:
    """Whether the agent answers one of the person's next two prompts (at `prompts`, in order) by
    granting it concluded too soon, and in that answer names what the claim names."""
    names = {a or b for a, b in _NAMES_IN.findall(claim)}
    if not names:
        return False
    at = bisect_right(prompts, n)
    for k, end in zip(prompts[at:at + 2], [*prompts[at + 1:at + 3], len(msgs)]):
        answer = list(islice((msgs[j].text for j in range(k + 1, end) if msgs[j].role == "assistant"
                              and msgs[j].text.strip()), 3))
        if answer and _REPROACH.search(msgs[k].text[:2000]) and _CONCEDES.match(answer[0]) \
                and _OWNS_FAULT.search(answer[0][:300]) \
                and any(re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) for text in answer for name in names):
            return True
    return False


# The agent saying a later result overturns what was said before (held-out review 39: "This overturns
# RISK-2's prediction — the TC path's `DecTcSmem` is sized by tile + ring depth, not layer count",
# five minutes after "its per-tile smem holds all layers …, so L=48 won't fit 1 CTA/SM")
_OVERTURNS = re.compile(r"(?i)\b(?:this|that|which|it)(?: result| measurement| number| output)? (?:also |directly |fully )?"
                        r"(?:overturns|overturned|disproves|disproved|refutes|refuted|contradicts|contradicted|debunks)"
                        r"\b(.{0,200})")
_CLAIM_WORDS = frozenset({"prediction", "assumption", "claim", "hypothesi", "hypothese", "diagnosi", "theory", "guess",
                          "conclusion", "expectation", "estimate", "earlier", "reading", "about", "first", "initial"})
_OVERTURN_WORD = re.compile(r"(?i)overturn|disprove|refute|contradict|debunk")
# what it overturns must be a claim said before, not a document found stale ("That contradicts the README …")
_A_CLAIM = re.compile(r"(?i)^\W*(?:(?:the|my|our|its|your|this|that|an?)\s+)?(?:[\w-]+['’]s\s+)?(?:\w+\s+)?"
                      r"(?:predictions?|assumptions?|claims?|hypothes[ie]s|diagnos[ie]s|theory|guess|conclusions?|expectations?|"
                      r"estimates?|earlier|reading|what I)\b")


def _stems4(text: str) -> set[str]:
    """Its words of four letters or more, a plural as its singular."""
    return {w[:-1] if w.endswith("s") and not w.endswith("ss") else w
            for w in re.findall(r"[a-z]{4,}", text.lower()) if w not in _COMMON}


def overturns(msgs: list[Any]) -> list[tuple[int, set[str]]]:
    """Where the agent says a result overturns a claim made before, with the words of what it says."""
    hits = []
    for k, m in enumerate(msgs):
        if m.role == "assistant" and m.text and _OVERTURN_WORD.search(m.text):
            # the words of the claim it names ("RISK-2's prediction", "my earlier guess about the stale
            # cache"), not of the new conclusion that follows it (the review of session 26)
            hits += [(k, _stems4(re.split(r"[:;,.—–]|\s-\s", hit.group(1))[0]) - _CLAIM_WORDS)
                     for hit in _OVERTURNS.finditer(_unbold(m.text)[:20_000]) if _A_CLAIM.match(hit.group(1))][:5]
    return hits[:200]


def _overturned_later(hits: list[tuple[int, set[str]]], n: int, sentence: str) -> bool:
    """Whether a later message of the agent says it overturns what this sentence is about (a word of
    the claim it names is in it)."""
    said = _stems4(sentence)
    return any(k > n and said & stems for k, stems in hits)


def _diagnosis(text: str) -> str:
    """The sentence of a short symptom-cause-fix message that gives the cause, or "": not the
    person's guess repeated, nor one the agent hedges or blames on its own work."""
    said = [" ".join(_unbold(x).split()) for x in _sentences(text)]
    if not 1 <= len(said) <= 3 or len(text) > 400 or not _FIXING.search(" ".join(said)):
        return ""
    return next((x for x in said if _CAUSED_BY.search(x) and len(x) >= 35 and not _HEDGE.search(x)
                 and not _OWN_WORK.search(x) and not _THEIR_WORDS.search(x)
                 and not _INTENT.search(x) and not _LETS.match(x)), "")


# what the agent will do only on the person's say-so: a plan they may change (held-out review 85: "Nothing gets
# applied to skills without your per-item yes.", then "I do not want to be manually approving every change")
_ON_THEIR_GO = re.compile(r"(?i)\bwithout your (?:per-\w+ |explicit |final )?(?:yes|go|go-ahead|approval|sign-?off|ok|okay|say-?so|"
                          r"green[- ]light|review)\b|\b(?:on|after|needs?|awaits?|awaiting) your (?:per-\w+ |explicit |final )?"
                          r"(?:yes|go|go-ahead|say-?so|green[- ]light)\b|\buntil you (?:say|approve|confirm|rule)\b")


def _claim_weight(sentence: str, after_failure: bool, before_edit: bool) -> float | None:
    """How much a sentence reads like a finding about the code; None for what never is one (no
    code named, a question, a hedge, a table row, a symptom without its cause)."""
    if not 35 <= len(sentence) <= 400 or sentence.endswith(("?", ":")) or sentence.count("|") > 1:
        return None
    code = len(_CODE.findall(sentence))
    if not code or _HEDGE.search(sentence) or _HEADING.match(sentence):
        return None
    if _GENERIC_ISSUE.search(sentence) and not _CAUSAL.search(_GENERIC_ISSUE.sub("", sentence)):
        return None
    weight = 0.7 * min(code, 3)
    weight += 2.0 if _DISCOVERY.search(sentence) else 0.0
    weight += 1.0 if _NEGATION.search(sentence) else 0.0
    weight += 0.7 if _BEHAVES.search(sentence) else 0.0
    weight += 1.2 if before_edit else 0.0
    weight += 1.0 if after_failure else 0.0
    if _ACTION.match(sentence) or _INTENT.search(sentence) or _TO_DO.match(sentence):
        weight -= 2.5
    if _PROPOSAL.search(sentence) or _DONE.match(sentence) or _INSTRUCTION.match(sentence):
        weight -= 2.5  # a way it proposes, or an edit it reports: what it did, not what it found
    if _STATUS.match(sentence):
        weight -= 3.0
    if _OWN_WORK.search(sentence) or _LINE_REF.search(sentence) or _TO_BE_DONE.search(sentence):
        return None  # the agent's work in progress, or a spot in today's file: stale by the next edit
    if _ON_THEIR_GO.search(sentence):
        return None  # what it will do on the person's say-so: a plan they may change
    puzzled = _PUZZLED.match(sentence)
    if puzzled and ":" not in sentence[puzzled.end():]:
        return None  # no cause after it ("Something is wrong with the cache key: `make_key()` omits …" has one)
    if _MOMENT.search(sentence) or _I_DID.search(sentence):
        return None  # how things stand this minute, or what the agent did: no finding about the code
    return weight


# Held-out review 18 (perigee): "there's no live training process…" (a run was live by the end) and
# "That's why I sidestepped it and `rsync`'d the repo content…" (the access it worked around was
# set up twenty minutes later).
_MOMENT = re.compile(r"(?i)^\W*(?:big |good |great |real |solid |major |some |more )?progress\b|"
                     # held-out review 63: "Swarm is running: a splitter shards day-020 on session banners, …", and
                     # a container restart stopped it
                     r"^\W*+(?:the |our |my |a )?[\w-]+(?: [\w-]+)? (?:is|are) (?:now |still )?(?:running|live|underway|in flight)"
                     r"(?=\s*(?:[:.,;—–(]|$|\s(?:now|again|in the background)\b))|"
                     # held-out review 51: "Big progress — … now it OOMs only at the very edge …", and the lean
                     # run it then made hit the same out-of-memory error
                     r"\b(?:not currently running|(?:is|are) currently (?:running|idle|busy)|"
                     # what waits on the person (held-out review 70: "The `verified-residue.md` sweep itself still
                     # awaits your go", three minutes before "Run the verified-residue sweep")
                     r"(?:awaits?|awaiting|waits? (?:for|on)|waiting (?:for|on)|pending) (?:your|the user['’]s|an?) "
                     r"(?:explicit )?(?:go|go-ahead|approval|ok|okay|sign-?off|green[- ]light|decision|call|review|"
                     r"ratification|confirmation|answer)|"
                     r"no (?:live|running|active) (?:\w+ )?process(?:es)?|"
                     # how its sub-agents are doing (held-out review 41: "the ViT agent succeeded (cherry-picked),
                     # and the Mamba agent died", which had committed, as its result said seconds later)
                     r"(?:sub-?)?agents? (?:is |are |has |have |was )?(?:still (?:working|running)|died|crashed|hung|"
                     r"succeeded|timed out|stalled)|(?:is|are) still (?:working|running|building)|"
                     # held-out review 43: "The read is actually succeeding well now (… 17/69 digests …)", while
                     # 33 of its agents had failed
                     r"(?:is|are) (?:actually |now |still )?(?:succeeding|progressing|advancing|going (?:well|fine|smoothly))|"
                     r"\d+\s*/\s*\d+ (?:digests|agents|tasks|jobs|cells|shards|files)\b[^.;]{0,20}\b(?:done|complete|completed|"
                     r"finished|so far|advancing|progressing|in flight|running))\b")
# a symptom it has yet to explain (held-out review 58: "Something's off — gpu0's log shows the old
# code format …", then "Let me verify the file actually has the new code")
_PUZZLED = re.compile(r"(?i)\W*(?:something(?:'s|’s| is| seems| looks) (?:off|wrong|weird|odd|fishy|strange|not right)|"
                      r"(?:that's|that’s|this is|that is) (?:odd|weird|strange|puzzling|surprising|unexpected)|"
                      r"(?:hmm+|odd|weird|strange|puzzling)\b)")
# what it did to get on (not how it looked: "I grepped…", "I profiled…" lead to findings)
_I_DID = re.compile(r"\bI (?:just |then |also |instead |simply |already )?(?:sidestepped|side-stepped|worked around|"
                    r"rsync['’]d|rsynced|copied|moved|switched|bypassed|skipped|went with|opted|chose|picked|added|"
                    r"removed|changed|updated|created|wrote|rewrote|replaced|renamed|reverted|deleted|disabled|"
                    r"enabled|pinned|bumped|pushed|committed)\b")


def findings(transcript: Iterable[Any], session_id: str) -> list[Draft]:
    """The bullets under an agent's "Key findings:" (or "Root cause:") heading: what it learnt
    from its research, in its own words."""
    drafts = []
    msgs = [m for m in transcript if not m.sidechain and not m.compact]
    for line, below, _ in _under_headings(msgs, _FINDINGS):
        at = next((k for k, m in enumerate(msgs) if m.role == "assistant" and line in m.text), len(msgs))
        bullets = []
        for following in below[:11]:
            bullet = _BULLET.match(following)
            if bullet:
                bullets.append(" ".join(_unbold(bullet.group(1)).split()))
            elif following.strip() and bullets:
                break
        # "I only updated the Linux script" is the state of the agent's own change, not a finding
        bullets = [b for b in bullets if len(b) >= 20 and not _HEDGE.search(b) and not _NOT_YET.search(b)
                   and not _OWN_WORK.search(b) and not _MY_CHANGE.search(b) and not _undone_later(msgs, at, b)][:6]
        replaced = [b for b in bullets if _code_replaced_later(msgs, at, b)]
        if replaced and _CAUSE_HEADING.search(line):
            continue  # the causes of a bug whose code the session then rewrote: its fix tells them
        bullets = [b for b in bullets if b not in replaced]
        if not bullets:
            continue
        drafts.append(Draft(
            kind="fact", title=_short(bullets[0], 200),
            body="The agent found:\n" + "\n".join(f"- {b}" for b in bullets),
            confidence=0.65, importance=0.6, source="rule",
            key=session_key(session_id, "findings", bullets[0].lower()), tags=["finding"]))
    return drafts[-MAX_FINDINGS:]


_QUOTED = re.compile(r"`([^`\n]{6,200})`")
_FILE_NAME = re.compile(r"[\w./-]+\.[A-Za-z]\w*")


_CAUSE_HEADING = re.compile(r"(?i)\b(?:root cause|causes?|what(?:'s| is) wrong|what goes wrong|bugs?|problems?)\b")


def _code_replaced_later(msgs: list[Any], n: int, sentence: str) -> bool:
    """Whether a line of code the sentence quotes was taken out by an edit after message n (held-out
    review 25, skill-picker: "`text.split("---", 2)` at line 61 splits on any `---`", then the edit
    that put `FRONTMATTER.match(text)` in its place). A file name is no line of code."""
    quoted = [lit for lit in _QUOTED.findall(sentence)
              if re.search(r"[(\"'=\[]", lit) and not _FILE_NAME.fullmatch(lit)]
    for msg in msgs[n + 1:] if quoted else ():
        for use in msg.tool_uses if msg.role == "assistant" else ():
            if use.name in EDIT_TOOLS and any(code in old and code not in new for old, new in edit_texts(use.input)
                                              for code in quoted):
                return True
    return False


# a value a sentence says something shows or reads: `FileRow` components use "Browse"
_LABEL_VALUE = re.compile(r'(?i)\b(?:uses?|reads?|says?|shows?|displays?|label(?:l)?ed|titled|named|called)\s+'
                          r'(?:the\s+)?(?:(?:label|text|title|word|caption)\s+)?(?:"([^"\n]{2,80})"(?![\w"])|'
                          r"'([^'\n]{2,80})'(?![\w']))")


def _value_replaced_later(msgs: list[Any], n: int, sentence: str) -> bool:
    """Whether a value the sentence says a label shows was put out of the code by a later edit: an edit's old
    text holds it quoted, and neither that edit's new text nor any later edit holds it in any quotes (the review of
    6bdf030, H2: a value moved into a constant, or re-quoted by a formatter, is still there)."""
    values = [a or b for a, b in _LABEL_VALUE.findall(_QUOTED.sub("", sentence))]
    later = [(old, new) for msg in msgs[n + 1:] if msg.role == "assistant" for use in msg.tool_uses
             if use.name in EDIT_TOOLS for old, new in edit_texts(use.input)] if values else []
    for value in values:
        quoted = [f"{q}{value}{q}" for q in "\"'`"]
        if any(any(v in old for v in quoted) for old, _ in later) and \
                not any(value in new for _, new in later):
            return True
    return False


def _under_headings(transcript: Iterable[Any], heading: re.Pattern[str],
                    plans: bool = False) -> Iterator[tuple[str, list[str], bool]]:
    """Each heading line of the agent's messages that `heading` finds, with the lines below it;
    with `plans`, of the plans the person approved too."""
    texts: list[tuple[str, bool]] = []
    approved: dict[str, str] = {}
    for msg in transcript:
        if msg.sidechain:
            continue
        if msg.role == "assistant" and msg.text:
            texts.append((msg.text, False))
        for use in msg.tool_uses if plans and msg.role == "assistant" else ():
            if use.name == "ExitPlanMode" and isinstance(use.input.get("plan"), str):
                approved[use.id] = use.input["plan"]
        if msg.role == "tool_result" and msg.tool_use_id in approved and not msg.is_error \
                and _APPROVED.match(msg.text):
            texts.append((approved.pop(msg.tool_use_id), True))
    for text, planned in texts:
        lines = text.splitlines()
        for n, line in enumerate(lines):
            # a heading ends its line: its last 300 characters hold it, and a megabyte of "! ! !"
            # no longer costs the heading patterns quadratic time
            if heading.search(_unbold(line[-300:])):
                yield line, lines[n + 1:], planned


_APPROVED = re.compile(r"\s*User has approved (?:your plan|exiting plan mode)")
_APPROACH = re.compile(r"(?i)^\W*(?:the )?(?:proposed |chosen |new )?(?:approach|solution|design|fix|idea)\b[^:\n]{0,30}:\s*(.{20,})")


def _approved(msgs: list[Any]) -> list[tuple[int, str]]:
    """Each plan the person approved (ExitPlanMode, then "User has approved your plan"), with the position of
    the approval."""
    offered = {u.id: u.input["plan"] for m in msgs if m.role == "assistant" and not m.sidechain for u in m.tool_uses
               if u.name == "ExitPlanMode" and isinstance(u.input.get("plan"), str)}
    return [(n, offered.pop(m.tool_use_id)) for n, m in enumerate(msgs) if m.role == "tool_result"
            and m.tool_use_id in offered and not m.is_error and _APPROVED.match(m.text)]


def approved_plans(transcript: Iterable[Any]) -> list[str]:
    """What each plan the person approved sets out to do, as one line: its title, and its approach ("The
    proposed approach: a single dialog with a segmented toggle …") or else its first paragraph of prose
    (held-out review 104, iptvnator: the approved plan was the session's decision, kept nowhere)."""
    return _uniq(line for _, approved in _approved(list(transcript)) if (line := plan_line(approved)))


def plan_line(plan: str) -> str:
    """What a plan sets out to do, as one line of at most 400 characters: its title, and its approach or
    else its first paragraph of prose (its context, which says why)."""
    blocks = [_unbold(b.strip()).splitlines() for b in re.split(r"\n\s*\n", _FENCE_BLOCK.sub("", plan)) if b.strip()]
    title = blocks[0][0].lstrip("# ").strip() if blocks and blocks[0][0].startswith("#") else ""
    # a heading on the line above its text ("## Context\nWhen users click …") heads a paragraph; a numbered
    # step is no prose of its own (held-out review 121)
    paragraphs = [" ".join(" ".join(lines[1:] if lines[0].startswith("#") else lines).split()) for lines in blocks]
    prose = [p for p in paragraphs if not p.startswith(("#", "|", "-", "*", ">")) and len(p) >= 40]
    prose = [p for p in prose if not re.match(r"\d+[.)]\s", p)] or prose
    approach = next((m.group(1) for p in prose for m in [_APPROACH.match(p)] if m), prose[0] if prose else "")
    line = f"{title.split(' #')[0]}: {approach}" if title and approach else title or approach
    return redact(_short(line, 400)) if line else ""


_CHECKS_HEADING = re.compile(r"(?im)^#{1,6}\s*(?:verification|verify|testing|test plan|how to (?:test|verify)|validation)\b[^\n]*$")
IMPLEMENT_PLAN = "Implement the following plan:"
_BY_HAND = re.compile(r"(?i)^(?:manual(?:ly)?|visual(?:ly)?|by hand)\b|\b(?:in the browser|in a browser|by hand|manually|"
                      r"visual check|network tab|devtools|click|on screen)\b")
# the programs a plan's check runs (not code it quotes: "`await refundOrder`", "`status = refunded`")
_CHECK_PROGRAMS = frozenset({
    "npm", "pnpm", "yarn", "bun", "bunx", "npx", "node", "deno", "nx", "turbo", "python", "python3", "pytest", "uv",
    "poetry", "pip", "tox", "nox", "ruff", "mypy", "pyright", "make", "just", "task", "cargo", "go", "mix", "rake",
    "bundle", "rails", "gradle", "gradlew", "mvn", "dotnet", "swift", "xcodebuild", "tsc", "eslint", "jest", "vitest",
    "playwright", "biome", "prettier", "git", "docker", "kubectl", "curl", "mise", "golangci-lint", "flutter", "dart"})


def _read_since(step: str, calls: list[_Call], since: int) -> bool:
    """Whether a check that is a reading ("Manual review: read the updated SKILL.md to confirm …") was made: the
    session read a file it names after its change (held-out review 147)."""
    if not re.search(r"(?i)\b(?:read|re-read|review|proofread|look over|skim)\b", step):
        return False
    names = set(re.findall(r"[\w./-]+\.[A-Za-z]\w*", step))
    edited = {str(c.input.get("file_path") or "") for c in calls if c.tool in EDIT_TOOLS | WRITE_TOOLS}
    read = {str(c.input.get("file_path") or "") for c in calls if c.tool == "Read" and c.pos > since and c.answered}
    # every file it names, by its path, or, named bare, the one of that name the session changed (the review of
    # a28347e, L2)
    return bool(names) and all(any(p.endswith("/" + n) and ("/" in n or p in edited) for p in read) for n in names)


def plan_checks_not_run(transcript: Iterable[Any], rel: Callable[[str], str]) -> list[str]:
    """The checks under the "Verification" heading of the plan the session carried out (one the person
    approved, or handed over as "Implement the following plan:") that it never ran: a command no run of
    the session matches, or a check by hand (held-out reviews 112–114, context-evaluator: `bun run
    typecheck` and the browser checks of the plan, never done, and the agent said "All clean")."""
    msgs = [m for m in transcript if not m.sidechain]
    plans = [(n, m.text[len(IMPLEMENT_PLAN):]) for n, m in enumerate(msgs) if m.role == "user" and not m.meta
             and not m.tool_use_id and m.text.lstrip().startswith(IMPLEMENT_PLAN)]
    # an approved plan counts once the session carried it out (an edit after the approval): approved at
    # the end, it is done in a session of its own (the review of 05b2f49, H1)
    plans += [(n, plan) for n, plan in _approved(msgs)
              if any(u.name in EDIT_TOOLS | WRITE_TOOLS for m in msgs[n + 1:] if m.role == "assistant" for u in m.tool_uses)]
    if not plans:
        return []
    calls, _ = _walk(msgs, rel)
    # the change a check is to follow: an edit, or a command that wrote, installed or staged (the review of
    # 6bdf030, M8: `bun add zod@4`, then `bun run typecheck`, then an edit of the changelog)
    edited = [c.pos for c in calls if c.answered and not _errored(c) and (
        c.tool in EDIT_TOOLS | WRITE_TOOLS or c.command is not None and not c.failed and (
            c.command.writes or c.command.exe == "git" and c.command.sub in ("add", "mv", "rm")
            or c.command.sub in ("add", "install", "i", "remove", "uninstall", "upgrade")))]
    left: list[str] = []
    for at, plan in plans:
        heading = _CHECKS_HEADING.search(plan)
        if heading is None:
            continue
        # a check counts when it ran on the change: after the plan's first edit (`_walk` counts from 1), not
        # as the baseline before it (the review of 05b2f49, L1)
        since = next((p for p in edited if p > at + 1), at + 1)
        ran = [c.command for c in calls if c.command is not None and c.answered and c.pos > since
               and not NEVER_RAN.search(c.result[:400])]
        fenced = False
        for line in plan[heading.end():].splitlines():
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if line.startswith("#") and not fenced:
                break
            # a fenced block under the heading holds commands, a line each (the same review)
            # (a prompt's `$ ` goes; what a tool prints there, "npm warn deprecated …", is no command)
            step = re.sub(r"^\$\s+", "", line.strip()) if fenced else re.sub(r"^\s*(?:[-*•]|\d+[.)])\s+", "", line).strip()
            if fenced and re.match(r"\S+\s+(?:warn|WARN|ERR!|error|notice|info)\b", step):
                continue
            if not step or not fenced and step == line.strip() and not re.match(r"\s*(?:[-*•]|\d+[.)])", line):
                continue
            # a command is a program and its arguments (`bun run test`), not an id or a path (`dd283666-…`)
            written = [step.split(" #")[0]] if fenced and not step.startswith("#") else \
                re.findall(r"`((?:\./)?[a-z][\w.-]*(?: [^`\n]{1,120})?)`", step)
            commands = [parse_command(c) for c in written if c.split()[0].removeprefix("./") in _CHECK_PROGRAMS]
            commands = [c for c in commands if c.exe]
            if commands:
                # (run through a wrapper too: `rtk test bun run test`, held-out review 126)
                missing = [c for c in commands if not any(r.exe == c.exe and equivalent(r, c)
                                                          or f" {' '.join(c.raw.split())}" in f" {' '.join(r.raw.split())}"
                                                          for r in ran)]
                left += [f"`{c.display}`" for c in missing]
            elif _BY_HAND.search(step) and not _read_since(step, calls, since):
                # a check only a person at the screen makes; whether one like "Check the `sign-macos` job
                # succeeds" was done, the session's calls do not tell (held-out review 117)
                left.append(_short(step, 140))
    return _uniq(redact(x) for x in left)[:6]


# A report's list of the choices it made and why: "**Concessions (things I did NOT change, with
# reasons):**", "Design decisions:", "Trade-offs:" (ida-hcli cbba33a6: six, each "X instead of Y —
# why"). These are the "why A over B" a later session asks about; so are the places it left the
# guide it followed ("**Where I departed from the guide:**", held-out review 23, forem bf9fb0a8).
_CHOICE_WORDS = (
    r"(?:concessions?|(?:key |design |technical )?decisions?(?: made)?|trade-?offs?(?: made)?|"
    r"(?:where|how) (?:i|we) (?:departed|deviated|diverged) from|deviations?(?: from)?|departures? from|"
    r"judgment calls?|deliberate (?:choices|omissions)|(?:things |what )?i (?:did not|didn't) change|"
    r"(?:intentionally|deliberately) (?:not changed|left (?:as is|alone)|kept))\b"
    r"(?![^:\n]*\b(?:needed|open|pending|to make|for you|required|to take)\b)[^:\n]{0,60}")
# "Design decisions:", or a markdown heading with no colon ("## Decisions made", in plans)
_CHOICES = re.compile(rf"(?i)^\W*{_CHOICE_WORDS}:\W*$|^\s*#{{1,6}}\s*{_CHOICE_WORDS}$")
_REASONED = re.compile(r"\s[—–-]\s|:\s|\bbecause\b|\bsince\b|\bso that\b")
_CHOSEN = re.compile(r"(?i)\binstead of\b|\brather than\b|\bover\b|\bkeeps?\b|\bkept\b|^\W*no\b|\bnot\b|"
                     r"\bskip|\bwithout\b|\bleft\b|\bintentional|\bdeliberate|\bchose\b|\bprefer")
MAX_CHOICES = 6


def reasoned_choices(transcript: Iterable[Any], session_id: str) -> list[Draft]:
    """Each bullet under a heading of choices in the agent's report, as a decision with its reason;
    a choice the report repeats keeps its first, fuller wording."""
    drafts: list[Draft] = []
    seen: list[set[str]] = []
    for line, below, planned in _under_headings(transcript, _CHOICES, plans=True):
        for following in below[:23]:
            bullet = _BULLET.match(following)
            if not bullet:
                if following.strip():
                    break
                continue
            raw = bullet.group(1)
            lead = re.match(r"\*\*(.+?)\*\*", raw)
            text = " ".join(_unbold(raw).split())
            # the reason follows the lead, or the lead ends in its colon ("**Not `logtail-rails`:** loading…")
            reasoned = _REASONED.search(text[len(lead.group(1)) if lead else 0:]) or lead and lead.group(1).endswith(":")
            if (len(text) < 30 or not reasoned
                    or not _CHOSEN.search(text) or text.rstrip().endswith("?")):
                continue
            words = set(re.findall(r"\w{3,}", (lead.group(1) if lead else text[:80]).lower()))
            if any(len(words & w) * 2 >= min(len(words), len(w)) for w in seen):
                continue
            seen.append(words)
            text = redact(text)
            drafts.append(Draft(
                kind="decision", title=_short(text, 200),
                body=("The plan the person approved" if planned else "The agent's report")
                + f" lists it under \"{line.strip(' *#')}\":\n{text}",
                confidence=0.7 if planned else 0.6, importance=0.6, source="rule",
                key=session_key(session_id, "choice", " ".join(sorted(words))),
                tags=["choice", "approved-plan"] if planned else ["choice"]))
    return drafts[:MAX_CHOICES]


_REPORT = re.compile(r"(?i)\b(?:here'?s (?:a |the )?summary|here'?s what (?:i|we|was) (?:changed|did|built|implemented|fixed|"
                     r"created|added|set up)|summary of|(?:is|are|now) (?:fully )?"
                     r"(?:complete|completed|done|implemented)\b|all done\b|successfully completed|"
                     r"changes made|what (?:was|i) (?:changed|did|built|implemented)|"
                     r"\ball (?:\w+ ){0,4}(?:are|were|have been) (?:now )?(?:addressed|resolved)\b(?! yet))")
_AHEAD = re.compile(r"(?i)^\W*(?:next steps?|remaining|still to do|todo|follow[- ]ups?|what'?s next|"
                    r"test results?|verification)\b")
_NOT_DONE = re.compile(r"(?i)\b(?:needs? to|to be done|missing|gaps?|not (?:yet )?(?:implemented|done|supported)|"
                       r"required|must be (?:configured|set|added|created)|"
                       r"did(?:n't| not) change|not change|concessions?|left (?:as is|alone)|unchanged|skipped|"
                       r"proposed|plan(?:ned)?|there is no)\b")  # ida-hcli e6dd9346: an audit's gaps read as done
_KEY_LINE = re.compile(r"(?i)^\W*(?:key (?:fix|finding|change|decision)s?|root cause|the fix|note|"
                       r"important|gotcha|caveat)\b[^:]{0,30}:\s*(.{20,})")
MAX_REPORT_LINES = 8


_TASK_MADE = re.compile(r"Task #(\w+) created")


def tasks_left(transcript: Iterable[Any]) -> list[str]:
    """What the agent's own task list (TodoWrite's last list, or TaskCreate, TaskUpdate and Claude
    Code's task reminders) still held undone when the session ended, in its words (held-out review 35: nine tasks with their
    order, three under way, the plan the next session picks up)."""
    todos: list[str] = []
    made: dict[str, str] = {}
    done: set[str] = set()
    transcript = list(transcript)
    results = {m.tool_use_id: m for m in transcript if m.role == "tool_result"}
    for msg in transcript:  # a sub-agent's updates too: it works the same list
        for use in msg.tool_uses if msg.role == "system" else ():
            for task in use.input.get("tasks") or []:  # Claude Code's reminder: the whole list as it stands
                if isinstance(task, dict) and isinstance(task.get("subject"), str) and isinstance(task.get("id"), (str, int)) \
                        and str(task["id"]).strip():
                    made[str(task["id"])] = task["subject"]
                    (done.add if task.get("status") in ("completed", "deleted", "cancelled") else done.discard)(str(task["id"]))
        if msg.role != "assistant":
            continue
        for use in msg.tool_uses:
            answer = results.get(use.id)
            if answer is None or answer.is_error:
                continue
            if use.name == "TodoWrite" and isinstance(use.input.get("todos"), list) and not msg.sidechain:
                todos = [str(t.get("content") or "") for t in use.input["todos"] if isinstance(t, dict)
                         and t.get("status") in ("pending", "in_progress") and t.get("content")]
            elif use.name == "TaskCreate" and isinstance(use.input.get("subject"), str):
                created = _TASK_MADE.search(answer.text)
                if created:
                    made[created.group(1)] = use.input["subject"]
            elif use.name == "TaskUpdate":
                number = str(use.input.get("taskId"))  # an int in some versions
                if use.input.get("status") in ("completed", "deleted", "cancelled"):
                    done.add(number)
                if isinstance(use.input.get("subject"), str) and number in made:
                    made[number] = use.input["subject"]  # renamed as the plan changed
    return [*todos, *(f"#{n} {subject}" for n, subject in made.items() if n not in done)]


def edited_files(transcript: Iterable[Any], rel: Callable[[str], str]) -> list[str]:
    """The project's files the main chain's edits changed (an edit that errored changed
    nothing; a path left absolute is outside the project, a plan file or another checkout)."""
    calls, _ = _walk(transcript, rel)
    return _uniq(f for c in calls if c.tool in EDIT_TOOLS and c.answered and not _errored(c)
                 for f in files_of(c, rel) if not f.startswith(("/", "~")))


def put_back_files(transcript: Iterable[Any], rel: Callable[[str], str]) -> set[str]:
    """The files whose every edit a later edit undid word for word (held-out review 62: debug prints
    put into `supergrok2.py` and taken out again): the session changed nothing there."""
    calls, _ = _walk(transcript, rel)
    undone: dict[str, Counter[tuple[str, str]]] = {}
    kept: set[str] = set()
    for c in calls:
        if c.tool not in EDIT_TOOLS or not c.answered or _errored(c):
            continue
        texts = edit_texts(c.input)
        for f in files_of(c, rel):
            if c.tool in WRITE_TOOLS or f in kept or not texts or any(old == new or not old for old, new in texts):
                kept.add(f)  # written whole, or a patch that tells no text replaced
                continue
            open_ops = undone.setdefault(f, Counter())
            for old, new in texts:
                if open_ops[(new, old)]:
                    open_ops[(new, old)] -= 1
                else:
                    open_ops[(old, new)] += 1
    return {f for f, ops in undone.items() if not +ops and f not in kept}


_COMMENT = re.compile(r"^(?:#|//|--|%|;|/\*|\*|<!--)")
_OPENER = re.compile(r"(?:[{\[(]|\bdo|->|=>)$|^(?:return|async|def|function|export)\b")
_ASSIGNS = re.compile(r"\w[\w\"'\]]*\s*(?::|=)\s*\S|^\{:\w+,")


def _setting_line(line: str) -> str:
    return " ".join(line.split()).rstrip(",;")
MAX_CONFIG_FILES = 4


def config_changes(edits: Iterable[tuple[str, str, str]]) -> list[str]:
    """What a session set in the project's configuration and manifests, a line a file: the lines
    its edits (path, old text, new text; in order) added and no later edit took out, without
    comments. Where a setting or a dependency changed is what the next session asks about
    ("where is that configured?"); the file list alone does not say. `.env` files are left out:
    their lines are values, often secret."""
    added: dict[str, list[str]] = {}
    for path, old, new in edits:
        if (path.startswith(("/", "~")) or re.search(r"(?:^|/)\.env(?:\.|$)", path)
                or not (_CONFIG_FILE.search(path) or _MANIFEST.search(path))):
            continue
        before = {_setting_line(ln) for ln in old.splitlines()}
        after = [_setting_line(ln) for ln in new.splitlines()]
        kept = [ln for ln in added.get(path, []) if ln not in before or ln in after]
        kept += [ln for ln in after if ln not in before and ln not in kept and len(ln) >= 4
                 and re.search(r"\w{2}", ln) and not _COMMENT.match(ln) and not _OPENER.search(ln)
                 and (old or _ASSIGNS.search(ln))]  # of a file written whole, its settings only
        added[path] = list(dict.fromkeys(kept))
    return [_short(f"{path}: " + "; ".join(lines), 220) for path, lines in added.items() if lines
            ][:MAX_CONFIG_FILES]


_INSTALLERS = frozenset({"npm", "pnpm", "yarn", "bun", "pip", "pip3", "uv", "poetry", "pipx", "cargo",
                         "go", "gem", "bundle", "composer", "dotnet", "brew", "apt", "apt-get"})


def installs(commands: Iterable[Command]) -> list[str]:
    """The commands that passed and added named packages (`npm install -D happy-dom` in assets/):
    the manifest change a command made, which no edit shows."""
    return _uniq(f"`{_short(c.main, 120)}`" + (f" in {c.dir}/" if c.dir and c.dir != "." else "")
                 for c in commands if c.exe in _INSTALLERS and c.sub in ("install", "get")
                 and c.targets)[:MAX_CONFIG_FILES]


def passed_commands(transcript: Iterable[Any], rel: Callable[[str], str]) -> list[Command]:
    calls, _ = _walk(transcript, rel)
    return [c.command for c in calls if c.command is not None and c.answered and not c.failed
            and not c.errored]


def transcript_edits(transcript: Iterable[Any], rel: Callable[[str], str]) -> list[tuple[str, str, str]]:
    """The main chain's edits that took, as (path, old text, new text), a MultiEdit's one by one."""
    calls, _ = _walk(transcript, rel)
    return [(path, old, new) for c in calls if c.tool in EDIT_TOOLS and c.answered and not _errored(c)
            for path in files_of(c, rel) for old, new in edit_texts(c.input)]


def edit_texts(tool_input: dict[str, Any]) -> list[tuple[str, str]]:
    edits = tool_input.get("edits")
    parts: list[Any] = edits if isinstance(edits, list) else [tool_input]
    return [(str(p.get("old_string") or ""), str(p.get("new_string") or p.get("content") or ""))
            for p in parts if isinstance(p, dict)]


# What the agent wrote down for later: an edit that adds to the project's instructions for agents
# (CLAUDE.md, AGENTS.md, a skill's SKILL.md: held-out review 13's "While chkit is in BETA, always use
# `patch`"), or a note in its own memory (`…/memory/<topic>.md`, held-out reviews 5
# and 6: "App Store Connect refuses `whatsNew` on the first version of a platform" lived only there).
_INSTRUCTIONS = re.compile(r"(?:^|/)(?:CLAUDE|AGENTS|GEMINI)\.md$|(?:^|/)\.cursorrules$|(?:^|/)copilot-instructions\.md$|"
                           r"(?:^|/)\.claude/skills/[^/]+/SKILL\.md$")
_MEMORY_NOTE = re.compile(r"(?:^|/)memory/(?!MEMORY\.md$)[^/]+\.md$")
# `cat > F.md <<EOF`, `cat >> F.md <<'EOF'` (held-out review 12: the AGENTS.md rules of a lint
# setup were appended so), `cat <<EOF >> F.md`, `tee -a F.md <<EOF`
_MD_TARGET = r"['\"]?([^\s'\"<>|&;]+?\.md)['\"]?"
_TEE = r"tee(?:\s+(?:-a|--append))?"
_NOTE_HEREDOC = re.compile(
    rf"(?:(?:cat\s*>>?|{_TEE})\s*{_MD_TARGET}\s*<<-?\s*(['\"]?)(\w+)\2"
    rf"|cat\s*<<-?\s*(['\"]?)(\w+)\4\s*(?:>>?|\|\s*{_TEE})\s*{_MD_TARGET})[^\n]*\n(.*?)\n[ \t]*(?:\3|\5)[ \t]*(?:\n|$)",
    re.DOTALL)
_APPENDS = re.compile(r">>|\btee\s+(?:-a|--append)\b")
# a line of an instructions file that states a rule, the title before a line that only describes
_RULE_LINE = re.compile(r"(?i)\b(?:must|always|never|do not|don['’]t|should|make sure)\b")
_EVERY = re.compile(r"(?i)^(?:for|before|after|on) (?:every|each)\b")  # "For every release, zip …:"
_FRONT_MATTER = re.compile(r"\A---\n(.*?)\n---\n?", re.DOTALL)
MAX_NOTES = 3
NOTE_BODY_MAX = 2400


# A report the agent writes for the person's return, last, after its work (held-out reviews 49, 52 and
# 60: "/workspace/.morning_report.md" with "## HONEST FAILURES / OPEN ITEMS"), and the part of it that
# says what is left
_REPORT_FILE = re.compile(r"(?i)(?:^|/)(?![^/]*(?:release|changelog))[^/]*(?:report|handoff|hand-off|progress|status|resume|"
                          r"next[_-]?steps|todo)[^/]*\.md$")
_LEFT_HEADING = re.compile(r"(?i)^\s*(?:#{1,4}\s+|\*\*)(?=[^\n]*\b(?:open (?:items?|issues|questions|tasks)|known issues|"
                           r"blockers?|failures|remaining(?: work)?|next steps?|next session|to-?dos?|left open|not done|"
                           r"outstanding|follow-?ups?|unresolved)\b)")
_DONE_HEADING = re.compile(r"(?i)\b(?:fixed|resolved|closed|done|addressed|completed)\b")
_HEADING_LINE = re.compile(r"^\s*(?:#{1,6}\s|\*\*[^*\n]+\*\*:?\s*$)")
MAX_REPORT_ITEMS = 5


def report_left_open(transcript: Iterable[Any], rel: Callable[[str], str]) -> tuple[str, list[str]]:
    """The file and the items its "open items / failures / next steps" part lists, of a report the
    agent wrote whole after its last other change; ("", []) if none."""
    calls, _ = _walk(transcript, rel)
    report: tuple[str, str] | None = None
    for call in calls:
        if not call.answered or _errored(call):
            continue
        if call.tool not in EDIT_TOOLS:
            # work went on after it from the shell or a sub-agent: what it lists may be done by now
            if report is not None and (delegates_work(call.tool, call.input) or call.command is not None and (
                    call.command.writes or re.search(r"\bgit\s+commit\b", call.command.raw[:4000]))):
                report = None
            continue
        for path in files_of(call, rel)[:1]:
            content = call.input.get("content")
            if call.tool in WRITE_TOOLS and isinstance(content, str) and _REPORT_FILE.search(path):
                report = (path, content)
            elif report is not None and path == report[0]:
                text = report[1]  # the agent's own later edit of its report (the review of session 28)
                for old, new in edit_texts(call.input):
                    text = text.replace(old, new, 1) if old else text
                report = (path, text)
            else:
                report = None  # work went on after it: what it lists may be done by now
    if report is None:
        return "", []
    items: list[str] = []
    under = False
    for line in report[1].splitlines():
        if _LEFT_HEADING.match(line):
            under = not _DONE_HEADING.search(line)  # "## Test failures fixed" lists none left open
            continue
        if _HEADING_LINE.match(line):
            under = False
            continue
        bullet = _BULLET.match(line) if under else None
        if bullet:
            items.append(_short(" ".join(_unbold(bullet.group(1)).split()), 240))
    return (posixpath.basename(report[0]), items[:MAX_REPORT_ITEMS]) if items else ("", [])


# A ruling the agent writes into the project's own log, under a label that says so (held-out reviews 63, 69,
# 72, 77: "- COMMIT-AFTER-RED RATIONALE (user, 2026-08-12): deliberate, not dogma — …", "ROOT PRINCIPLE (user,
# emphatic): the spec's job is nailing REQUIREMENTS IN A FALSIFIABLE WAY …" in `.coordination/threads.md`)
_LOGGED = re.compile(r"^\s*(?:[-*]\s+)?(?:\*\*)?([A-Z][A-Z0-9 /&'-]{2,60}?\b(?:DECISION|DECIDED|RULE|RULES|RATIONALE|POLICY|"
                     r"PROTOCOL|CONVENTION|PRINCIPLE|RULING)S?\b[A-Z0-9 /&'-]*?)(?:\*\*)?\s*(\([^)\n]{0,160}\))?\s*(?:\*\*)?"
                     r"\s*[:—–]\s*(\S.{19,})$")
_DECIDED_LABEL = re.compile(r"DECISION|DECIDED|RULING|RATIONALE")
MAX_LOGGED = 3


def logged_rulings(transcript: Iterable[Any], rel: Callable[[str], str]) -> list[Draft]:
    """The rulings, rules and principles the agent wrote into a Markdown log of the project under a
    label that names them, in the words it wrote; a label written again later (corrected) is the
    same item, as it stands last."""
    calls, _ = _walk(transcript, rel)
    found: dict[str, tuple[str, str, str, str]] = {}
    for call in calls:
        if call.tool not in EDIT_TOOLS or not call.answered or _errored(call):
            continue
        for path in files_of(call, rel)[:1]:
            if not path.endswith(".md") or _INSTRUCTIONS.search(path) or _MEMORY_NOTE.search(path):
                continue  # told by agent_notes
            for old, new in edit_texts(call.input):
                before = set(old.splitlines())
                for line in new.splitlines()[:2000]:
                    hit = _LOGGED.match(line) if line not in before and len(line) <= 4000 else None
                    if hit:
                        label = " ".join(hit.group(1).split())
                        found.pop(label, None)
                        found[label] = (path, label, hit.group(2) or "", _unbold(hit.group(3)))
    drafts = []
    for path, label, who, said in list(found.values())[-MAX_LOGGED:]:
        first = next(iter(_sentences(said)), said)
        drafts.append(Draft(
            kind="decision" if _DECIDED_LABEL.search(label) else "convention",
            title=_short(redact(f"{label.capitalize()}: {first}"), 200),
            body=redact(f"Written to {path} by the agent: {label} {who}: {_short(said, 1200)}".replace("  ", " ")),
            files=[path] if not path.startswith(("/", "~")) else [], confidence=0.7, importance=0.7, source="rule",
            key=session_key("", "logged", f"{path}\x1f{label.lower()}"), tags=["logged"]))
    return drafts


def agent_notes(transcript: Iterable[Any], rel: Callable[[str], str], session_id: str) -> list[Draft]:
    """What the session added to the agents' instructions or to the agent's own memory notes, as
    the rule or fact it states: its note's `description:`, else its first rule-like line."""
    calls, _ = _walk(transcript, rel)
    added: dict[str, list[str]] = {}
    for call in calls:
        if not call.answered or _errored(call):
            continue
        if call.tool in EDIT_TOOLS:
            for path in files_of(call, rel)[:1]:
                noted = _MEMORY_NOTE.search(path)
                if not (noted or _INSTRUCTIONS.search(path)):
                    continue
                for old, new in edit_texts(call.input):
                    if not old and not noted:
                        continue  # a whole instructions file written anew (`/init`): the codebase's tour
                    before, after = set(old.splitlines()), new.splitlines()
                    kept = [ln for ln in added.get(path, []) if ln not in before or ln in after]
                    added[path] = kept + [ln for ln in after if ln not in before and ln not in kept]
        elif call.command is not None:
            for match in _NOTE_HEREDOC.finditer(call.command.raw[:20_000]):
                target = match.group(1) or match.group(6)
                # `cd …/memory && cat >> plan-artifacts.md <<EOF` (held-out review 20): where the cd went
                where = call.command.dir if call.command.dir not in ("", ".") else ""
                path = rel(posixpath.join(where, target) if where and not target.startswith(("/", "~")) else target)
                if _MEMORY_NOTE.search(path) or _INSTRUCTIONS.search(path):
                    lines = match.group(7).splitlines()
                    if _APPENDS.search(match.group(0).split("\n", 1)[0]):  # after what was there
                        lines = added.get(path, []) + [ln for ln in lines if ln not in added.get(path, [])]
                    added[path] = lines
    drafts = []
    for path, lines in added.items():
        text = "\n".join(lines).strip()
        head = _FRONT_MATTER.match(text)
        meta = head.group(1) if head else ""
        text = text[head.end():] if head else text
        prose: list[str] = []
        fenced = wrapped = False
        note = bool(_MEMORY_NOTE.search(path))
        for line in text.splitlines():
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced and line.strip() and not line.lstrip().startswith(("#", "|", "<!--")):
                said = " ".join(_unbold(line).split())
                # a hard-wrapped paragraph is one line of the note (held-out review 41: "… the strategy
                # decisions must NOT key" went on "on "1 vs N GPUs."" in the next line)
                if wrapped and prose and note and re.match(r"[a-z(\"'“]", said) and not _BULLET.match(line):
                    prose[-1] += " " + said
                else:
                    prose.append(said.lstrip("-*> "))
            wrapped = bool(line.strip()) and not fenced and not line.rstrip().endswith((".", ":", "!", "?", "|")) \
                and not line.lstrip().startswith(("#", "|", "<!--", "```"))
        described = re.search(r"(?m)^description:\s*(.+)$", meta)
        # a rule may lead into the command it prescribes (held-out review 17: "For every prerelease and
        # release, compress the production hex file into a zip …:" above its `zip -j` block)
        stated = [p.rstrip(":") for p in prose if len(p.split()) >= 5
                  and (not p.endswith(":") or _RULE_LINE.search(p) or _EVERY.match(p))]
        first = next((p for p in stated if _RULE_LINE.search(p)),
                     next((p for p in stated if _EVERY.match(p)), next(iter(stated), "")))
        title = described.group(1).strip(" '\"") if described else next(iter(_sentences(first)), first)
        if len(title.split()) < 4:
            continue
        kind = "convention" if _INSTRUCTIONS.search(path) or re.search(r"(?m)^\s*type:\s*(?:feedback|user)\b", meta) \
            else "fact"
        # the agent's own note is the session's most careful words: kept whole up to a summary's length
        # (held-out review 38: a 1,200-character cut took the note's objective and its status)
        tail = f"\nWritten to {path}"
        body = _short_lines("\n".join(prose), NOTE_BODY_MAX - len(tail) - 40) + tail  # room for the redaction marks
        drafts.append(Draft(
            kind=kind, title=_short(redact(title), 200), body=redact(body),
            files=[path] if not path.startswith(("/", "~")) else [], confidence=0.7, importance=0.7,
            source="rule", key=session_key(session_id, "agent-note", path), tags=["agent-note"]))
    return drafts[:MAX_NOTES]


# A warning the agent wrote into the code (held-out review 17, daqifi: "SAFETY: LOG_LEVEL_USB must
# not exceed LOG_LEVEL_ERROR until issue #191 is resolved. The USB event handler runs in ISR
# context …", the root cause the session found, stated nowhere else in its own words).
_COMMENT_LINE = re.compile(r"^\s*(?://+!?|#+(?![!\[])|/\*+|\*+(?!/)|--|;+|<!--)[ \t]?(.*)$")
_COMMENT_END = re.compile(r"\s*(?:\*/|-->)?\s*$")
_GENERATED = re.compile(r"(?i)\bgenerated\b.{0,80}\b(?:do not|don['’]t) edit\b")
_PROSE_FILE = re.compile(r"(?i)\.(?:md|mdx|markdown|rst|adoc)$")
_WARNING_MARK = re.compile(r"^(?:WARNING|SAFETY|IMPORTANT|CAUTION|DANGER)\b\s*(?:\([^)]*\))?\s*[:—-]\s*", re.IGNORECASE)
# or a rule with what breaks if it is not kept, in the same sentence, unmarked (held-out review 23,
# forem bf9fb0a8: "The Better Stack logger must not respond to #tagged, or BroadcastLogger runs
# tagged blocks (e.g. ActiveJob#perform_now) once per logger.")
_RULE_WITH_STAKES = re.compile(
    r"(?i)(?:^|(?<=[.!;]\s))(?:keep\s|[^.!;]*?\b(?:must(?:n['’]t| not| never)?|never|do not|don['’]t|has to|have to)\s)"
    r"[^.!;]{3,200}?(?:,\s*or(?:\s+else)?|\s+or\s+else|[,;.]?\s*otherwise,?)\s+(?!not\b)\w[^.!;]{8,}")
_TEST_PATH = re.compile(r"(?i)(?:^|/)(?:tests?|spec|__tests__)/|[._-](?:test|spec)\.\w+$|(?:^|/)test_[^/]+$")
MAX_CODE_WARNINGS = 2


def code_warnings(transcript: Iterable[Any], rel: Callable[[str], str], session_id: str) -> list[Draft]:
    """The warnings the session wrote into comments of the project's code (not of its tests), that
    its later edits did not take out again, each told once."""
    calls, _ = _walk(transcript, rel)
    found: list[tuple[str, list[str]]] = []
    edits = [c for c in calls if c.tool in EDIT_TOOLS | WRITE_TOOLS and c.answered and not _errored(c)]
    for n, call in enumerate(edits):
        path = next(iter(files_of(call, rel)), "")
        if not path or _TEST_PATH.search(path) or _PROSE_FILE.search(path):
            continue
        if call.tool in WRITE_TOOLS and not call.result.lstrip().lower().startswith("file created"):
            continue  # a file written over: which of its comments were there before is not known
        for old, new in edit_texts(call.input):
            before = {ln.strip() for ln in old.splitlines()}  # re-indented is not written anew
            block: list[str] = []
            for line in [*new.splitlines(), ""]:
                comment = _COMMENT_LINE.match(line) if line.strip() not in before else None
                if comment:
                    block.append(_COMMENT_END.sub("", comment.group(1)))
                    continue
                text = " ".join(" ".join(block).split())
                first = block[0].strip() if block else ""
                block = []
                mark = _WARNING_MARK.match(text) or _RULE_WITH_STAKES.search(text)
                if not mark or len(text[mark.start():].split()) < 8 or _GENERATED.search(text):
                    continue
                if any(first in old2 and first not in new2 for later in edits[n + 1:]
                       for old2, new2 in edit_texts(later.input)):
                    continue  # taken out again
                said = text[mark.end():] if mark.re is _WARNING_MARK else text[mark.start():].strip()
                words = set(re.findall(r"\w{3,}", said.lower()))
                same = next((f for f in found if len(words & set(re.findall(r"\w{3,}", f[0].lower())))
                             > 0.5 * len(words)), None)
                if same is not None:
                    same[1].append(path)
                else:
                    found.append((said, [path]))
    drafts = []
    for said, paths in found[:MAX_CODE_WARNINGS]:
        title = next(iter(_sentences(said)), said)
        body = [said, "Written as a comment in " + ", ".join(_uniq(paths))]
        drafts.append(Draft(
            kind="pitfall", title=_short(redact(title), 200), body=redact(_short_lines("\n".join(body), 1200)),
            files=[p for p in _uniq(paths) if not p.startswith(("/", "~"))], confidence=0.7, importance=0.7,
            source="rule", key=session_key(session_id, "code-warning", title.lower()), tags=["code-warning"]))
    return drafts


def _short_lines(text: str, limit: int) -> str:
    """Whole lines up to about `limit` characters."""
    out: list[str] = []
    for line in text.splitlines():
        if sum(len(x) + 1 for x in out) + len(line) > limit:
            break
        out.append(line)
    return "\n".join(out) or _short(text, limit)


def reported(transcript: Iterable[Any]) -> list[str]:
    """What the agent reported as done, from its wrap-up messages ("Here's a summary of what was
    implemented:"): their bullets, later reports first, without what it lists as still ahead,
    and without its "Key fix:" asides, where it names causes after the fact (spotter ae4a77f8
    called a real bug "the Dialyzer false positive" there). A session summary says what was
    built in these words."""
    reports = [report for msg in transcript
               if msg.role == "assistant" and not msg.sidechain and msg.text
               for report in [_report_lines(msg.text)] if report]
    lines: list[str] = []
    for report in reversed(reports):
        ahead = False
        for line in report:
            plain = " ".join(_unbold(line).replace("✅", "").split())
            if not plain:
                continue
            bullet = _BULLET.match(plain)
            if _heading(line, plain) and not bullet:
                ahead = bool(_AHEAD.match(plain) or _NOT_DONE.search(plain))
                continue
            said = bullet.group(1) if bullet and not ahead and not _KEY_LINE.match(plain) else ""
            if len(said.split()) >= 4 and _CODE.search(said):
                lines.append(_short(said.strip(), 180))
    return _uniq(lines)[:MAX_REPORT_LINES]


def _heading(line: str, plain: str) -> bool:
    return line.lstrip().startswith("#") or (plain.endswith(":") and (len(plain) < 60 or line.lstrip().startswith("**")
                                                                       and len(plain) < 160))


def _report_lines(text: str) -> list[str]:
    """A wrap-up's lines from where it says it reports: from the start when its first lines say
    so, else from a heading such as "Summary of changes:" below the closing words."""
    lines = text.splitlines()
    if _REPORT.search(" ".join(lines[:3])) and not _NOT_DONE.search(" ".join(lines[:3])):
        return lines
    for n, line in enumerate(lines):
        plain = " ".join(_unbold(line).split())
        if (_heading(line, plain) and not _BULLET.match(plain) and _REPORT.search(plain)
                and not _NOT_DONE.search(plain)):  # "Summary of what needs to happen:"
            return lines[n + 1:]
    return []


_ASK_LEAD = re.compile(r"(?i)^(?:(?:ok(?:ay)?|cool|great|thanks|nice|so|also|alright)\b[\s,.!]*)*"
                       r"(?:(?:i (?:want|wanted|would like|'d like) to ask|quick question|one (?:more )?question|"
                       r"(?:my|the|a) question is|question)\b[\s,:.-]*)?")
_DIRECT = re.compile(r"(?i)(?:yes|no|mostly|partly|partially|not really|not quite|it depends|short answer)\b")
_QUESTION_WORDS = r"how|where|what|which|why|when|who|is|are|does|do|did|can|could|should|would|will|was|were|has|have"
_QUESTION_WORD = re.compile(rf"(?i)(?:{_QUESTION_WORDS})\b")
# a request, not a question: "can you …", "please", or a sentence that opens with what to do ("does it fix
# any issue?" asks; "Fix the test." does not)
_REQUEST = re.compile(r"(?i)^(?:(?:can|could|would|will|did|have|are|were) you|is it done|"
                      r"are we (?:done|good|ready|finished|ok|okay|there|set|all set))\b|\bplease\b|"
                      r"\bwhy (?:don['’]t|not|wouldn['’]t) (?:you|we)\b|\bwhy not\b|\bhow about\b|\bwhat if (?:you|we)\b|"
                      r"\bis it possible to\b|\bshouldn['’]t (?:you|we)\b|"
                      r"(?:^|[.!?;]\s+|,\s+(?:and|then)\s+|\band\s+)(?:fix|implement|add|create|change|update|remove|refactor|write)\b")
_LINK_WORD = re.compile(r"<?https?://\S+|#\d+[.,]?")
# what follows a prompt's last question mark when that is more asking ("should i accept more players? is
# potplayer very different from vlc/mpv")
_ASKS_ON = re.compile(rf"(?i)(?:{_QUESTION_WORDS}|or)\b[^?]{{0,120}}")


def is_question(asked: str) -> bool:
    """Whether a prompt asks a question (not a request): one that opens with a question word and ends
    with a question mark, after links it asks about ("… explain what exactly? https://…/pull/803"), or
    with a colon before them ("what do you think about that one: https://…/pull/823"), or with more of
    the same without the mark (held-out review 103, iptvnator)."""
    words = asked.split()
    cut = len(words)
    while cut and _LINK_WORD.fullmatch(words[cut - 1]):
        cut -= 1
    linked = cut < len(words)
    text = " ".join(words[:cut])
    if _REQUEST.search(text) or not _QUESTION_WORD.match(text) or len(text) < 12:
        return False
    if text.endswith("?") or linked and text.endswith(":") or linked and "?" not in text \
            and re.match(r"(?i)what do you think\b", text):
        return True
    last = text.rfind("?")
    return last > 0 and _ASKS_ON.fullmatch(text[last + 1:].strip()) is not None
_FENCE = re.compile(r"```[\w+-]*")
_DEICTIC = frozenset({"the", "this", "that", "these", "those", "its", "you", "one", "then", "there"})


def _elliptical(question: str) -> bool:
    """A question that only makes sense inside the conversation ("which commit?"): besides its
    question word it names at most one thing, so its answer means nothing to a later session."""
    words = re.findall(r"[A-Za-z]{3,}", question)[1:]
    return len([w for w in words if w.lower() not in _DEICTIC]) < 2
_DEFERRAL = re.compile(r"(?i)\blet me\b|\bI'll (?:check|look|investigate)\b")
# "I don't have access to timestamps for when our conversation started — …" (held-out review 29): an
# answer that opens by saying the agent cannot know tells the next session nothing
_UNABLE = re.compile(r"(?i)^\W*(?:I (?:don['’]t|do not|have no|lack) (?:have )?(?:any )?(?:access|way|visibility|insight|"
                     r"means|record)\b|I (?:can['’]t|cannot|can not) access\b|I['’]m (?:not able|unable) to (?:see|access|tell|know)\b|"
                     r"there['’]s no way for me\b)")
MAX_ANSWERS = 3


def answers(transcript: Iterable[Any], session_id: str, replies: list[str] | None = None) -> list[Draft]:
    """What the agent answered when the person asked a question (how, where, what, why...),
    in a turn that changed no file: the last words of the turn, where the agent reports what it
    found. A question that is a request ("can you fix...") is a task, not a question. `replies`
    gathers the bodies of the answers kept."""
    drafts: list[Draft] = []
    said_by: list[str] = []
    question = ""
    reply = ""
    reply_at = 0
    edited = False
    msgs = [m for m in transcript if not m.sidechain and not m.compact]

    def close() -> None:
        text = " ".join(_unbold(_FENCE.sub(" ", reply)).split())
        if len(text) > 1500 and _DIRECT.match(text) and len(text) <= 6000:
            # a long answer that opens with its verdict ("Mostly yes — the bulk of it is CPU-doable",
            # then a CPU-only list and a GPU-required one, held-out review 35): each line shortened,
            # so that every part of it is kept
            text = "\n".join(_short(" ".join(_unbold(ln).split()), 150)
                             for ln in _FENCE.sub(" ", reply).splitlines() if ln.strip())[:1490]
        # "is it documented? No documentation. The script is just dropped into `scripts/`", then
        # the person had usage written at its top (entire-cli f022dad1): that moment's state
        if question and not edited and 40 <= len(text) <= 1500 and _CODE.search(text) \
                and not _HEDGE.search(text[:200]) and not _DEFERRAL.search(text[:200]) and not _UNABLE.match(text) \
                and not _undone_later(msgs, reply_at, text[:300]):
            said = _sentences(text) or [text]
            # "No." alone answers nothing a later reader can use: with the sentence that says what is
            first = " ".join(said[:2]) if len(said[0]) < 20 else said[0]
            drafts.append(Draft(
                kind="fact", title=_short(f"{question} {first}", 200),
                body=f"Asked: {_short(question, 300)}\nThe agent answered: " + (_short_lines(text, 1300) if "\n" in text
                                                                            else _short(text, 900)),
                confidence=0.6, importance=0.6, source="rule",
                key=session_key(session_id, "qa", question.lower()), tags=["answer"]))
            said_by.append(drafts[-1].body)  # what the item keeps: a finding past its cut is not told there

    for n, msg in enumerate(msgs):
        if msg.role == "user" and not msg.meta and msg.text:
            close()
            # "Ok cool. I want to ask, does the pre 8xh100 work need … or could you just do it on a cpu?"
            asked = _ASK_LEAD.sub("", " ".join(msg.text.split()))
            question = asked if len(asked) <= 400 and is_question(asked) and not _elliptical(asked) else ""
            reply, edited = "", False
        elif msg.role == "user" and msg.meta and (_BASH_INPUT.match(msg.text.strip()) or not msg.queued and msg.text.strip()):
            # the person ran a command of their own, or the harness spoke (a stop hook's feedback, held-out
            # review 78): what follows answers that
            close()
            question, reply, edited = "", "", False
        elif msg.role == "assistant":
            if any(use.name in EDIT_TOOLS | WRITE_TOOLS for use in getattr(msg, "tool_uses", [])):
                edited = True
            if msg.text.strip():
                reply, reply_at = msg.text, n
    close()
    if replies is not None:
        replies.extend(said_by[-MAX_ANSWERS:])
    return drafts[-MAX_ANSWERS:]


# What the agent's last words leave for the person to do: "Before the first run, you need to:",
# "run these yourself:", "Decision for you: …" (held-out review 5, onion 80c1d691 and solar).
_FOR_YOU = re.compile(
    r"(?i)(?<!\bif )(?<!\bwhen )(?<!\bwhenever )(?<!\bonce )\byou(?:'ll| will)? (?:still |first |also )?"
    r"(?:need|have) to\b(?! know\b)|\brun (?:these|this|them|it|the following)(?: \w+)? yourself\b|"
    r"^\W*(?:(?:a|one|the|two|three|\d) )?(?:(?:next|remaining|manual|open|pending|one-time) )*"
    r"(?:decisions?|questions?|actions?|steps?|to-?dos?)(?: \w+)? (?:for|needed from|left (?:for|to)) you\b|"
    r"\b(?:left|remaining) (?:for|to) you\b|^\W*(?:action|input) (?:required|needed)\b|"
    r"^\W*remaining (?:manual |one-time )?steps\b")
_CONDITION = re.compile(r"(?i)^\W*(?:if|when|whenever|in case|should)\b")
_HANDED = re.compile(r"(?i)^\W*(?:(?:a|one|the|two|three|\d) )?(?:open |pending )?(?:decisions?|questions?)\b[^:]{0,30}:")
_DONE_FOR_THEM = re.compile(r"(?i)\b(?:does|handles|takes care of|did) (?:that|this|it)\b|\bautomatically\b")
_NOT_DONE_FOR_THEM = re.compile(r"(?i)\b(?:not|never)\b[^.;]{0,40}(?:\bautomatically\b|\b(?:does|handles|do|handle) "
                                r"(?:that|this|it)\b)|n't\b[^.;]{0,40}(?:\bautomatically\b|\b(?:do|handle) (?:that|this|it)\b)")
_NOTHING = re.compile(r"(?i)^\W*(?:none|nothing|n/?a|no (?:action|open|further|other|more|manual|steps?|questions?|"
                      r"decisions?|changes?)\b)")
_ACK = re.compile(r"(?i)^\W*(?:ok(?:ay)?|thanks?|thank you|thx|great|cool|perfect|nice|got it|will do|sounds good|"
                  r"awesome)\b(?![^?]*\b(?:done|did|added|ran|set|fixed|made|created|i've|i have)\b)[^?]{0,50}$")
_BASH_STDERR = re.compile(r"<bash-stderr>(.*?)</bash-stderr>", re.DOTALL)
_BASH_INPUT = re.compile(r"<bash-input>(.*?)</bash-input>", re.DOTALL)


def _inside(text: str, tag: str) -> str:
    """The text between `<tag>` and its `</tag>` (found, not matched: a torn record repeats tags)."""
    start = text.find(f"<{tag}>")
    end = text.find(f"</{tag}>", start + 1) if start >= 0 else -1
    return text[start + len(tag) + 2:end] if end >= 0 else ""
MAX_HANDOFF_STEPS = 6
HANDED_OVER = "The session's last message left this to the person:"


def handed_commands(body: str) -> list[str] | None:
    """The steps of a hand-over's body when each is a command (`` `gh workflow run x` ``); None
    when one is said in words ("Add the secret"), which no command shows done."""
    steps = re.findall(r"(?m)^- (.*)$", body)
    return [st[1:-1] for st in steps] if all(re.fullmatch(r"`[^`]+`", st) for st in steps) else None


# What tells the person to run a command, in the languages the held-out sets were in: an
# imperative at the sentence's start ("Reconstruye con `./gradlew build` … y vuelve a probar",
# dndsheets a3120b77), or "you need to run". What they may do some time is not a hand-over.
_RUN_CUE = re.compile(
    r"(?i)^\W*(?:(?:then|now|next|first|please|and)\s+)?(?:run|re-?run|execute|rebuild|reinstall|restart|"
    r"ejecuta|reconstruye|vuelve a|prueba|corre|lanza|instala|запусти|выполни|пересобери|перезапусти|"
    r"установи)\b|\byou(?:'ll| will)? (?:still )?(?:need|have|must|should) to (?:run|re-?run|execute)\b|"
    r"^\W*(?:to (?:apply|pick up|load|use|enable|activate|install|deploy|finish)\b(?:`[^`\n]*`|[^,.;:`]){0,40}|"
    r"once (?:you(?:'ve| have)?|it(?:'s| is)|that(?:'s| is)|the [\w-]+ (?:is|has))\b(?:`[^`\n]*`|[^,.;:`]){1,60}),? "
    r"(?:then )?(?:run|re-?run|execute|restart|rebuild)\b|"
    r"\b(?:necesitas|tienes que|debes) (?:ejecutar|correr|lanzar)\b|\b(?:нужно|надо) (?:запустить|выполнить)\b|"
    r"(?<!\bnot )(?<!n't )(?<!\bwas )(?<!\bwere )\bworth (?:re-?)?running\b(?![^.;]{0,60}\bin CI\b)")
# Programs a hand-over names that the session need not have run itself to be known as commands
# (held-out review 8, taxkit: "I did not run `bun run check:docs` … — worth running before this
# slice is accepted", in a session told not to run anything).
_DEV_PROGRAMS = frozenset({
    "npm", "pnpm", "yarn", "bun", "npx", "bunx", "deno", "node", "make", "just", "cargo", "go", "mix", "gradle",
    "mvn", "dotnet", "swift", "xcodebuild", "pytest", "python", "python3", "uv", "poetry", "pip", "bundle",
    "rake", "rails", "php", "composer", "docker", "kubectl", "helm", "terraform", "git", "gh", "mise", "tox"})
_OPTIONAL = re.compile(r"(?i)\b(?:may|might|could|can) (?:want to|also|always)?\b|\bat some point\b|\bwhenever\b|"
                       r"\bif you (?:ever )?(?:want|like|need|wish)\b|\bany ?time\b|\bnext time\b")
# A block's lead that hands its commands over: what was skipped, is left, or waits for the
# person (reachy f05d07d9: "Пропущено: публичная группа не прикреплена …"). "Usage:", "For
# example", "to roll back" show a way, they leave nothing to do.
_LEFT_LEAD = re.compile(
    r"(?i)\b(?:skipped|not (?:yet )?(?:done|run|attached|applied|deployed|pushed)|still (?:needs?|to)|"
    r"left (?:to do|for you|undone)|pending|remaining|to finish|run (?:these|this|them|it)(?: \w+)? yourself|"
    r"you(?:'ll| will)? (?:still )?(?:need|have|must) to|пропущено|осталось|не сделано|не (?:прикреплен|запущен)\w*|"
    r"нужно|надо|falta|pendiente|queda|necesitas|tienes que)")
_SHOWING = re.compile(r"(?i)^\W*(?:usage|example|e\.g\.|for example|to roll ?back|if\b|when\b|whenever\b|"
                      r"in case|should you|пример|например|ejemplo|por ejemplo)")
_TO_LOOK = re.compile(r"(?i)\bto (?:see|view|list|check|show|inspect|find|look)\b")  # "Run `bd ready` to see available work"
_JOINED = re.compile(r"\\\n\s*")
MAX_OFFERED = 40


def _commands_run(msgs: list[Any]) -> tuple[set[str], dict[str, list[str]]]:
    """The session's own commands, blank-normalised, and the same by the program they start."""
    ran: set[str] = set()
    for msg in msgs:
        for use in msg.tool_uses if msg.role == "assistant" else ():
            line = use.input.get("command")
            if use.name in COMMAND_TOOLS and isinstance(line, str) and line.strip():
                ran.add(" ".join(line.split()))
    programs: dict[str, list[str]] = {}
    for line in ran:
        for program in {line.split()[0], parse_command(line).exe}:
            programs.setdefault(program, []).append(line)
    return ran, programs


def offered(text: str, ran: set[str], programs: dict[str, list[str]]) -> list[tuple[str, list[str]]]:
    """The commands a message hands to the person that the session itself never ran, each group
    with the words that lead to it: a block made only of commands under a lead that says what is
    left, or one named in a sentence that tells the person to run it."""

    def command(line: str) -> bool:
        words = line.split()
        if len(words) < 2 or not (words[0] in programs or words[0] in _DEV_PROGRAMS or words[0].startswith("./")):
            return False
        said = " ".join(words)
        return said not in ran and not any(said in done for done in programs.get(words[0], ()))

    found: list[tuple[str, list[str]]] = []
    lead = ""
    checked = 0
    for part in re.split(r"(```[\w+-]*[ \t]*\n.*?```)", text, flags=re.DOTALL):
        if part.startswith("```"):
            body = _JOINED.sub(" ", part.split("\n", 1)[1].rsplit("```", 1)[0])
            lines = [ln.strip().lstrip("!$ ").strip() for ln in body.splitlines()]
            lines = [ln for ln in lines if ln]
            if not lines or not _LEFT_LEAD.search(lead) or _SHOWING.match(lead) or _OPTIONAL.search(lead) or \
                    not all(ln.split()[0] in programs or ln.startswith("./") for ln in lines):
                continue
            checked += len(lines)
            cmds = [ln for ln in lines[:MAX_OFFERED] if command(ln)]
            if cmds:
                found.append((lead, cmds))
            continue
        above = [ln for ln in part.splitlines() if ln.strip()]
        lead = " ".join(_unbold(above[-1]).split()).lstrip("#>-* ") if above else lead
        for sentence in (" ".join(_unbold(x).split()) for x in _sentences(part)):
            if checked > MAX_OFFERED or not _RUN_CUE.search(sentence) or _CONDITION.match(sentence) or \
                    _OPTIONAL.search(sentence) or _TO_LOOK.search(sentence):
                continue
            named = re.findall(r"`([^`\n]+)`", sentence)
            checked += len(named)
            cmds = [c for c in named if command(c)]
            if cmds:
                found.append((sentence, cmds))
    return found


def _handoff_message(msgs: list[Any]) -> int | None:
    """The position of the agent's last words before the end, past a closing "thanks" and its
    reply; None when the person went on after them (the hand-over was taken up)."""
    end = len(msgs)
    for _ in range(3):
        last = next((n for n in range(end - 1, -1, -1) if msgs[n].role == "assistant" and msgs[n].text.strip()), None)
        if last is None:
            return None
        said = [m for m in msgs[last + 1:end] if m.role == "user" and not m.meta and m.text.strip()]
        if said and not all(_ACK.match(m.text.strip()) for m in said):
            return None
        if _has_handoff(msgs[last].text):
            return last
        ack = next((n for n in range(last - 1, -1, -1) if msgs[n].role == "user" and not msgs[n].meta
                    and msgs[n].text.strip()), None)
        if ack is None or not _ACK.match(msgs[ack].text.strip()) or any(
                getattr(m, "tool_uses", None) for m in msgs[ack:end] if m.role == "assistant"):
            return last
        end = ack
    return None


def _has_handoff(text: str) -> bool:
    return any(_lead(" ".join(_unbold(line).split()).lstrip("#> ")) for line in text.splitlines())


def _lead(plain: str) -> str:
    return next((s for s in _sentences(plain) if (_FOR_YOU.search(s) and not _CONDITION.match(s)
                 and (not _DONE_FOR_THEM.search(s) or _NOT_DONE_FOR_THEM.search(s))
                 and not _NOTHING.match(s.split(":", 1)[1] if ":" in s else "")) or _UNSHIPPED.search(s)), "")


# The session's work is done here but not shipped, and the last words wait for the person's go
# (held-out review 7, obs-alert: "Two commits ahead of origin now. Push?"; napoli: "ready to push
# when you're ready"). Whoever pushes next closes it.
_UNSHIPPED = re.compile(
    r"(?i)\b(?:[1-9]\d*|one|two|three|four|five) (?:local )?commits? ahead of (?:`?origin|`?upstream|the remote)\b|"
    r"\bready to push\b(?:[^.?!]{0,30}\bwhen(?:ever)? you\b)|^\W*(?:want me to |shall i |should i )?(?:commit and )?"
    r"push(?: (?:it|them|this|these|the (?:branch|commits?)))?\?$")



def _pushed_last(msgs: list[Any]) -> bool:
    """Whether the session's last git commit or push was a push."""
    last = ""
    for msg in msgs:
        for use in msg.tool_uses if msg.role == "assistant" else ():
            line = use.input.get("command")
            if isinstance(line, str):
                for found in re.finditer(r"\bgit\s+(?:-C\s+\S+\s+)?(commit|push)\b(?![^;&|]*--dry-run)", line):
                    last = found.group(1)
    return last == "push"


def _ran_by_person(msgs: list[Any]) -> set[str]:
    """The commands the person ran themselves (`! cmd`) that printed no error."""
    ran: set[str] = set()
    for n, msg in enumerate(msgs):
        for command in _BASH_INPUT.findall(msg.text) if msg.role == "user" else ():
            after = next((m.text for m in msgs[n + 1:n + 3] if "<bash-stderr>" in m.text), "")
            errors = _BASH_STDERR.search(after)
            if not (errors and re.search(r"[^<\s]", errors.group(1))):
                ran.add(" ".join(command.split()).lstrip("!$ "))
    return ran


# Output that reports a failure of its own although the command exited 0: a pod's events, a
# report table, a tool that logs and carries on (held-out review 6, zoia 08720dae: `kubectl
# describe` printing "Failed to pull image … not found"). Not a diff's or a grep hit's line.
_FAILURE_LINE = re.compile(
    r"^(?![+\-](?![+\-])|@@|\S+:\d+:|[^\n]{0,40}(?:\b(?:WARN(?:ING)?|INFO|DEBUG|TRACE)\b|"
    r"\[(?i:warn(?:ing)?|info|debug|trace)\]|\b(?i:warn(?:ing)?|info|debug)\s*[:|]))"
    r"[^\n]{0,120}?(?:\b(?i:error|fatal|panic)(?:\[[^\]\n]*\])?:\s|(?<!\d )\bFAILED\b|\bFailed to \w|"
    r"\b\w+BackOff\b|\bCrashLoop\w*|[│|]\s*(?i:failed)\s*[│|]|^Traceback \(most recent)[^\n]*",
    re.MULTILINE)
# Output that reports a pass: whatever it logged on the way was not the outcome (cargo's "test
# result: ok. 12 passed; 0 failed", jest's console.error inside a PASS).
_PASSED = re.compile(r"(?m)\btest result: ok\b|\b\d+ passed\b|^\s*PASS\b|^OK(?: \(|$)|\bBUILD SUCCESSFUL\b|"
                     r"^ok\s+\S+\s+[\d.]+s$|\bAll \d+ tests? passed\b")
# (and bun's tally, " 1346 pass\n 114 fail", behind `| tail`: held-out review 144 told that run as the fix)
_SOME_FAILED = re.compile(r"(?mi)\b[1-9]\d* failed\b|\btest result: FAILED\b|^\s*FAIL\b|^[ \t]*[1-9]\d* fail[ \t]*$")
# pip's own notice, printed at exit 0 after an install that worked
_BENIGN = re.compile(r"(?i)^ERROR: pip's dependency resolver does not currently")
_FAILURE_MESSAGE = re.compile(r"(?i)\b(?:error|fatal|panic|failed to)\b[^\n]{0,40}?:\s*\S|\bFailed to \w")
MAX_SEEN = 3
_GIT_STEP = re.compile(r"\s*git\s+(?:-[cC]\s+\S+\s+)*(commit|push)\b")


def _never_ran(line: str, output: str) -> list[str]:
    """The git commit and push steps a line chains with && after the step the shell refused to
    start: they never ran. Nothing when the failing step is not known for sure."""
    for _, at in _refusals(line, output):
        rest = line[at.start(1):].split("&&")
        if re.search(r"[\n;|]", rest[0]):
            return []  # the failing step's own segment goes on past a separator: what follows may have run
        steps = []
        for step in rest[1:]:
            found = _GIT_STEP.match(step)
            if found:
                steps.append(f"git {found.group(1)}")
            if re.search(r"[\n;]|\|\|", step):
                break
        return steps
    return []


UNFINISHED_COMMANDS = "Its last commands: "  # a later session that runs them clean finishes the task


def failure_lines(text: str, *, passed: bool = True) -> list[str]:
    """The lines of a command's output that report a failure of their own, whatever its exit
    status; none when the output reports a pass (unless `passed` is False: it failed anyway)."""
    tail = text[-20000:]
    if passed and _PASSED.search(tail) and not _SOME_FAILED.search(tail):
        return []
    return [ln.strip() for ln in _FAILURE_LINE.findall(tail) if not _BENIGN.match(ln.strip())]


def _gist(line: str, limit: int = 90) -> str:
    """A failure line from its message on, its head and its end: a pull error's cause ("…: not
    found") comes last, after a long chain of wrappers."""
    found = _FAILURE_MESSAGE.search(line)
    line = line[found.start():] if found else line
    half = limit // 2 - 1
    return line if len(line) <= limit else f"{line[:half].rstrip()} … {line[-half:].lstrip()}"


def unfinished(transcript: Iterable[Any], session_id: str, ended: bool = False,
               finished: Iterable[str] = ()) -> list[Draft]:
    """A session that stopped while the agent was still looking into what the person last asked:
    its last words announce more calls, whose failures nobody read out. The ask and what those
    calls showed are where the next session picks up. `ended`: the session has ended (a call
    without a result then never came back; before, it is still running); `finished`: commands
    the hook events saw finish (a result torn off the transcript's last line is no call pending)."""
    msgs = [m for m in transcript if not m.sidechain and not m.compact]
    said = max((n for n, m in enumerate(msgs) if m.role == "assistant" and m.text.strip()), default=-1)
    asked = max((n for n, m in enumerate(msgs) if m.role == "user" and not m.meta and not m.tool_use_id
                 and m.text.strip()), default=-1)
    if said < 0 or asked < 0 or asked > said:
        return []
    calls = {u.id: u for m in msgs[said:] if m.role == "assistant" for u in m.tool_uses}
    seen: list[str] = []
    commands: list[str] = []
    skipped: list[str] = []  # a commit or push chained with && after the step that failed
    ran: list[tuple[Command | None, list[str]]] = []  # each call after the last words, with its failure lines
    committed = 0
    for msg in msgs[said + 1:]:
        use = calls.get(msg.tool_use_id) if msg.role == "tool_result" else None
        if use is None or use.name not in COMMAND_TOOLS or NOT_A_FAILURE.search(msg.text[:400]) or \
                msg.is_error and persons_words(use.name, msg.text):
            continue
        failed = msg.is_error or _exit_failure(msg.text)
        if failed:
            lines = [ln.strip() for ln in msg.text.splitlines()[:3] if ln.strip() and not _exit_failure(ln)][:1] + \
                failure_lines(msg.text, passed=False)
        else:
            lines = failure_lines(msg.text)
        line = use.input.get("command")
        ran.append((parse_command(line) if isinstance(line, str) and line.strip() else None, lines))
        if not failed and isinstance(line, str) and _COMMITS.search(line):
            committed = len(ran)  # the calls up to here led to a commit
        command = line if lines else None
        if isinstance(command, str) and command.strip() and "`" not in command:
            commands.append(" ".join(command.split()))
        if failed and isinstance(command, str):
            skipped += _never_ran(command[:4000], msg.text)
    # what a later run of the same command got past (held-out review 24, julia: "BenchmarkTools not
    # found", installed into a depot a minute later) is no longer what the calls show; and once the
    # work went on to a commit after those words, it did not stop while looking
    seen = [_short(" ".join(ln.split()), 400) for n, (cmd, lines) in enumerate(ran)
            if n >= committed or skipped for ln in lines
            if cmd is None or not any(not later_lines and later is not None and equivalent(later, cmd)
                                      for later, later_lines in ran[n + 1:])]
    # a command still running when the session ended (a `git commit` whose hooks never returned):
    # whether it did its work is what the next session has to find out first
    answered = {m.tool_use_id for m in msgs[said + 1:] if m.role == "tool_result"}
    done = {" ".join(c.split()) for c in finished}
    for use in calls.values() if ended else ():
        command = use.input.get("command")
        line = " ".join(command.split()) if isinstance(command, str) else ""
        if use.id not in answered and use.name in COMMAND_TOOLS and line and line not in done:
            seen.append(f"`{_short(_running_step(command), 120)}` had not come back when the session ended")
            if "`" not in line:
                commands.append(line)
    # a message ("Failed to pull image … not found") says more than a status column ("ImagePullBackOff")
    seen = sorted(_uniq(seen), key=lambda ln: not _FAILURE_MESSAGE.search(ln))[:MAX_SEEN]
    if not seen:
        return []
    # redacted before they are cut: a cut through a token leaves a piece no pattern knows
    prompt = redact(msgs[asked].text)
    told = asks_told(prompt)
    ask, room = " ".join(told.split()), 300 if told == prompt else 2 * LONG_PROMPT
    seen = [redact(ln) for ln in seen]
    missed = " and ".join(f"`{x}`" for x in _uniq(skipped))
    undone = "not committed" if any("commit" in x for x in skipped) else "not pushed" if skipped else "last seen"
    return [Draft(
        kind="task", title=_short(f"Unfinished: {_short(ask, 50)} — {undone}: {_gist(seen[0])}", 160),
        body="\n".join([f"The session ended while the agent was looking into: {_short(ask, room)}",
                        *([f"The {missed} chained after the failing step did not run: that work is {undone}."]
                          if skipped else []),
                        f"Its last words: {_short(redact(' '.join(msgs[said].text.split())), 300)}",
                        "What its last calls showed:", *(f"- {_gist(ln, 200)}" for ln in seen),
                        *([UNFINISHED_COMMANDS + "; ".join(f"`{_short(redact(c), 200)}`" for c in _uniq(commands)[-MAX_SEEN:])]
                          if commands else [])]),
        confidence=0.6, importance=0.7, source="rule",
        key=session_key(session_id, "unfinished", ""), tags=["unfinished"])]


_COMMITS = re.compile(r"\bgit\s+(?:-C\s+\S+\s+)?commit\b")
_SHELL_WORDS = frozenset({"done", "fi", "esac", "}", ")", "do", "then", "else"})


def _running_step(line: str) -> str:
    """The step of a command line that was still running when nothing came back: its commit or
    push if it has one (what the next session must check landed), else its last step (not a shell
    keyword); a commit without its message."""
    line = HEREDOC.sub(lambda m: "<<" + m.group(3), line)  # a commit message's lines are no steps
    steps = [re.sub(r"^(?:do|then|else)\s+", "", " ".join(s.split()))
             for s in re.split(r"\s*(?:&&|\|\||;|\n)\s*", line)]
    steps = [s for s in steps if s and s not in _SHELL_WORDS]
    step = next((s for s in steps if re.match(r"git\s+(?:commit|push)\b", s)), steps[-1] if steps else line)
    if re.match(r"git\s+commit\b", step):
        step = re.split(r"\s(?:-a?m|--message|-F)\b|\s*<<|\s*\$\(", step)[0]
    return step


# What the agent left out on purpose, with why: "Skipped: test job (needs postgres service +
# migrate), multi-arch buildx (arm64 ~3x slower on hosted runners), deploy step." (held-out review
# 7, obs-alert; reachy's "Пропущено: …"). The next session meets the gap and asks why.
_LEFT_OUT = re.compile(r"(?i)(?:^\W*|[.!]\s+)((?:→\s*)?(?:skipped|not done|deferred|left out|out of scope|"
                       r"not (?:yet )?included|пропущено|не сделано|отложено|omitido|pendiente)\s*[:—–-]\s*.{12,})$")
_MY_CHANGE = re.compile(r"(?i)\bI (?:only |just |also )?(?:updated|changed|edited|touched|fixed|added|removed)\b")
_BLOCKED = re.compile(r"(?i)\b(?:blocked|denied|permission|not allowed|refused|couldn't|could not|failed)\b")
MAX_LEFT_OUT = 3


def left_out(transcript: Iterable[Any], session_id: str) -> list[Draft]:
    """Lines where the agent says what it skipped and why, as decisions of the session."""
    drafts: list[Draft] = []
    for msg in transcript:
        if msg.sidechain or msg.compact or msg.role != "assistant" or not msg.text:
            continue
        for line in _FENCE_BLOCK.sub("", msg.text).splitlines():
            if re.match(r"\s{2,}|\s*[>|]", line):
                continue  # a quote, an indented output line, a table row
            found = _LEFT_OUT.search(_unbold(line).strip()[-1000:])
            what = found.group(1).split(":", 1)[-1] if found else ""
            if not found or _NOTHING.match(what) or re.match(r"\W*\d", what) or "::" in what or \
                    _BLOCKED.search(what):
                continue  # "Skipped: none", a test report's count, one blocked and waiting on the person
            said = redact(" ".join(found.group(1).split()).lstrip("-*• →"))
            said = said[:1].upper() + said[1:]
            drafts.append(Draft(
                kind="decision", title=_short(said, 200), body=f"The agent left this out on purpose: {_short(said, 600)}",
                confidence=0.6, importance=0.6, source="rule",
                key=session_key(session_id, "left-out", said.lower()), tags=["skipped"]))
    return list({d.key: d for d in drafts}.values())[-MAX_LEFT_OUT:]


def handoffs(transcript: Iterable[Any], session_id: str) -> list[Draft]:
    """What the session's last agent message leaves to the person: the steps it lists under
    "you need to:" or "run these yourself:", or the decision it hands over. Nothing later in the
    session could have done them, and the next session starts where they stand; a command the
    person then ran themselves (`! cmd`) is done."""
    msgs = [m for m in transcript if not m.sidechain and not m.compact]
    at = _handoff_message(msgs)
    if at is None:
        return []
    ran = _ran_by_person(msgs[at + 1:])
    lines = msgs[at].text.splitlines()
    leads: list[tuple[str, list[str]]] = []
    n = 0
    while n < len(lines):
        raw = lines[n]
        plain = " ".join(_unbold(raw).split()).lstrip("#> ")
        n += 1
        said = _lead(plain)
        if not said:
            continue
        steps: list[str] = []
        if _HANDED.match(plain):
            said = plain  # "Decision for you: …" and the question it ends on
        elif _UNSHIPPED.search(said):
            if _pushed_last(msgs):
                continue  # "4 commits ahead of the tag" after the push ran says nothing is left
            around = _sentences(plain)
            pos = around.index(said) if said in around else 0
            if len(plain) <= 160:
                said = plain  # "Two commits ahead of origin now. Push?"
            elif len(said) < 40 and pos > 0:
                said = f"{around[pos - 1]} {said}"  # "Push?" says what only with the sentence before it
            steps.append("`git push`")  # the next push, by anyone, does it
        fenced = False
        listing = plain.endswith(":") or raw.lstrip().startswith("#")
        while listing and n < len(lines) and len(steps) < MAX_HANDOFF_STEPS:
            line = lines[n].strip()
            if line.startswith("```"):
                fenced = not fenced
            elif fenced and line:
                steps.append(f"`{_short(redact(line.lstrip('!$ ')), 160)}`")
            elif (bullet := _BULLET.match(line)) and not fenced:
                steps.append(_short(redact(_unbold(bullet.group(1))), 160))
            elif line and not fenced:
                if not steps and not line.endswith(":") and not line.startswith("#"):
                    steps.append(_short(redact(_unbold(line)), 160))  # the one step, said as prose
                break
            n += 1
        if len(steps) == 1 and _NOTHING.match(steps[0]):
            continue  # "Remaining manual steps: None — everything is automated now."
        done = [st for st in steps if st.startswith("`") and " ".join(st.strip("`").split()) in ran]
        steps = [st for st in steps if st not in done]
        if not done or steps:
            leads.append((said, steps))
    if not leads:
        leads = [(said.rstrip(" :") or "Commands to run", [f"`{_short(redact(c), 160)}`" for c in cmds if c not in ran])
                 for said, cmds in offered(msgs[at].text, *_commands_run(msgs))]
        leads = [lead for lead in leads if lead[1]]
    if not leads:
        return []
    lead, steps = next((lead for lead in leads if lead[1]), leads[0])
    named = [st for st in steps if st not in lead]  # "You may want to run `docker system prune`" names its one step
    joint = " " if lead.rstrip().endswith("?") else ": "
    title = f"Left to the user: {lead.rstrip(' :.!')}" + (joint + "; ".join(s.rstrip(".") for s in named)
                                                        if named else "")
    body = [HANDED_OVER]
    for said, listed in leads:
        body += [said, *(f"- {s}" for s in listed)]
    return [Draft(
        kind="task", title=_short(redact(title), 200), body=redact("\n".join(body)),
        confidence=0.6, importance=0.7, source="rule",
        key=session_key(session_id, "left-to-user", ""), tags=["handoff", "left-to-user"])]


_DIRECTIVE = re.compile(r"(?i)\b(?:use|don't|do not|dont|instead|rather|should|must|never|always|keep the|"
                        r"prefer|let's|lets|not\b|avoid|only|stop|remove|rename|change|switch)\b")
_SHELL_ERROR = re.compile(r"\(eval\):\d+:|parse error|syntax error near unexpected token|"
                          r"unexpected EOF while looking for", re.IGNORECASE)
_ON_SELECTION = re.compile(r"(?i)\s*on selected text:?\s*$")
_IMPERATIVE = re.compile(r"(?i)(?:make|put|keep|add|drop|split|merge|move|write|call|name|inline|combine|"
                         r"return|show|hide|skip)\b")  # "Make it single file"
_REJECTION = re.compile(r"(?:reason for the rejection:|the user said:)\s*(.+)", re.IGNORECASE | re.DOTALL)
# what the harness writes after the person's words, and in their place when they typed none (held-out
# reviews 45 and 46: "Denied by user\n\nNote: The user's next message may contain a correction or
# preference. Pay close attention …" was their decision)
_HARNESS_NOTE = re.compile(r"\n\s*Note: The user['’]s next message may contain\b.*", re.IGNORECASE | re.DOTALL)
_NO_WORDS = re.compile(r"(?i)\s*(?:denied|rejected|declined) by (?:the )?user\.?\s*$")


def rejections(transcript: Iterable[Any], session_id: str) -> list[Draft]:
    """What the person said when they turned a tool call down: a correction, in their words."""
    calls: dict[str, Any] = {}
    drafts = []
    for msg in transcript:
        if msg.sidechain:
            continue
        for use in getattr(msg, "tool_uses", []):
            calls[use.id] = use
        if msg.role != "tool_result" or not msg.is_error:
            continue
        bare = _HARNESS_NOTE.sub("", msg.text[:4000])
        found = _REJECTION.search(bare)
        # "On selected text:\n> 3. site/ (new; …)\nMake it single file": the quote is what the words are about
        lines = found.group(1).splitlines() if found and not _NO_WORDS.match(found.group(1)) else []
        quoted = " ".join(ln.strip()[1:].strip() for ln in lines if ln.strip().startswith(">"))
        said = " ".join(" ".join(ln for ln in lines if not ln.strip().startswith(">")
                                 and not _ON_SELECTION.match(ln)).split())
        use = calls.get(msg.tool_use_id)
        if not said and use is not None and persons_words(use.name, bare) and not _NO_WORDS.match(bare):
            said = " ".join(bare.split())
        if len(re.findall(r"[^\W\d_]{2,}", said)) < 2 or "?" in said[-4:] or not (
                _DIRECTIVE.search(said) or _IMPERATIVE.match(said)):
            continue  # a question back to the agent, or "I've done it, go on", is no instruction
        if quoted:
            said = f"{said} (about: {_short(quoted, 120)})"
        what, title = "", said
        if use is not None:
            target = use.input.get("command") or use.input.get("file_path") or use.input.get("plan") or ""
            what = f"{use.name} {_short(str(target), 120)}".strip()
            if isinstance(use.input.get("command"), str) and len(said.split()) <= 6:
                # "use pnpm" says little without the call it turned down (claude-code-log 7acd37a8)
                title = f"{said} (turned down `{_short(' '.join(use.input['command'].split()), 60)}`)"
        drafts.append(Draft(
            kind="decision", title=_short(title, 200),
            body=f"The user turned down {what or 'a tool call'} and said: {_short(said, 600)}",
            confidence=0.9, importance=0.8, source="user",
            key=session_key(session_id, "rejection", said.lower()), tags=["user-stated", "rejection"]))
    return drafts


# The person's reply to what the agent proposed, when it settles the matter: it turns the proposal
# down, picks one of the ways offered, or overrides the agent's plan (held-out review 6: "Okay.
# Let's skip the dmg and th id application. Just roll with what we have."; "Давай все же отменим И
# сделаем новый релиз, получается уже 0.5.0"). Routine go-aheads ("commit and push", "yes
# please") settle nothing a later session needs.
# Only the words that agree are dropped before the reply is read: "no auth needed" without its
# "no" says the opposite.
_REPLY_ACK = re.compile(r"(?i)^\W*(?:(?:yes|yeah|yep|yup|ok(?:ay)?|sure|hmm+|well|actually|alright|"
                        r"да|ок|хорошо|ладно|sí|vale|bueno|ja|oui)\b[\s,.!—–-]*)+")
_DECLINED = re.compile(r"(?i)^\W*(?:no|nope|nah|нет|nein|non)\b(?! (?:worries|problem|need to ask|idea|clue|opinion|"
                       r"(?:strong )?preference|rush)\b)"
                       r"[\s,.!—–-]+[^\W\d_]")
_CHOOSING = re.compile(
    r"(?i)^(?:let'?s|lets|let us|go (?:with|for)|stick (?:with|to)|(?:rather|instead)\b|just\b|"
    r"давай\w*|vamos|mejor|lass uns|on va)\b")
_OVERRIDING = re.compile(
    r"(?i)(?:^|[.,;:!—–]\s*|\b(?:and|but|so|just)\s+)(?:please\s+)?(?:don'?t|do not)\s+(?!understand|know|get|see|think)\w|"
    r"(?<![\w-])(?:skip|cancel)(?![\w-])|\b(?:drop (?:it|that|this|them)|no need|instead|rather than|not now|"
    r"leave (?:it|that|them) (?:as is|alone|be|out)|"
    r"roll with|отмен\w*|пропуст\w*|не (?:надо|нужно|будем)|вместо|оставь\w*|cancela\w*|no hace falta|"
    r"en lugar de|omit\w*|lass\w* \w+ weg|annul\w*)\b")
# an offer made without a question, and the person's "ok" before their "nah"
_STANDING_OFFER = re.compile(r"(?i)\b(?:if you want(?: it| me to)?\b|say the word\b|just say (?:so|go)\b|"
                             r"let me know if you(?:'d)? (?:want|like)\b)")
# the "no" that turns an offer down, not one that sets the work right ("No, the rate limiter should
# only be on for the free tier", the whole-diff review)
_TURNS_DOWN = re.compile(r"(?i)^\W*(?:no|nope|nah)\b[\s,.!—–-]*(?:thanks|thank you|need\b|it['’]?s (?:fine|ok|okay|good)|"
                         r"that['’]?s (?:fine|ok|okay|good)|i['’]?m good|we['’]?re good|not (?:now|yet|necessary|needed)|"
                         r"skip (?:it|that)|i['’]?ll (?:do|write|handle) (?:it|that) myself)")
_LEAD_ACK = re.compile(r"(?i)^\W*(?:ok(?:ay)?|well|hmm+|actually|honestly)\b[\s,.!—–-]*")
_OFFER = re.compile(r"(?i)^(?:(?:do )?you want me to|want me to|should i|shall i|would you like me to|"
                    r"may i|can i)\s+(?:also\s+|go ahead and\s+)?(.+?)\??$")
_ROUTINE = frozenset(["commit", "push", "merge", "continue", "please", "ahead", "sure",
                      "sounds", "good", "thanks", "thank", "great", "yes", "sí", "go", "do",
                      "it", "that", "this", "them", "all", "done", "and", "the", "now"])
_REPLY_STOP = frozenset(["that", "this", "with", "have", "from", "they", "them", "then",
                         "there", "their", "what", "when", "where", "which", "would", "could",
                         "should", "about", "your", "into", "just", "like", "make", "sure",
                         "want", "need", "also", "only", "some", "more", "will", "been", "were",
                         "does", "done", "okay", "yeah", "please", "thanks"])


def _stems(text: str) -> set[str]:
    """Word beginnings, enough to match "отменим" with "отменить" or "tracked" with "track"."""
    return {w[:5].lower() for w in re.findall(r"[^\W\d_]{4,}", text) if w.lower() not in _REPLY_STOP}


def _norm_words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.replace("−", "-").lower()))


def replies(transcript: Iterable[Any], session_id: str) -> list[Draft]:
    """The person's decisions given as a plain reply: declining or picking what the agent's last
    message asked about, or overriding what it proposed, with what the agent had said."""
    drafts = []
    last = ""
    for msg in transcript:
        if msg.sidechain or msg.compact:
            continue
        if msg.role == "assistant" and msg.text.strip():
            last = msg.text
            continue
        if msg.role != "user" or msg.meta or msg.tool_use_id or not msg.text.strip():
            continue
        # what they quote with ">" is what they answer, not their words (held-out review 64: "> I only
        # built it this morning in response. Tonight runs under it.\n\nYou have no real sense of time…")
        lines = msg.text.splitlines()
        quoted = " ".join(ln.strip()[1:].strip() for ln in lines if ln.strip().startswith(">"))
        own = [ln for ln in lines if not ln.strip().startswith(">")]
        said, before, last = " ".join(" ".join(own).split()), last, ""
        # only a quote of the agent's own words is what it had said (not a teammate's, the review of session 28)
        theirs = quoted if quoted and _norm_words(quoted)[:80] in _norm_words(before) else ""
        if (len(said) > 400 or "?" in said) and before.rstrip().endswith("?"):
            # a reply that goes on to a new ask: its first sentence answers the question (held-out
            # review 34: "I want to get started working on the poster instead of tooling, so yes,
            # let's proceed, but … One thing that I want the poster to have is …?")
            first = next(iter(_sentences("\n".join(own))), "")
            if len(first) <= 250 and "?" not in first:
                said = " ".join(first.split())
        if not before or len(said) > 400 or "?" in said or said.startswith(("<", "!", "/")) or \
                CHECKING.search(said) or REPORTED.search(said) or _ASKS_TO_EXPLAIN.search(said) or \
                states_something(said):
            continue  # a question, checking they understood, quoting what they saw, or an item already
        rest = _REPLY_ACK.sub("", said)
        content = [w for w in re.findall(r"[^\W\d_]{3,}", rest) if w.lower() not in _ROUTINE]
        shared = _stems(rest) & _stems(before[-4000:])
        if len(content) < 3:
            continue
        sentences = [" ".join(_unbold(x).split()) for x in _sentences(before[-4000:])]
        question = next((x for x in reversed(sentences) if x.endswith("?")), "")
        offer = _OFFER.match(question) if "?" in before.rstrip()[-400:] else None
        if offer is None and _STANDING_OFFER.search(before[-600:]) and _TURNS_DOWN.match(_LEAD_ACK.sub("", said)):
            # offered without a question ("The practical plan if you want it: tear this H100 down now,
            # …  say the word and I'll write up the … steps.") and turned down (held-out review 35)
            offers = [x for x in sentences[-12:] if _STANDING_OFFER.search(x) and len(x) > 60]
            # the plan the offer leads ("The practical plan if you want it: …") over its echo ("say the word …")
            plan = next((x for x in offers if re.search(r"(?i)\bif you want(?: it)?\s*:", x)), offers[-1] if offers else "")
            if plan:
                plan = re.sub(r"(?i)^[^:]{0,60}\bif you want(?: it)?\s*:\s*", "", plan)
                drafts.append(Draft(
                    kind="decision", title=_short(redact(f"Declined: {_short(plan, 110)} — the user: \"{said}\""), 240),
                    body=redact(f"The agent offered: {_short(plan, 400)}\nThe user decided: {_short(said, 400)}"),
                    confidence=0.85, importance=0.8, source="user",
                    key=session_key(session_id, "reply", said.lower()), tags=["user-stated", "reply"]))
                continue
        # Going along with the proposal is the agent's decision, and the work shows it; what the
        # person turned down or chose instead is the path nothing in the code records. Only an
        # offer is declined ("Is anything still failing?" — "no, all fine" declines nothing).
        # ("No strong preference on my side. Which one would you pick?" declines nothing: _DECLINED)
        if offer and (_DECLINED.match(said) or _CHOOSING.match(rest) and shared):
            context, asked = question, True
        elif _OVERRIDING.search(rest) and shared and offer and _stems(rest) & _stems(question):
            context, asked = question, True  # "… the poster instead of tooling" to "… the poster, or the tooling now?"
        elif _OVERRIDING.search(rest) and (shared or quoted):
            context = quoted or max(sentences, key=lambda x: len(_stems(x) & shared), default="")
            asked = False
        elif quoted and any(_IMPERATIVE.match(x) or _DIRECTIVE.search(x) for x in _sentences(rest)):
            context, asked = quoted, False  # "> 60-minute firing.\n\nSeems too long. Make it every 20 minutes."
        else:
            continue
        if asked and offer and _DECLINED.match(said):  # "no don't set it" means nothing without what it turned down
            title = f"Declined: {offer.group(1).rstrip(' ?')} — the user: \"{said}\""
        else:
            title = f"{rest[:1].upper()}{rest[1:]}" + (f" (the user's answer to: {context})" if asked else "")
        said_by = "The user quoted" if quoted and context == quoted and not theirs else \
            f"The agent {'asked' if asked else 'had said'}"
        body = [f"{said_by}: {_short(context, 400)}",
                f"The user decided: {_short(said, 400)}"]
        drafts.append(Draft(
            kind="decision", title=_short(redact(title), 240), body=redact("\n".join(body)),
            confidence=0.85, importance=0.8, source="user",
            key=session_key(session_id, "reply", said.lower()), tags=["user-stated", "reply"]))
    return drafts


_TOOL_NEEDS = re.compile(r"[Ee]xecutable not found in \$PATH:[ \t]*\\?\"([\w.+-]+)\\?\"")
_READERS = _LOOKS | {"WebFetch", "WebSearch", "NotebookRead", "TaskOutput", "BashOutput", "Task", "Agent"}
_NOT_ON_PATH = re.compile(
    r"(?m)command not found:\s*([\w.+-]+)\s*$|(?:^|:\s)([\w.+-]+): (?:command )?not found\s*$|"
    r"exec: \"?([\w.+-]+)\"?: executable file not found in \$PATH|"
    r"'([\w.+-]+)' is not recognized as an internal or external command")
_ALIAS_OF = {"py": "python", "python3": "python", "pip3": "pip", "nodejs": "node"}
_UNQUOTED_GLOB = re.compile(r"(?m)no matches found: (-[\w-]*=\S*[*?\[]\S*)")
_RUN_VIA = (r"(?:pnpm(?: exec| dlx)?|npx|yarn(?: exec| dlx)?|bunx|bun x|uv run|uvx|poetry run|pipenv run|pdm run|"
            r"hatch run|python3? -m|bundle exec|mise exec --|mise x --|(?:source|\.) [\w.~${}/-]*bin/activate\s*&&|"
            r"[\w.~${}()-]*/)")


# and Claude Code's auto mode classifier (held-out review 18: "Permission for this action was denied by
# the Claude Code auto mode classifier. Reason: [Self-Modification]" became "`nvidia-smi` fails")
_AWAITS_APPROVAL = re.compile(r"(?i)requires approval|requested permissions to|Permission to use \S+ has been (?:auto-)?denied|"
                              r"Permission for this action was denied")


_CLASSIFIER = re.compile(r"(?i)auto mode classifier")
_REFUSED_LEAD = "The agent's permission settings refused these calls and the session never ran them: "


def shown(cmd: Command) -> str:
    """How a refused command is named: its main step, or the line when that step only prints (the
    `echo "$r -> $n"` closing a `for … do n=$(curl …); … done` loop)."""
    return _short(cmd.display if cmd.exe not in ("echo", "printf", "true", ":") else " ".join(cmd.raw.split()), 60)
_REFUSED_END = ". Approve them when asked, or allow them in the agent's settings."


def approvals_granted(body: str, commands: list[Command], edited: set[str]) -> bool:
    """Whether a later session made every call a `permission_blocks` item says waited for
    approval, in each session it tells of (its own list, and those under "Met before:"): ran
    each command (whatever came of it) and edited each file."""
    listed = re.findall(rf"{re.escape(_REFUSED_LEAD)}(.*?){re.escape(_REFUSED_END)}", body)
    if not listed:
        return False
    ran = {f"`{shown(c)}`" for c in commands if c.exe}
    for entry in "; ".join(listed).split("; "):
        tool, of, paths = entry.partition(" of ")
        if entry in ran or (of and tool in EDIT_TOOLS and set(paths.split(", ")) <= edited):
            continue
        return False
    return True


def permission_blocks(transcript: Iterable[Any], rel: Callable[[str], str]) -> list[Draft]:
    """Calls the agent's permission settings stopped and that never ran later in the session: the
    work waited on an approval that did not come (held-out review 9, acmebank: the same one-line
    test fix, refused in three sessions running while the person wrote "you're approved")."""
    calls, _ = _walk(transcript, rel)
    blocked: list[str] = []
    classified = 0
    for n, call in enumerate(calls):
        if not (call.answered and call.errored and _AWAITS_APPROVAL.search(call.result[:400])):
            continue
        later = [c for c in calls[n + 1:] if c.answered and not NEVER_RAN.search(c.result[:400])]
        if call.tool in EDIT_TOOLS:
            paths = files_of(call, rel)
            if paths and not any(c.tool in EDIT_TOOLS and not _errored(c) and set(files_of(c, rel)) & set(paths)
                                 for c in later):
                blocked.append(f"{call.tool} of {', '.join(paths)}")
        elif call.command is not None and call.command.exe:
            cmd = call.command
            # a later run that failed still ran
            if not any(c.command is not None and equivalent(c.command, cmd) for c in later):
                blocked.append(f"`{shown(cmd)}`")
        classified += bool(_CLASSIFIER.search(call.result[:400]))
    blocked = _uniq(blocked)
    if not blocked:
        return []
    # Claude Code's auto mode refuses by its own classifier, whatever the person said (held-out
    # review 27: "[Production Reads]", then "[Modify Shared Resources]" after the person's "run it")
    lead = ("Refused by the agent's auto-mode permission check and never ran: " if classified
            else "Waited for the person's approval and never ran: ")
    return [Draft(
        kind="env", title=_short(lead + ", ".join(blocked), 200),
        body=_REFUSED_LEAD + "; ".join(blocked) + _REFUSED_END
        + (" The auto-mode check refuses them even after the person's go-ahead." if classified else ""),
        confidence=0.8, importance=0.6, source="rule", key=session_key("", "approval", ""),
        tags=["permissions", "environment"])]


_EDIT_MISSED = re.compile(r"String to replace not found in file")
# a command that changes a file where it lies: `sed -i ''`, `perl -pi -e`, a Python script (not `sed -n`, `cat -A`)
_IN_PLACE = re.compile(r"\b(?:g?sed\s+(?:-[^i\s]\S*\s+)*-i|perl\s+-\w*i|awk\s+-i\s+inplace)\b|"
                       r"\bpython3?\b[\s\S]{0,4000}?(?:open\([^)]*['\"][wa]\+?['\"]|\.write\(|write_text\()")


def _names_path(line: str, where: str, rel: Callable[[str], str]) -> bool:
    """Whether a shell line names this project file by a path of its (`src/a.ts`, its absolute form), not only by a
    name another file shares."""
    return any(rel(w) == where or w.endswith("/" + where) or w == where
               for w in re.findall(r"[^\s'\"`;&|()<>=,]+", line))
_TAB_INDENTED = re.compile(r"(?m)^[ \t]*\d+→\t")  # a line of the Read tool's answer that opens with a tab


def edit_pitfalls(transcript: Iterable[Any], rel: Callable[[str], str]) -> list[Draft]:
    """A file whose edits did not find their text ("String to replace not found in file") twice, or once before
    the session changed it another way: with why when its lines as the Read tool showed them open with tabs, and
    what changed it in the end (held-out reviews 146, 148, 151, 153: components indented eight tabs deep; a
    Python replace, `sed -i` or a rewrite of the whole file did it)."""
    calls, _ = _walk(transcript, rel)
    missed: dict[str, list[_Call]] = {}
    for c in calls:
        if c.tool in EDIT_TOOLS and c.answered and c.errored and _EDIT_MISSED.search(c.result[:400]):
            missed.setdefault(str(c.input.get("file_path") or ""), []).append(c)
    drafts = []
    for path, misses in missed.items():
        if not path:
            continue
        where = rel(path)
        later = [c for c in calls if c.pos > misses[-1].pos and c.answered and not _errored(c) and not c.failed]
        # a command that names this file by its path and writes it (the review of a28347e, M3: not `sed -i` on
        # another `index.ts`, nor `python -c` that only parses it)
        done = next((c for c in later if c.tool in EDIT_TOOLS | WRITE_TOOLS and str(c.input.get("file_path") or "") == path
                     or c.command is not None and _names_path(str(c.input.get("command") or "")[:4000], where, rel)
                     and (_IN_PLACE.search(str(c.input.get("command"))[:4000])
                          or any(rel(w) == where for w in c.command.writes))
                     and not re.search(r"(?i)\bnot found\b|\bfailed\b|\bno match", c.result[:2000])), None)
        # tabs, when the file's lines open with them and a missed text's lines are the file's but for how they
        # are indented (not a stale read: the review of a28347e, M3)
        reads = [c.result[:20000] for c in calls if c.tool == "Read" and str(c.input.get("file_path") or "") == path]
        shown = {ln.split("→", 1)[1].strip() for r in reads for ln in r.splitlines() if "→" in ln}
        tabs = any(_TAB_INDENTED.search(r) for r in reads) and any(
            (lines := [ln.strip() for ln in old.splitlines() if ln.strip()]) and all(ln in shown for ln in lines)
            for c in misses for old, _ in edit_texts(c.input))
        another_way = done is not None and done.tool not in EDIT_TOOLS
        if len(misses) < 2 and not (tabs and another_way):
            continue
        how = ("" if done is None else "an edit with its exact text worked" if done.tool in EDIT_TOOLS else
               "writing the whole file worked" if done.tool in WRITE_TOOLS else
               f"`{done.command.exe}{' -i' if done.command.exe in ('sed', 'gsed', 'perl') else ''}` changed it"
               if done.command is not None and done.command.exe else "a command changed it")
        title = (f"Edits of `{where}` missed their text {'once' if len(misses) == 1 else f'{len(misses)} times'}"
                 + (": the file is indented with tabs" if tabs else "")
                 + (f"; {how}" if how else ""))
        key = session_key("", "edit-missed", where)
        drafts.append(Draft(
            kind="pitfall", title=_short(title, 200),
            body="\n".join([f"{c.tool} of `{where}` returned: String to replace not found in file" for c in misses[:1]]
                            + ([f"Then: {how}"] if how else [])),
            files=[where], confidence=0.6, importance=0.5, source="rule", key=key, tags=["edit", "indentation"] if tabs else ["edit"]))
    if len(drafts) < 2:
        return drafts
    # one lesson of the session, not a copy a file (held-out review 159: two files, two items saying the same)
    tabbed = all("indentation" in d.tags for d in drafts)
    title = (("The files are indented with tabs, and edits missed their text in " if tabbed else "Edits missed their text in ")
             + ", ".join(f"`{posixpath.basename(d.files[0])}`" for d in drafts[:4])
             + (f" (+{len(drafts) - 4})" if len(drafts) > 4 else ""))
    return [Draft(kind="pitfall", title=_short(title, 200), body="\n".join(d.title for d in drafts[:6]),
                  files=[d.files[0] for d in drafts], confidence=0.6, importance=0.5, source="rule",
                  key=session_key("", "edit-missed", " ".join(sorted(d.files[0] for d in drafts))),
                  tags=["edit", "indentation"] if tabbed else ["edit"])]


def shell_pitfalls(transcript: Iterable[Any], rel: Callable[[str], str]) -> list[Draft]:
    """What the shell itself refused, which often comes back with exit status 0 (a pipe's last
    step decides it): a tool that is not on PATH, and the way that did run or install it; an
    unquoted glob in an option that zsh expanded and found nothing for (held-out luke, ktn, turbodiff)."""
    calls, _ = _walk(transcript, rel)
    drafts: dict[str, Draft] = {}
    named: dict[str, str] = {}
    for n, call in enumerate(calls):
        if (call.command is None and call.answered and call.tool not in _READERS
                and (call.errored or re.match(r"\s*(?:error|failed)\b", call.result[:200], re.IGNORECASE))
                and (needs := _TOOL_NEEDS.search(call.result[:2000]))):
            # a tool of the harness (LSP, a language server) that runs an executable this machine lacks
            key = session_key("", "not-on-path", needs.group(1))
            drafts.setdefault(key, Draft(
                kind="env", title=f"`{needs.group(1)}` is not on PATH here: the {call.tool} tool fails without it",
                body=f"{call.tool} ({_short(redact(json.dumps(call.input, sort_keys=True)), 160)}) returned: "
                     f"{_short(needs.group(0), 160)}",
                confidence=0.7, importance=0.5, source="rule", key=key,
                tags=["path", "environment", needs.group(1)]))
            continue
        raw = call.input.get("command") if call.command is not None else None
        if not isinstance(raw, str) or not call.answered or _ELSEWHERE.search(raw[:4000]):
            continue
        raw = raw[:4000]
        for match in _NOT_ON_PATH.finditer(call.result[:4000]):
            tool = next(g for g in match.groups() if g)
            # `python`, then `py`: one missing tool under two names is one item, keyed by the first
            # (a session where only `python3` is missing is another fact, with its own key)
            key = named.setdefault(_ALIAS_OF.get(tool, tool), session_key("", "not-on-path", tool))
            if not re.search(rf"{_SEGMENT}{re.escape(tool)}(?![\w./-])", raw, re.MULTILINE):
                continue  # a log it printed or grepped (CI's), not a step this shell ran
            if key in drafts:
                known = drafts[key]
                names = known.title.split(" not on PATH", 1)[0]
                if f"`{tool}`" not in names:
                    known.title = known.title.replace(names, names.rsplit(" ", 1)[0] + f" and `{tool}` are", 1)
                    known.tags.append(tool)
                continue
            title = f"`{tool}` is not on PATH here (command not found)"
            body = [f"`{_short(' '.join(raw.split()), 160)}` printed: {_short(match.group(0).strip(), 120)}"]
            how = _ran_after(calls[n + 1:], tool)
            if how:
                title += f"; {how}"
                body.append(f"Then: {how}.")
            drafts[key] = Draft(
                kind="env", title=title, body="\n".join(body), confidence=0.8 if how else 0.65,
                importance=0.6, source="rule", key=key, tags=["path", "environment", tool])
        wrapped = _wrapper_refused(call, calls[n + 1:])
        if wrapped is not None and wrapped.key not in drafts:
            drafts[wrapped.key] = wrapped
        glob = _UNQUOTED_GLOB.search(call.result[:4000])
        key = session_key("", "unquoted-glob")
        if glob and key not in drafts and glob.group(1) in raw:
            drafts[key] = Draft(
                kind="env", title=f"The shell here is zsh: an unquoted glob such as `{glob.group(1)}` fails "
                                  "with 'no matches found'; quote it",
                body=f"`{_short(' '.join(raw.split()), 160)}` printed: {_short(glob.group(0), 120)}",
                confidence=0.8, importance=0.6, source="rule", key=key, tags=["zsh", "environment", "shell"])
    return list(drafts.values())


_WRAPPER_REFUSED = re.compile(r"(?i)\b(?:unrecognized subcommand|unknown (?:sub)?command|no such command|invalid choice)"
                              r":?\s*['\"‘“]?([\w.+-]+)['\"’”]?")


def _ran_alone(call: _Call, later: list[_Call]) -> tuple[str, str, Command, str] | None:
    """(wrapper, program, the later run of the program alone, the refusal) when a program that runs others
    refused the one it was given, which then ran alone, whatever came of it (held-out reviews 107, 112 and
    122, context-evaluator: `rtk bun run test` → "error: unrecognized subcommand 'bun'", then `bun run test`)."""
    raw = call.input.get("command")
    if call.command is None or not isinstance(raw, str):
        return None
    # (through `| tail` the status is the filter's: the refusal heads the output then, held-out review 116)
    refused = _WRAPPER_REFUSED.search(call.result[:2000] if call.failed or call.errored else call.result[:300])
    words = raw[:4000].split()
    if refused is None or refused.group(1) not in words[1:]:
        return None
    at = words.index(refused.group(1), 1)
    wrapper, alone = words[at - 1], parse_command(" ".join(words[at:]))
    if wrapper.startswith("-") or not alone.exe:
        return None
    after = next((c.command for c in later if c.answered and c.command is not None and c.command.exe == alone.exe
                  and c.command.raw.split()[0] == alone.exe and not NEVER_RAN.search(c.result[:400])
                  and not _WRAPPER_REFUSED.search(c.result[:300])), None)
    return None if after is None else (wrapper, alone.exe, after, " ".join(refused.group(0).split()))


def _wrapper_refused(call: _Call, later: list[_Call]) -> Draft | None:
    """The env fact of `_ran_alone`: the wrapper does not run the program here; run it without."""
    found = _ran_alone(call, later)
    if found is None:
        return None
    wrapper, program, after, error = found
    words = str(call.input.get("command"))[:4000].split()
    # the form that failed, not the wrapper at large: `rtk test bun run test` may work where `rtk bun run test`
    # does not (held-out review 161)
    wrapped = next((" ".join(c.command.raw.split()) for c in later if c.answered and c.command is not None
                    and c.command.raw.split()[:1] == [wrapper] and program in c.command.raw.split()[2:3]
                    and not c.failed and not _WRAPPER_REFUSED.search(c.result[:300])), "")
    return Draft(
        kind="env", title=f"`{wrapper} {program} …` fails here ({_short(error, 60)}): run `{_short(after.display, 60)}` "
                          f"without `{wrapper}`",
        body=f"`{_short(' '.join(words), 160)}` failed with {_short(error, 120)}; then `{_short(' '.join(after.raw.split()), 160)}` ran."
             + (f"\n`{_short(wrapped, 120)}` ran through `{wrapper}`." if wrapped else ""),
        confidence=0.8, importance=0.6, source="rule", key=session_key("", "wrapper-refuses", f"{wrapper} {program}"),
        tags=["environment", wrapper, program])


# A command that never came back: no result at all, or past the Bash tool's timeout, and the agent
# says it hangs ("The commit is hanging, probably on Entire's git hook.", held-out review 5, solar
# 4b2b2b4d and d6ced6b4: the same hook hung a commit in two sessions).
_HUNG = re.compile(
    r"(?i)^(?:[-*•]\s+|\d+[.)]\s+)?(?:(?:it )?(?:looks|seems) like |it seems |apparently )?"
    r"(?:the |this |that |my |your |our )?(?:`(?P<code>[^`\n]{1,80})`|(?P<w1>[\w.-]+)"
    r"(?: (?!(?:is|was|got|keeps|seems|appears|looks|still|never)\b)(?P<w2>[\w.-]+))?)\s+"
    r"(?:(?:is|was|got|keeps|seems to be|appears to be|looks) )?(?:still )?(?:hanging|hung|hangs|stuck|frozen|froze|"
    r"never (?:returns|returned|finishes|finished|completes|completed|exits|exited))\b")
_GENERIC = frozenset({"command", "process", "call", "script", "shell", "terminal", "it", "job", "run"})
_MOVED = re.compile(r"\s*Command (?:did not complete within|was moved to the background)")
_INTERPRETERS = frozenset({"python", "python3", "node", "bash", "sh", "zsh", "ruby", "deno", "perl", "bun"})
_TIMED_OUT = re.compile(r"\s*Command did not complete within its \d+s timeout")
_WAITS = re.compile(r"(?i)\bwait(?:s|ing)\b|\bprompt|\binteractive\b|\bstdin\b|\btty\b|\block(?:s|ed)?\b|"
                    r"\bbecause\b|\bblock(?:s|ed|ing)\b|\bsitting idle\b|\bstill running\b")
_WAITS_ON = re.compile(r"(?i)\bwait|\bprompt|\binteractive\b|\bstdin\b|\btty\b")
_NON_INTERACTIVE = re.compile(r"core\.hooksPath|--no-verify\b|</dev/null|\bCI=\S|--yes\b|\s-y\b|--non-interactive\b|"
                              r"GIT_TERMINAL_PROMPT=0|--no-input\b")


def _steps_of(cmd: Command) -> list[str]:
    return [cmd.main, *cmd.others] if cmd.main else [cmd.raw]


def _named(word: str, text: str) -> bool:
    return bool(re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text, re.IGNORECASE))


def _hanging(call: _Call, pos: int, words: list[str], generic: bool) -> bool:
    """A command of `call` had not come back by message `pos`, and the words name it; one the
    agent started in the background on purpose (a dev server) only when named: "it is stuck in a
    loop" speaks of the code, not of the server left running."""
    if call.pos >= pos or call.command is None or (call.answered_at is not None and call.answered_at <= pos):
        return False
    meant = bool(call.started) and not _MOVED.match(call.started)
    return (generic and not meant) or (not generic and any(_named(w, call.command.raw) for w in words))


def _ran(call: _Call) -> bool:
    """The call ran and came back clean: not refused, interrupted or failed."""
    return (call.answered and not call.failed and not call.errored and call.command is not None
            and not NOT_A_FAILURE.search(call.result[:400]))


def _hang_name(step: Command) -> str:
    """`git commit`; an interpreter by what it runs (`python manage.py`), not by itself."""
    if step.exe in _INTERPRETERS and not step.sub and step.targets:
        return f"{step.exe} {step.targets[0]}"
    return " ".join(x for x in (step.exe, step.sub) if x) or step.display


def _same_program(cmd: Command, other: Command) -> bool:
    return cmd.exe == other.exe and cmd.sub == other.sub


def hung_commands(transcript: Iterable[Any], rel: Callable[[str], str]) -> list[Draft]:
    """A command the agent saw hang (it had not come back when the agent said so: no result, or
    moved to the background past the tool's timeout), what the agent said it waits on, and the
    non-interactive way the session then got past it; keyed by the program and subcommand, so a
    hang that recurs in a later session is the same pitfall. A hang a later plain run of the same
    command no longer shows was a bug the session fixed, not a pitfall of this place."""
    calls, prose = _walk(transcript, rel)
    drafts: dict[str, Draft] = {}
    dropped: set[str] = set()
    steps_of = {c.id: [(part, _step(c.command, part, rel)) for part in _steps_of(c.command)]
                for c in calls if c.command is not None}
    for at, (pos, text) in enumerate(prose):
        sentences = [" ".join(_unbold(x).split()) for x in _sentences(text)]
        for n, sentence in enumerate(sentences):
            said = _HUNG.match(sentence)  # anchored: "If the hook ever hangs…" is no report of one
            if not said:
                continue
            words = [w.lower() for w in (said["code"].split() if said["code"] else [said["w1"], said["w2"]]) if w]
            generic = words[-1] in _GENERIC
            hung = next((c for c in reversed(calls) if _hanging(c, pos, words, generic)), None)
            if hung is None or hung.command is None:
                continue
            steps = steps_of[hung.id]
            matching = [st for st in steps if not generic and all(_named(w, st[0]) for w in words)] or \
                [st for st in steps if not generic and any(_named(w, st[0]) for w in words)] or steps[-1:]
            step = matching[-1][1]  # the last step of a chain is the one left running
            name = _hang_name(step)
            key = session_key("", "hang", name)
            if key in drafts or key in dropped:
                continue
            later = [c for c in calls if c.pos > pos and _ran(c)]
            if any(not _NON_INTERACTIVE.search(c.command.raw) and any(equivalent(cmd, step) for _, cmd in steps_of[c.id])
                   for c in later if c.command is not None):
                dropped.add(key)  # a plain run of it came back later: a bug, since fixed
                continue
            # what it waits on: this sentence or the next two; in the next two messages, only a
            # sentence that names it or a wait
            said_more = sentence[said.end():].lstrip(" ,:;.")
            here = [said_more, *sentences[n + 1:n + 3]]
            there = [" ".join(_unbold(x).split()) for _, more in prose[at + 1:at + 3]
                     for x in _sentences(more)[:4]]
            there = [x for x in there if _WAITS_ON.search(x) or any(_named(w, x) for w in words if w not in _GENERIC)]
            told = [x.rstrip(" .") for x in here + there if len(x.split()) >= 3 and _WAITS.search(x)
                    and not (_CONDITION.match(x) or _ACTION.match(x) or _INTENT.search(x))]
            why = next((x for x in told if _WAITS_ON.search(x)), told[0] if told else "")
            around = next((" ".join(c.command.raw.split()) for c in later if c.command is not None
                           and _NON_INTERACTIVE.search(c.command.raw)
                           and any(_same_program(cmd, step) for _, cmd in steps_of[c.id])), "")
            how = ("outran the tool's timeout" if _TIMED_OUT.match(hung.started) else
                   "was moved to the background" if hung.started else "had not returned")
            title = f"`{name}` hangs here" + (f": {_short(why, 110)}" if why else "")
            body = [f"`{_short(' '.join(hung.command.raw.split()), 200)}` {how} when the agent said it hangs.",
                    "The agent said: " + sentence + (f" {why}." if why and why not in sentence else "")]
            if around:
                title += f"; `{_short(around, 80)}` got past it"
                body.append(f"Then, without the prompt: `{_short(around, 200)}`")
            drafts[key] = Draft(
                kind="pitfall", title=_short(redact(title), 200), body=redact("\n".join(body)),
                confidence=0.6, importance=0.6, source="rule", key=key, tags=["hang", step.exe])
    return list(drafts.values())


_ELSEWHERE = re.compile(r"\b(?:docker|podman)(?:-compose| compose| container)? (?:run|exec)\b|\bdocker compose\b|"
                        r"\bssh\s|\bkubectl exec\b|\bnix (?:develop|shell|run)\b|\bsudo\s")  # another shell's words
_SEGMENT = r"(?:^|[;&|(]\s*|\b(?:then|do)\s+)"
_INSTALLS = re.compile(r"\b(?:go install|brew install|npm (?:i|install) (?:-g|--global)|pnpm (?:add|i|install) (?:-g|--global)|"
                       r"pipx? install|uv tool install|cargo install|apt(?:-get)? install|gem install)\b")


def _ran_after(later: list[_Call], tool: str) -> str:
    """How a later call ran the tool that was not on PATH (a runner or a path to it), or installed it."""
    for call in later:
        raw = str(call.input.get("command") or "")[:4000]
        if not call.answered or call.command is None or call.errored or _NOT_ON_PATH.search(call.result[:4000]):
            continue
        via = re.search(rf"{_SEGMENT}({_RUN_VIA}\s*{re.escape(tool)})(?![\w-])", raw, re.MULTILINE)
        if via:
            return f"`{' '.join(via.group(1).split())}` runs it"
        for segment in re.split(r"&&|\|\||;|\|", raw):
            if _INSTALLS.search(segment) and re.search(rf"\b{re.escape(tool)}\b", segment) and not call.failed:
                return f"installed with `{_short(' '.join(segment.split()), 100)}`"
    return ""
