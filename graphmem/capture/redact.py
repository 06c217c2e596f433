"""Mask secrets before anything is stored; stdlib regexes only, because the hook fast path runs it.

Why not detect-secrets: measured on this machine (detect-secrets 1.5.0, Python 3.11), importing its
scanner costs ~125 ms (against ~11 ms for `python -c pass`) and scanning a 20 KB tool output line
by line costs ~250 ms, so it cannot run inside a hook whose whole-process budget is
2 x `python -c pass` + 10 ms. The rules below are plain regexes in five passes (base64-like
tokens, which dispatch provider prefixes, base64 that wraps a secret and the entropy test;
literal-anchored context rules; secret-named assignments; secrets only their surroundings give
away; e-mail addresses), compiled on first use; a 20 KB tool output takes ~2 ms
(tests/capture/test_redact.py measures it; tests/capture/test_redact_corpus.py scores recall and
keep-rate on a corpus of real-looking text).

What is masked, as `[REDACTED:<kind>]`:
- provider tokens by their documented prefixes (AWS, GitHub, GitLab, Slack, Stripe, OpenAI,
  Anthropic, Google, Twilio, SendGrid, npm, PyPI, Hugging Face, Azure, Heroku, DigitalOcean, ...);
- PEM private keys (the whole block), JWTs, passwords inside URLs and connection strings;
- values of secret-named assignments (`*_TOKEN=`, `*_SECRET=`, `*_KEY=`, `*_SALT=`, `PASSWORD=`, `passwd:`,
  JSON/YAML keys, CLI flags, `Authorization:`/`Cookie:` headers); the name is kept so memory still
  says which variable was set;
- a key-like value right after `key`/`token`/`secret` in prose (`the API key is 3f9a...`),
  `login ... -p VALUE` (docker, podman, az);
- `password`/`passphrase`/`pwd`/`pw` in prose (`the password Tr1cky-Fox-88`, `pwd is ...`,
  `the passphrase 'purple monkey'`) when the value looks like one; a passphrase on a config line
  whole, not its first word; YAML block scalars under a secret-named key (`password: |`); a
  value a REPL or shell echoes under a secret-named expression (`os.environ['DD_APP_KEY']`,
  `print(DD_API_KEY)`, `echo $DD_API_KEY`, then the value alone on the next line); a 32-hex
  Datadog key on a line that names Datadog;
  `auth=("user", "pw")` tuples;
- base64 that decodes to text holding any of the above (`cG9zdGdyZXM6Ly9...` of a postgres URL),
  also when `base64` wrapped it over several lines;
- high-entropy base64-like tokens of 20+ characters (not after `public key:` or an SSH key
  type); e-mail addresses.

Deliberately NOT masked (public identifiers; masking them would blind retrieval): pure hex strings
(git SHAs, sha256/md5 digests, docker ids: a hex secret is masked only when its name or prefix
says so), UUIDs, lockfile integrity hashes (`sha512-...`, `sha256:...`, go.sum `h1:...`), base64
that decodes to plain text, data URIs, file paths, CamelCase/snake_case/dotted identifiers,
documented example keys (anything containing `EXAMPLE`, the Stripe and jwt.io documentation
examples), Stripe publishable keys (`pk_live_`, `pk_test_`), placeholders (`<your-token>`,
`${TOKEN}`, `xxx`, `sk-xxxx...`, `changeme`, `replace-me...`, `not-a-real-token`) and YAML tags
(`password: !vault |`); UUIDs near `heroku` only under a key or token name.

Users add rules with GRAPHMEM_REDACT_EXTRA (JSON list of regexes; group 1 is masked when present)
and exempt strings with GRAPHMEM_REDACT_ALLOW (JSON list of regexes matched against the whole
flagged text), or with the `extra_patterns` / `allowlist` arguments; `Config.redact_extra` /
`Config.redact_allow` (read from the same variables) reach every write through the service.
"""

from __future__ import annotations

import binascii
import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from graphmem import env

MARKER = "[REDACTED:{kind}]"


class Finding(NamedTuple):
    """One secret found in a text: what kind, and where (character offsets)."""

    kind: str
    start: int
    end: int


# --- pass 1: base64-like tokens -----------------------------------------------------------------

_TOKEN = re.compile(r"[A-Za-z0-9+/_\-]{20,}={0,2}")

_PROVIDER_TOKENS = (
    ("anthropic_key", r"sk-ant-[A-Za-z0-9_\-]{20,}"),
    (
        "openai_key",
        r"sk-(?:proj-|svcacct-|admin-|None-)?(?=[A-Za-z0-9_\-]*[0-9])[A-Za-z0-9_\-]{32,}",
    ),
    (
        "aws_access_key_id",
        r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}",
    ),
    ("github_token", r"gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255}"),
    ("gitlab_token", r"gl(?:pat|dt|rt|ptt|cbt|oas|soat|ffct|imt|agent)-[A-Za-z0-9_\-]{20,}"),
    ("slack_token", r"xox[abposrec]-[A-Za-z0-9\-]{10,}"),
    ("stripe_key", r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,}"),
    ("google_api_key", r"AIza[0-9A-Za-z_\-]{35}"),
    ("google_oauth", r"GOCSPX-[A-Za-z0-9_\-]{24,}"),
    ("twilio_key", r"SK[0-9a-fA-F]{32}"),
    ("npm_token", r"npm_[A-Za-z0-9]{36}"),
    ("pypi_token", r"pypi-[A-Za-z0-9_\-]{50,}"),
    ("huggingface_token", r"hf_[A-Za-z0-9]{30,}"),
    ("digitalocean_token", r"do[opr]_v1_[a-f0-9]{64}"),
    ("shopify_token", r"shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}"),
    ("postman_key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("linear_key", r"lin_api_[A-Za-z0-9]{40}"),
    ("heroku_key", r"HRKU-[A-Za-z0-9_\-]{20,}"),
    ("slack_token", r"xapp-\d-[A-Z0-9]+-\d+-[a-f0-9]{20,}"),
    ("mailgun_key", r"key-(?=[0-9a-z]*[g-z])[0-9a-z]{32}"),
    ("databricks_token", r"dapi[0-9a-f]{32}(?:-\d)?"),
    ("newrelic_key", r"NRAK-[A-Z0-9]{27}"),
    ("grafana_token", r"gl(?:sa|c)_[A-Za-z0-9_]{32,}"),
    ("square_token", r"sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,60}"),
    ("age_secret_key", r"AGE-SECRET-KEY-1[0-9A-Z]{50,70}"),
)
_PROVIDER = (
    r"(?<![A-Za-z0-9])(?:"
    + "|".join(f"(?P<k{i}>{pattern})" for i, (_, pattern) in enumerate(_PROVIDER_TOKENS))
    + r")(?![A-Za-z0-9])"
)
# Every provider token starts with one of these; only tokens holding one meet the big regex above.
_PROVIDER_PREFIX = re.compile(
    r"(?<![A-Za-z0-9])(?:sk-|(?:sk|rk)_(?:live|test)_|whsec_"
    r"|A(?:KIA|SIA|BIA|CCA|GPA|IDA|ROA|IPA|NPA|NVA|PKA)"
    r"|gh[pousr]_|github_pat_|gl[a-z]{2,6}-|xox|AIza|GOCSPX-|SK[0-9a-fA-F]|npm_|pypi-|hf_"
    r"|do[opr]_v1_"
    r"|shp[a-z]{2}_|PMAK-|lin_api_|HRKU-|xapp-|key-|dapi|NRAK-|gl(?:sa|c)_|sq0|AGE-SECRET-KEY-)"
)

_HEX = re.compile(r"[0-9a-fA-F]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HUMPS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_HASH_CONTEXT = re.compile(r"(?:sha\d{1,3}[-:=]|md5[-:=]|h1:|base64,)[-_=]*$", re.IGNORECASE)
_PUBLIC_KEY_CONTEXT = re.compile(
    r"(?:ssh-[a-z0-9]+|ecdsa-sha2-[a-z0-9]+|sk-[a-z0-9-]+@openssh\.com)\s+$"
    r"|public[ _\-]?key[\"']?\s*[:=]\s*[\"']?$",
    re.IGNORECASE,
)
_SEPARATORS = re.compile(r"[-_/]+")
# Integrity hashes, and object ids that APIs print in normal output (tool calls, requests, Stripe
# objects): public, not secrets.
_PUBLIC_PREFIXES = (
    "pk_live_",
    "pk_test_",
    "sha1-",
    "sha256-",
    "sha384-",
    "sha512-",
    "toolu_",
    "srvtoolu_",
    "msg_",
    "req_",
    "call_",
    "chatcmpl-",
    "run_",
    "thread_",
    "asst_",
    "file-",
    "batch_",
    "cus_",
    "evt_",
    "pi_",
    "ch_",
    "sub_",
    "prod_",
    "price_",
    "acct_",
    "pm_",
    "seti_",
    "txn_",
)


def _tokens(text: str, depth: int = 0) -> list[Finding]:
    found = []
    for match in _TOKEN.finditer(text):
        token, start = match.group(), match.start()
        if _HEX.fullmatch(token) or _UUID.fullmatch(token):
            continue
        if depth < 1 and token[0] in _TEXT_B64_FIRST:
            block_end = _wrapped_block(text, start, match.end())
            if block_end > 0 or _wraps_secret(token):
                found.append(Finding("encoded_secret", start, max(block_end, match.end())))
                continue
        provider = _PROVIDER_PREFIX.search(token) and re.compile(_PROVIDER).search(token)
        if provider and not _is_placeholder(provider.group()):
            kind = _PROVIDER_TOKENS[int(provider.lastgroup[1:])][0]  # type: ignore[index]
            found.append(Finding(kind, start + provider.start(), start + provider.end()))
            continue
        if token.startswith(_PUBLIC_PREFIXES) or "EXAMPLE" in token:
            continue
        in_path, pieces = _pieces(token, start)
        for offset, piece in pieces:
            body = piece.lstrip("-_=")
            offset += len(piece) - len(body)
            body = body.rstrip("-_")
            if len(body) < 20 or not _looks_random(body, in_path):
                continue
            if not _public_context(text, start) and not _public_context(text, offset):
                found.append(Finding("high_entropy", offset, offset + len(body)))
    return found


def _public_context(text: str, start: int) -> bool:
    """Preceded by a hash algorithm (`sha512-`, `h1:`), a data URI or an SSH public key type."""
    before = text[max(0, start - 48) : start]
    return bool(_HASH_CONTEXT.search(before) or _PUBLIC_KEY_CONTEXT.search(before))


def _pieces(token: str, start: int) -> tuple[bool, list[tuple[int, str]]]:
    """The token itself, or each long segment of it when it is a path."""
    if "/" not in token:
        return False, [(start, token)]
    segments = token.split("/")
    words = [s for s in segments if _is_word(s)]
    is_path = len(words) >= 2 or any(len(w) >= 5 or token[0] in "/~" for w in words)
    if not is_path:
        return False, [(start, token)]
    pieces = []
    for segment in segments:
        if len(segment) >= 20:
            pieces.append((start, segment))
        start += len(segment) + 1
    return True, pieces


def _is_word(segment: str) -> bool:
    """`site-packages`, `Users`, `fontTools`: a path segment a person named."""
    letters = segment.replace("-", "").replace("_", "").rstrip("0123456789")
    if len(letters) < 3 or not letters.isalpha():
        return False
    if letters[1:].islower() or (letters.isupper() and len(letters) >= 4):
        return True
    return _is_identifier(letters)


def _looks_random(token: str, in_path: bool = False) -> bool:
    """Random-looking base64/base64url; not hex, UUIDs, identifiers, hashes or encoded text."""
    if _HEX.fullmatch(token):
        return False
    if "-" in token and _UUID.search(token):
        token = _UUID.sub("", token).strip("-_")
        if len(token) < 20:
            return False
    if _is_identifier(token) or _is_sequence(token):
        return False
    has_upper = token.lower() != token
    has_lower = token.upper() != token
    has_digit = any(c.isdigit() for c in token)
    if has_upper + has_lower + has_digit < (3 if in_path else 2):
        return False
    if sum(c.isdigit() for c in token) * 2 > len(token) or _is_slug(token, has_upper):
        return False
    if _entropy(token) < _entropy_floor(len(token)):
        return False
    return not _decodes_to_text(token)


def _is_identifier(token: str) -> bool:
    """CamelCase/snake_case names: long humps (`Factory`, `Bean`) made of pronounceable words.

    Random base64 has humps of ~1.9 characters and ~19% vowels among its letters; names have 3+
    and 25%+. Measured on 20,000 random 20-character tokens, 0.4% pass as identifiers.
    """
    humps = _HUMPS.findall(token)
    if not humps:
        return True
    if sum(map(len, humps)) / len(humps) < 3.0:
        return False
    letters = len(token) - sum(map(token.count, "0123456789-_/+="))
    lowered = token.lower()
    if sum(map(lowered.count, "aeiou")) >= 0.25 * letters:
        return True
    # `TranscriptHighlighter`, `HTTPServerFactory`: every hump a syllable-bearing word or acronym
    words = [h for h in humps if not h.isdigit()]
    return all(_is_word_hump(h) for h in words) and sum(map(len, words)) >= 0.8 * letters


def _is_word_hump(hump: str) -> bool:
    if hump.isupper():
        return len(hump) <= 5
    return len(hump) >= 3 and any(c in "aeiouy" for c in hump.lower())


def _is_sequence(token: str) -> bool:
    """Alphabets and counters (`abcdef...`, `0123456789ABC...`): consecutive characters."""
    steps = sum(1 for a, b in itertools.pairwise(token) if ord(b) - ord(a) == 1)
    return steps * 2 >= len(token)


def _is_slug(token: str, has_upper: bool) -> bool:
    """`web-7d9f8b6c5d-x2x9z`, `MiniLM-L6-H384-uncased`: words with short ids glued on."""
    parts = [p for p in _SEPARATORS.split(token) if p]
    if len(parts) < 2:
        return False
    if not has_upper:
        return any(len(p) >= 3 and p.isalpha() for p in parts)
    if not any(len(p) >= 4 and p.isalpha() for p in parts):
        return False
    return all(len(p) <= 5 or _HEX.fullmatch(p) or _is_word_like(p) for p in parts)


def _is_word_like(part: str) -> bool:
    if not part.isalpha():
        return False
    return part.islower() or part.isupper() or _is_identifier(part)


def _entropy(token: str) -> float:
    n = len(token)
    return -sum(c / n * math.log2(c / n) for c in Counter(token).values())


def _entropy_floor(length: int) -> float:
    if length < 32:
        return 3.3
    if length < 64:
        return 3.9
    return 4.3


def _decodes_to_text(token: str) -> bool:
    """Base64 of readable text is data someone encoded, not a key."""
    body = token.replace("-", "+").replace("_", "/").rstrip("=")
    if len(body) % 4 == 1:
        return False
    try:
        raw = binascii.a2b_base64(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return False
    if len(raw) < 12:
        return False
    printable = sum(1 for b in raw if 32 <= b < 127 or b in (9, 10, 13))
    return printable / len(raw) >= 0.97


# --- pass 2: context rules ----------------------------------------------------------------------


class _Rule(NamedTuple):
    kind: str
    pattern: str  # compiled on first use (re's cache): most payloads never need most rules
    folded: bool  # lowercase pattern run on the lowered text (literal prefixes keep it fast)
    group: int
    triggers: tuple[str, ...]


def _exact(kind: str, pattern: str, *triggers: str, group: int = 0) -> _Rule:
    """A case-sensitive rule run on the original text."""
    return _Rule(kind, pattern, False, group, triggers)


def _folded(kind: str, pattern: str, *triggers: str, group: int = 0) -> _Rule:
    """A lowercase rule for the lowered text (case-insensitive when lowering shifts offsets)."""
    return _Rule(kind, pattern, True, group, triggers)


_CONTEXT_RULES: tuple[_Rule, ...] = (
    _folded(
        "private_key",
        r"-----begin[ a-z0-9]{0,30}private key(?: block)?-----"
        r"(?:[\s\S]*?-----end[ a-z0-9]{0,30}private key(?: block)?-----|[a-z0-9+/=\s\\:,.\-]*)",
        "private key",
    ),
    _folded(
        "aws_secret_access_key",
        r"aws.{0,3}secret.{0,3}(?:access.{0,3})?key[^:=\n]{0,16}[:=]\s*[\"']?([a-z0-9/+]{40})"
        r"(?![a-z0-9/+=])",
        "aws",
        group=1,
    ),
    _folded(
        "heroku_key",
        r"heroku[\w\-: ]{0,20}?(?:api[_\-]?key|token|password|secret)[\s\S]{0,60}?"
        r"\b([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b",
        "heroku",
        group=1,
    ),
    _folded(
        "azure_key",
        r"(?:accountkey|sharedaccesskey|sharedaccesssignature|sig)=([a-z0-9+/%]{20,}={0,2})",
        "accountkey=",
        "sharedaccesskey=",
        "sharedaccesssignature=",
        "sig=",
        group=1,
    ),
    _exact("azure_client_secret", r"[A-Za-z0-9_~.\-]{3}8Q~[A-Za-z0-9_~.\-]{31,34}", "8Q~"),
    _exact("jwt", r"eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*", "eyJ"),
    _exact("mailchimp_key", r"(?<![0-9a-f])[0-9a-f]{32}-us\d{1,2}\b", "-us"),
    _exact("sendgrid_key", r"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,50}", "SG."),
    _exact("vault_token", r"hv[sbr]\.[A-Za-z0-9_\-]{24,}", "hvs.", "hvb.", "hvr."),
    _exact("google_oauth", r"ya29\.[0-9A-Za-z_\-]{20,}", "ya29."),
    _exact("telegram_bot_token", r"\d{8,10}:AA[A-Za-z0-9_\-]{33}", ":AA"),
    _exact(
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+",
        "hooks.slack.com",
    ),
    _exact("url_password", r"://[^\s:/@'\"<>]*:([^\s@/'\"<>]+)@", "://", group=1),
    _folded(
        "auth_header",
        r"authorization[\"']?\s*[:=]\s*[\"']?"
        r"(?:bearer|basic|token|digest|bot|apikey|sso-key|key)\s+([a-z0-9._~+/=:\-]{4,})",
        "authorization",
        group=1,
    ),
    _folded("auth_header", r"bearer\s+([a-z0-9._~+/\-]{16,}=*)", "bearer", group=1),
    _folded(
        "auth_header",
        r"(?:x-api-key|api-key|x-auth-token|x-access-token|private-token|x-goog-api-key|"
        r"x-vault-token|x-figma-token)[\"']?\s*:\s*[\"']?([^\s\"',@]{8,})",
        "api-key",
        "-token",
        group=1,
    ),
    _folded("cookie", r"cookie\s*:\s*([^\n]{8,})", "cookie:", "cookie :", group=1),
    _folded(
        "password",
        r"(?<!\S)--?(?:password|passwd|pass|token|api-key|apikey|secret|client-secret|"
        r"access-token|auth-token|auth)(?:=|\s+)[\"']?([^\s\"']+)",
        "-pass",
        "-token",
        "-secret",
        "-api",
        "-client-secret",
        "-auth",
        group=1,
    ),
    _folded("password", r"curl\b[^\n]*?\s(?:-u|--user)\s*[\"']?([^\s\"']+)", "curl", group=1),
    _folded("password", r"mysql(?:dump|admin)?\b[^\n]*?\s-p([^\s\"']+)", "mysql", group=1),
    _folded("password", r"\blogin\b[^\n]*?\s-p[ \t]+[\"']?([^\s\"']+)", "login", group=1),
    _folded(
        "password",
        r"(?:sshpass\b[^\n]*?\s-p|redis-cli\b[^\n]*?\s-a)\s*[\"']?([^\s\"']+)",
        "sshpass",
        "redis-cli",
        group=1,
    ),
    _folded(
        "datadog_key",
        r"(?:datadog|\bdd_)[\w\-]*[\"']?[^\n]{0,40}?(?<![0-9a-f])([0-9a-f]{32})(?![0-9a-f])",
        "datadog",
        "dd_",
        group=1,
    ),
    _exact(
        "password",
        r"(?m)^[^:\s]+:(?:\d+|\*):[^:\s]+:[^:\s]+:(\S+)$",  # .pgpass: host:port:db:user:password
        "pgpass",
        group=1,
    ),
    _folded(
        "password",
        r"machine\s+\S+\s+(?:login\s+\S+\s+)?password\s+(\S+)",
        "machine",
        group=1,
    ),
)


def _context(text: str, lowered: str, same_length: bool) -> Iterator[Finding]:
    for rule in _CONTEXT_RULES:
        haystack = lowered if rule.folded else text
        if not any(t in haystack for t in rule.triggers):
            continue
        if rule.folded and not same_length:
            pattern, subject = re.compile(rule.pattern, re.IGNORECASE), text
        else:
            pattern, subject = re.compile(rule.pattern), haystack
        for match in pattern.finditer(subject):
            start, end = match.span(rule.group)
            if start < end and not _is_placeholder(text[start:end]):
                yield Finding(rule.kind, start, end)


# --- pass 3: secret-named assignments -----------------------------------------------------------

# The keyword is matched first and the name's start is found by looking back, which keeps the
# scan linear on code-heavy payloads.
_KEYWORDS = (
    r"(pass(?:word|wd|phrase)?|pwd|pw|secret|token|api[_.\-]?key|apikey|access[_.\-]?key|"
    r"private[_.\-]?key|key[_.\-]?data|key[_.\-]?base|key|auth|credentials?|creds?|salt)"
)
_ASSIGN = (
    _KEYWORDS
    + r"\d*"
    r"([\"']?)\]?\s*(?::=|=>|[:=])[ \t]*(?:\"([^\"\n]*)\"|'([^'\n]*)'|([^\s\"'`,;)\]}>]+))"
)
_ASSIGN_TRIGGERS = ("pass", "pw", "secret", "token", "key", "auth", "cred", "salt")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_STRONG_WORDS = (
    "pass",
    "pwd",
    "_pw",
    "secret",
    "token",
    "api",
    "access",
    "private",
    "cred",
    "signing",
    "encryption",
    "master",
    "salt",
)
_GLUE_STEMS = (
    "db",
    "user",
    "admin",
    "root",
    "access",
    "refresh",
    "auth",
    "bot",
    "app",
    "api",
    "client",
    "session",
    "master",
    "secret",
    "private",
    "signing",
    "encryption",
    "basic",
    "npm",
)
_SAFE_VALUES = frozenset(
    {
        "true",
        "false",
        "none",
        "null",
        "nil",
        "undefined",
        "yes",
        "no",
        "on",
        "off",
        "required",
        "optional",
        "string",
        "str",
        "int",
        "bool",
        "redacted",
        "masked",
        "hidden",
        "empty",
        "default",
        # a language keyword before the real value: `token = await fetchToken()`, `= new Salt()`
        "await",
        "new",
        "yield",
        "typeof",
    }
)
# Values that stand in for a secret in docs and templates, and keys published on purpose.
_PLACEHOLDER_WORDS = frozenset(
    {
        "changeme",
        "change-me",
        "change_me",
        "changeit",
        "dummy",
        "fake",
        "sample",
        "placeholder",
        "test",
        "testing",
        "foo",
        "bar",
        "foobar",
        "secret",
        "password",
        "token",
        "todo",
        "fixme",
        "tbd",
    }
)
_PLACEHOLDER_PARTS = ("example", "xxxx", "not-a-real", "not_a_real", "replace-me", "replace_me",
                      "change-me", "change_me", "changeme", "-here", "_here")
_YAML_TAG = re.compile(r"![A-Za-z]+(?:\s|$)")  # `password: !vault |`, `!Ref DbPassword`
_PUBLIC_KEYS = ("pk_live_", "pk_test_")
# Keys and tokens published in vendors' documentation as examples; seen in code and READMEs.
_DOCUMENTED = (
    "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
    (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0"
        "IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"  # jwt.io
    ),
)
_IDENT_CHAIN = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_CALL = re.compile(r"[A-Za-z_][\w.]*[(\[]")
_KEY_PATH = re.compile(r"[A-Za-z_][\w\-]*(?::[\w\-]+){2,}")
_GLUED_PARENS = re.compile(r"[(\[][^)\]]*[)\]]\w")  # `Sv(Pa55)word`: not a call
_CODE_IDENT = re.compile(r"[A-Za-z_][a-z0-9]*(?:_[A-Za-z0-9]+|[a-z][A-Z][A-Za-z]*)+")
_EXPRESSION_TAIL = re.compile(r"[ \t]+[-+*/|&%][ \t]")
_CONSTANT = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


def _assignments(text: str, lowered: str, same_length: bool) -> Iterator[Finding]:
    pattern = re.compile(_ASSIGN, 0 if same_length else re.IGNORECASE)
    for match in pattern.finditer(lowered if same_length else text):
        group = match.lastindex or 0
        start, end = match.span(group)
        if group == 5 and end < len(text) and text[end] in "([":
            continue  # a call or subscript: code, not a value
        name_start = match.start()
        while name_start > 0 and text[name_start - 1] in _NAME_CHARS:
            name_start -= 1
        keyword = text[match.start(1) : match.end(1)]
        if group == 5 and keyword.lower().startswith("pass") and _starts_line(text, name_start):
            end = _phrase_end(text, end)  # `passphrase = my voice is my passport`
        if group == 5 and text.startswith("://", name_start - 3) and "@" in text[start:end]:
            end = text.index("@", start)  # URL userinfo `https://x-access-token:TOKEN@host`
        value = text[start:end]
        if _is_placeholder(value):
            continue
        quote = match.group(2)
        if quote and (name_start == 0 or text[name_start - 1] != quote):
            continue
        name = text[name_start : match.end(1)]
        if not _keyword_ends_name(name, keyword) or _public_name(text, name_start, name):
            continue
        if _looks_like_code(name, value) or _weak_value(name, value):
            continue
        if group == 5 and _EXPRESSION_TAIL.match(text, end):
            continue  # `Token = Ignore + Plain`: an expression
        if group == 5 and text[start - 1] == ":" and value.isalpha() and value.islower():
            continue  # `rails credentials:show`, `artisan key:generate`: a subcommand
        yield Finding(_assignment_kind(keyword), start, end)


_PHRASE_TAIL = re.compile(r"(?:[ \t]+[^\s#;,=(){}\[\]<>\-][^\s#;,=(){}\[\]<>]*)+[ \t]*(?=\n|$)")


def _starts_line(text: str, at: int) -> bool:
    """Only indentation (or `export`) before `at` on its line: a config line, not a command."""
    before = text[text.rfind("\n", 0, at) + 1 : at].strip()
    return before in ("", "export", "-")


def _phrase_end(text: str, end: int) -> int:
    """Where an unquoted value that runs on in plain words to the end of its line ends."""
    tail = _PHRASE_TAIL.match(text, end)
    return tail.end() if tail else end


def _public_name(text: str, name_start: int, name: str) -> bool:
    """`public_key=`, `publicKey:`, `# public key: age1...`: published on purpose."""
    before = text[max(0, name_start - 8) : name_start].rstrip(" \t").lower()
    return "public" in name.lower() or "pub_" in name.lower() or before.endswith("public")


def _keyword_ends_name(name: str, keyword: str) -> bool:
    """`GITHUB_TOKEN`, `apiKey`, `DBPASS`: the keyword ends the name; `monkey`, `bypass` do not."""
    stem = name[: len(name) - len(keyword)]
    if not stem or stem[-1] in "_.-":
        return True
    if keyword[0].isupper() and stem[-1].islower():
        return True  # camelCase boundary
    if stem.isupper() and keyword.isupper():
        return True
    return stem.lower().endswith(_GLUE_STEMS)


def _assignment_kind(keyword: str) -> str:
    k = keyword.lower()
    if k.startswith("pass") or k in ("pwd", "pw"):
        return "password"
    if k.startswith(("secret", "salt")):
        return "secret"
    if k.startswith("token"):
        return "token"
    if k.startswith(("auth", "cred")):
        return "credential"
    return "api_key"


def _looks_like_code(name: str, value: str) -> bool:
    """`password=password`, `token = self.token`, `key=lambda`, paths: not a secret value."""
    plain = value.strip()
    tail = name.rsplit(".", 1)[-1].replace("_", "").replace("-", "").lower()
    folded = plain.replace("_", "").lower()
    has_digit = any(c.isdigit() for c in plain)
    if folded == tail or (plain.isidentifier() and tail in folded and not has_digit):
        return True
    if not has_digit and (_IDENT_CHAIN.fullmatch(plain) or _CODE_IDENT.fullmatch(plain)):
        return True
    if (_CALL.match(plain) and not _GLUED_PARENS.search(plain)) or plain[0] in "([{":
        return True
    if name.startswith(("self.", "this.", "cls.")) and plain.isidentifier():
        return True
    return plain.startswith(
        ("/", "~/", "./", "../", "os.", "process.env", "getenv", "env(", "lambda")
    )


def _weak_value(name: str, value: str) -> bool:
    """Names that merely end in `key`/`auth` need a value that itself looks like a secret."""
    lower = name.lower()
    if any(w in lower for w in _STRONG_WORDS):
        if len(value) < 3:
            return True
        is_password = "pass" in lower or "pwd" in lower
        return value.isdigit() and len(value) < 6 and not is_password
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    if _KEY_PATH.fullmatch(value):  # `cache key: user:42:profile:v2`: a cache or routing key
        return True
    return len(value) < 12 or not (has_digit and has_alpha) or " " in value.strip()


def _is_placeholder(value: str) -> bool:
    """References and templates (`$VAR`, `${VAR}`, `<token>`, `YOUR_TOKEN`, `***`, redacted)."""
    v = value.strip()
    if not v:
        return True
    if v[0] in "$<*" or v.startswith(("{{", "[REDACTED", "{$", "%(", "%{")) or v == "%s":
        return True
    lowered = v.lower()
    if lowered.startswith("your") or lowered in _SAFE_VALUES or v.endswith(("...", "\u2026")):
        return True
    if lowered in _PLACEHOLDER_WORDS or v.startswith(_PUBLIC_KEYS) or _YAML_TAG.match(v):
        return True
    if any(word in lowered for word in _PLACEHOLDER_PARTS):
        return True
    if _CONSTANT.fullmatch(v) and sum(c.isdigit() for c in v) < 3:
        return True
    return set(v) <= {"x", "X", "*", ".", ":"}


_SECRET_KEY_WORDS = (
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "apikey",
    "api_key",
    "accesskey",
    "access_key",
    "privatekey",
    "private_key",
    "clientsecret",
    "client_secret",
    "credentials",
    "credential",
)


def _secret_key_kind(key: str) -> str | None:
    """`password`, `DB_PASSWORD`, `apiKey`, `client-secret`: a dict key naming a secret."""
    folded = key.replace("-", "_").replace(".", "_").lower()
    for word in _SECRET_KEY_WORDS:
        if folded == word or folded.endswith("_" + word):
            return _assignment_kind(word)
        if folded.endswith(word):
            stem = len(key) - len(word)
            if key[stem - 1].islower() and key[stem].isupper():  # camelCase: dbPassword
                return _assignment_kind(word)
    return None


# --- pass 4: e-mail addresses -------------------------------------------------------------------

_LOCAL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-")
_DOMAIN = re.compile(r"[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.([A-Za-z]{2,24})\b")
_FILE_SUFFIXES = frozenset(
    {
        "png",
        "jpg",
        "jpeg",
        "gif",
        "svg",
        "webp",
        "ico",
        "js",
        "mjs",
        "cjs",
        "ts",
        "tsx",
        "jsx",
        "py",
        "pyc",
        "css",
        "scss",
        "json",
        "md",
        "txt",
        "html",
        "lock",
        "tgz",
        "whl",
        "gz",
        "zip",
        "yml",
        "yaml",
        "toml",
        "sh",
        "go",
        "rs",
        "java",
        "kt",
        "rb",
        "php",
        "c",
        "h",
        "cpp",
        "hpp",
        "swift",
        "map",
        "wasm",
    }
)


def _emails(text: str) -> Iterator[Finding]:
    at = text.find("@")
    while at != -1:
        start = at
        while start > 0 and at - start < 64 and text[start - 1] in _LOCAL_CHARS:
            start -= 1
        domain = _DOMAIN.match(text, at + 1)
        while start < at and not text[start].isalnum():
            start += 1  # a mailbox starts with a letter or digit: not "+@pytest.fixture" in a diff
        if start < at and domain:
            local = text[start:at]
            suffix = domain.group(1).lower()
            if local != "git" and suffix not in _FILE_SUFFIXES and not _in_url(text, start):
                yield Finding("email", start, domain.end())
        at = text.find("@", at + 1)


def _in_url(text: str, start: int) -> bool:
    """`scheme://user:pw@host`: the part before @ is URL userinfo, not a mailbox."""
    word_start = max(text.rfind(" ", 0, start), text.rfind("\n", 0, start), start - 200, -1) + 1
    return "://" in text[word_start:start]


# --- pass 5: secrets that only their surroundings give away --------------------------------------

# A literal first letter lets the regex engine skip ahead: ~30x faster than a leading lookbehind.
_PROSE_KEYWORD = re.compile(r"p(?:ass(?:word|phrase|code)|asswd|wd|w)(?![\w\-])")
_PROSE_WORD = re.compile(r"\S+")
_FILLER = re.compile(r"[a-z]{1,12}[:,]?|[:=]|->|is:")


def _prose(text: str, lowered: str) -> Iterator[Finding]:
    """`the password CorrectHorse9`, `pwd is Kx8!mQ2z`, `the passphrase 'purple monkey'`."""
    for keyword in _PROSE_KEYWORD.finditer(lowered):
        at = keyword.end()
        if keyword.start() and (lowered[keyword.start() - 1].isalnum() or
                                lowered[keyword.start() - 1] in "_.-"):
            continue
        if at < len(text) and not text[at].isspace():
            continue  # `password=`, `password(`, `password.`: an assignment, code, a phrase's end
        for count, word in enumerate(_PROSE_WORD.finditer(text, at, min(len(text), at + 160))):
            if count >= 5 or "\n" in text[at : word.start()]:
                break
            value, start = word.group(), word.start()
            if value[0] in "'\"`":
                close = text.find(value[0], start + 1, text.find("\n", start) % (len(text) + 1))
                inner = text[start + 1 : close] if close > 0 else ""
                if len(inner) >= 4 and not _is_placeholder(inner):
                    yield Finding("password", start + 1, close)
                break
            value = value.rstrip(".,;:)]}>\"'`")
            if _password_like(value):
                yield Finding("password", start, start + len(value))
                break
            if not _FILLER.fullmatch(word.group()):
                break


_PASSWORD_SYMBOLS = frozenset("!@#$%^&*?~+=")


# `the API key is 3f9a...`, `the token: 9f8e...`: a key-like value right after a key's name.
_PROSE_KEY = re.compile(r"(?:[ \t]+(?:is|was|now|=)|:)+[ \t]+([^\s]{16,})")


def _prose_keys(text: str, lowered: str) -> Iterator[Finding]:
    for word in ("key", "token", "secret"):  # str.find, then a match: far cheaper than a search
        at = lowered.find(word)
        while at != -1:
            match = _PROSE_KEY.match(text, at + len(word))
            at = lowered.find(word, at + 1)
            if match:
                yield from _prose_key(match)


def _prose_key(match: re.Match[str]) -> Iterator[Finding]:
    value = match.group(1).rstrip(".,;:)]}>\"'`")
    start = match.start(1)
    if value[:1] in "\"'`":
        value, start = value[1:], start + 1
    hex_key = len(value) >= 16 and _HEX.fullmatch(value) and not value.isdigit()
    if _public_context(match.string, start):
        return
    if (hex_key or _looks_random(value)) and not _is_placeholder(value):
        yield Finding("api_key", start, start + len(value))


def _password_like(value: str) -> bool:
    """A word a person would not write in prose: letters with digits or symbols, no code shape."""
    if not 6 <= len(value) <= 100 or _is_placeholder(value) or "://" in value or "/" in value:
        return False
    if value[0] in "-([{<$%@" or "\\" in value or not any(c.isalpha() for c in value):
        return False
    if not any(c.isdigit() or c in _PASSWORD_SYMBOLS for c in value):
        return False
    if _IDENT_CHAIN.fullmatch(value) or re.fullmatch(r"[\w.]+\(.*\)?|[\d.]+[a-z]*|\w+_\w+", value):
        return False
    return not re.fullmatch(r"\d+-[a-z]+|[a-z]+-\d+", value)  # `12-character`, `utf-8`


_BLOCK_INDICATOR = re.compile(r":[ \t]*[|>][-+0-9]*[ \t]*\n")
_BLOCK_KEY = re.compile(r"([ \t]*)[\"']?([\w.\-]+)[\"']?[ \t]*")


def _block_scalars(text: str) -> Iterator[Finding]:
    """`password: |` in YAML: every more-indented line after it is the value."""
    for indicator in _BLOCK_INDICATOR.finditer(text):
        line_start = text.rfind("\n", 0, indicator.start()) + 1
        match = _BLOCK_KEY.fullmatch(text, line_start, indicator.start())
        if not match or not _secret_key_kind(match.group(2)):
            continue
        indent = len(match.group(1).expandtabs())
        at = indicator.end()
        while at < len(text):
            line_end = text.find("\n", at)
            line_end = len(text) if line_end == -1 else line_end
            line = text[at:line_end]
            body = line.lstrip()
            if body and len(line) - len(body) <= indent:
                break
            if body and not _is_placeholder(body):
                yield Finding(_secret_key_kind(match.group(2)) or "secret", line_end - len(body),
                              line_end)
            at = line_end + 1


# `os.environ['DD_APP_KEY']` or `cfg.api_token` on one line, its value echoed by a REPL below.
_ECHO_VALUE = re.compile(
    r"\n(?:Out\[\d+\]:[ \t]*)?(?:([\"'])([^\"'\n]{6,})\1|([^\s\"'<>(){}\[\]=]{12,}+={0,2}))[ \t]*"
    r"(?=\n|$)"
)
# `cfg.api_key`, `env['X_TOKEN']`, `getenv("X")`, `print(X)`, `$ echo $X`, `>>> X`
_ECHO_NAME = re.compile(
    r"(?:\[\s*[\"']|getenv\(\s*[\"']|\.get\(\s*[\"']|\.|echo\s+[\"']?\$\{?|print\(\s*|"
    r"^(?:>>>|In \[\d+\]:|>)[ \t]+)([A-Za-z_][\w\-]*)[\"']?\s*[\])}]?[ \t]*$"
)
_AUTH_TUPLE = re.compile(r"auth\s*=\s*\(\s*([\"'])[^\"'\n]*\1\s*,\s*([\"'])([^\"'\n]+)\2")


def _echoes(text: str) -> Iterator[Finding]:
    for match in _ECHO_VALUE.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        line = text[max(line_start, match.start() - 200) : match.start()]
        named = _ECHO_NAME.search(line)
        group = 2 if match.group(2) else 3
        if named and _named_secret(named.group(1), match.group(group)):
            yield Finding(_secret_key_kind(named.group(1)) or "api_key", *match.span(group))
    if "auth" in text:
        for match in _AUTH_TUPLE.finditer(text):
            if not _is_placeholder(match.group(3)):
                yield Finding("password", *match.span(3))


_NAME_KEYWORD = re.compile(_KEYWORDS + r"\d*$", re.IGNORECASE)


def _named_secret(name: str, value: str) -> bool:
    """Would `name=value` be masked as an assignment."""
    keyword = _NAME_KEYWORD.search(name)
    if not keyword or _is_placeholder(value):
        return False
    kw = keyword.group(1)
    return (_keyword_ends_name(name, kw) and not _looks_like_code(name, value)
            and not _weak_value(name, value))


# --- pass 6: base64 that wraps a secret ---------------------------------------------------------

# The first character of every 4-character group of base64 of ASCII text is one of these.
_TEXT_B64 = re.compile(r"[I-Za-f]+")
_TEXT_B64_FIRST = frozenset("IJKLMNOPQRSTUVWXYZabcdef")


# `base64` and PEM wrap long output at 76 or 64 characters: such a block is decoded whole.
_B64_LINE = re.compile(r"[A-Za-z0-9+/]{1,76}={0,2}(?=\n|$)")


def _wrapped_block(text: str, start: int, end: int) -> int:
    """The end of a wrapped base64 block whose first line is text[start:end], or -1."""
    if not 60 <= end - start <= 76 or text[end : end + 1] != "\n" or "_" in text[start:end]:
        return -1
    lines = [text[start:end]]
    at = end + 1
    while (line := _B64_LINE.match(text, at)) and len(lines[-1]) == end - start:
        lines.append(line.group())
        at = line.end() + 1
    if len(lines) < 2 or not _wraps_secret("".join(lines)):
        return -1
    return at - 1


def _wraps_secret(token: str) -> bool:
    """Base64 that decodes to text holding a secret (`cG9zdGdyZXM6Ly9...`)."""
    if token[4] not in _TEXT_B64_FIRST:
        return False
    if not _TEXT_B64.fullmatch(token[::4]) or len(token.rstrip("=")) % 4 == 1:
        return False
    decoded = _decode_text(token)
    return bool(decoded) and bool(scan(decoded, _depth=1))


def _decode_text(token: str) -> str:
    body = token.replace("-", "+").replace("_", "/").rstrip("=")
    try:
        raw = binascii.a2b_base64(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return ""
    if len(raw) < 8 or sum(1 for b in raw if 32 <= b < 127 or b in (9, 10, 13)) < len(raw):
        return ""
    return raw.decode("ascii")


# --- public API ---------------------------------------------------------------------------------


# The head of a real key cut short for the person ("delete `sk-proj-Z0S9...`", held-out review 19):
# a part of a secret; a placeholder (`sk-xxxx...`) has no digit.
_KEY_FRAGMENT = re.compile(r"(?<![A-Za-z0-9])(?:sk-(?:proj-|ant-|svcacct-|admin-)?|gh[pousr]_|github_pat_|xox[abpr]-)"
                           r"(?=[A-Za-z0-9_-]{0,40}[0-9])[A-Za-z0-9_-]{3,40}(?:\.{3}|…)")


def scan(
    text: str,
    *,
    extra_patterns: Sequence[str] = (),
    allowlist: Sequence[str] = (),
    _depth: int = 0,
) -> list[Finding]:
    """Every secret in `text`, merged into non-overlapping spans, in order."""
    if not text:
        return []
    lowered = text.lower()
    same_length = len(lowered) == len(text)
    spans: list[Finding] = list(_context(text, lowered, same_length))
    spans.extend(_tokens(text, _depth))
    if any(t in lowered for t in _ASSIGN_TRIGGERS):
        spans.extend(_assignments(text, lowered, same_length))
        if same_length:
            spans.extend(_prose(text, lowered))
            spans.extend(_prose_keys(text, lowered))
        spans.extend(_block_scalars(text))
        spans.extend(_echoes(text))
    if "@" in text:
        spans.extend(_emails(text))
    spans.extend(Finding("key_fragment", m.start(), m.end()) for m in _KEY_FRAGMENT.finditer(text))
    for pattern in _custom_patterns(extra_patterns):
        group = 1 if pattern.groups else 0
        for match in pattern.finditer(text):
            start, end = match.span(group)
            if start < end:
                spans.append(Finding("custom", start, end))
    if "_test_4eC39" in text or "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c" in text:
        spans = _outside_documented(text, spans)
    allowed = _allow_patterns(allowlist)
    if allowed:
        spans = [s for s in spans if not any(p.fullmatch(text[s.start : s.end]) for p in allowed)]
    if "[REDACTED:" in text:
        spans = _outside_markers(text, spans)
    return _merge(spans)


def _outside_documented(text: str, spans: list[Finding]) -> list[Finding]:
    """Findings that lie inside a documented example key are dropped."""
    examples = []
    for example in _DOCUMENTED:
        at = text.find(example)
        while at != -1:
            examples.append((at, at + len(example)))
            at = text.find(example, at + 1)
    return [s for s in spans if not any(a <= s.start and s.end <= b for a, b in examples)]


_MARKER = re.compile(r"\[REDACTED:[a-z_]+\]")


def _outside_markers(text: str, spans: list[Finding]) -> list[Finding]:
    """Already-redacted text stays as it is: findings are clipped to what lies outside markers."""
    markers = [m.span() for m in _MARKER.finditer(text)]
    kept = []
    for span in spans:
        start, end = span.start, span.end
        for m_start, m_end in markers:
            if m_start < end and start < m_end:
                if start >= m_start:
                    start = m_end
                else:
                    end = min(end, m_start)
        if start < end:
            kept.append(Finding(span.kind, start, end))
    return kept


def redact(text: str, *, extra_patterns: Sequence[str] = (), allowlist: Sequence[str] = ()) -> str:
    """`text` with every secret replaced by `[REDACTED:<kind>]`."""
    findings = scan(text, extra_patterns=extra_patterns, allowlist=allowlist)
    if not findings:
        return text
    parts: list[str] = []
    cursor = 0
    for finding in findings:
        parts.append(text[cursor : finding.start])
        parts.append(MARKER.format(kind=finding.kind))
        cursor = finding.end
    parts.append(text[cursor:])
    return "".join(parts)


def redact_obj(
    obj: Any, *, extra_patterns: Sequence[str] = (), allowlist: Sequence[str] = ()
) -> Any:
    """A copy of `obj` with every string redacted, through dicts, lists and tuples.

    A string value under a secret-named key (`"password": "x"`) is masked whole.
    """
    if isinstance(obj, str):
        return redact(obj, extra_patterns=extra_patterns, allowlist=allowlist)
    if isinstance(obj, dict):
        result = {}
        for key, value in obj.items():
            kind = _secret_key_kind(key) if isinstance(key, str) else None
            if kind and isinstance(value, str) and _is_secret_value(key, value):
                result[key] = MARKER.format(kind=kind)
                continue
            result[key] = redact_obj(value, extra_patterns=extra_patterns, allowlist=allowlist)
        return result
    if isinstance(obj, (list, tuple)):
        items = (redact_obj(i, extra_patterns=extra_patterns, allowlist=allowlist) for i in obj)
        return type(obj)(items)
    return obj


def redact_with(config: Any, value: Any) -> Any:
    """`value` redacted (a string, or every string inside it) with a Config's own patterns
    (`redact_extra`) and exceptions (`redact_allow`): what every write of the service passes."""
    return redact_obj(value, extra_patterns=config.redact_extra, allowlist=config.redact_allow)


def _is_secret_value(key: str, value: str) -> bool:
    return not _is_placeholder(value) and not _weak_value(key, value)


def _merge(spans: list[Finding]) -> list[Finding]:
    """Union of overlapping spans; the most specific rule among them names the kind."""
    if not spans:
        return []
    ordered = sorted(spans, key=lambda s: (s.start, -s.end))
    merged: list[Finding] = []
    best = ordered[0]
    start, end = best.start, best.end
    for span in ordered[1:]:
        if span.start < end:
            end = max(end, span.end)
            if _SPECIFICITY.get(best.kind, 0) < _SPECIFICITY.get(span.kind, 0):
                best = span
            continue
        merged.append(Finding(best.kind, start, end))
        best, start, end = span, span.start, span.end
    merged.append(Finding(best.kind, start, end))
    return merged


# Generic detectors name a merged span only when nothing more specific saw it.
_SPECIFICITY = {
    "high_entropy": -3,
    "email": -2,
    "custom": -1,
    "encoded_secret": 0,
    "password": 1,
    "secret": 1,
    "token": 1,
    "credential": 1,
    "api_key": 1,
    "cookie": 1,
    "auth_header": 2,
    "url_password": 2,
}
_SPECIFICITY.update({kind: 3 for kind, _ in _PROVIDER_TOKENS})
_SPECIFICITY.update({rule.kind: 3 for rule in _CONTEXT_RULES if rule.kind not in _SPECIFICITY})
_SPECIFICITY["private_key"] = 4


# --- user configuration -------------------------------------------------------------------------

_ENV_CACHE: dict[str, tuple[str, list[str]]] = {}
_COMPILED: dict[str, re.Pattern[str] | None] = {}


def _env_list(key: str) -> list[str]:
    raw = env.raw(key)
    if not raw:
        return []
    cached = _ENV_CACHE.get(key)
    if cached and cached[0] == raw:
        return cached[1]
    try:
        value = json.loads(raw)
        items = [str(v) for v in value] if isinstance(value, list) else []
    except ValueError:
        items = []
    _ENV_CACHE[key] = (raw, items)
    return items


def _compiled(patterns: Iterable[str]) -> list[re.Pattern[str]]:
    result = []
    for pattern in patterns:
        if pattern not in _COMPILED:
            try:
                _COMPILED[pattern] = re.compile(pattern)
            except re.error:
                _COMPILED[pattern] = None
        if _COMPILED[pattern] is not None:
            result.append(_COMPILED[pattern])
    return result  # type: ignore[return-value]


def _custom_patterns(extra: Sequence[str]) -> list[re.Pattern[str]]:
    return _compiled([*_env_list("redact_extra"), *extra])


def _allow_patterns(allow: Sequence[str]) -> list[re.Pattern[str]]:
    return _compiled([*_env_list("redact_allow"), *allow])
