"""Redaction: recall and false positives on the planted-secrets corpus, rules, config, speed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphmem.capture.redact import Finding, redact, redact_obj, scan

CORPUS = Path(__file__).resolve().parent.parent / "data" / "secrets_corpus.jsonl"


def corpus() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]


def test_corpus_is_big_and_varied_enough() -> None:
    rows = corpus()
    planted = [r for r in rows if r["secrets"]]
    assert sum(len(r["secrets"]) for r in planted) >= 120
    assert len({r["kind"] for r in planted}) >= 22
    assert len(rows) - len(planted) >= 120


def test_recall_and_false_positive_rate_on_corpus() -> None:
    rows = corpus()
    secrets = [(r, s) for r in rows for s in r["secrets"]]
    missed = [(r["kind"], s) for r, s in secrets if s in redact(r["text"])]
    clean = [r for r in rows if not r["secrets"]]
    flagged = [(r["kind"], redact(r["text"])) for r in clean if redact(r["text"]) != r["text"]]
    recall = 1 - len(missed) / len(secrets)
    fp_rate = len(flagged) / len(clean)
    print(
        f"\nredaction recall {recall:.3f} ({len(secrets) - len(missed)}/{len(secrets)} planted "
        f"secrets), false positives {fp_rate:.2%} ({len(flagged)}/{len(clean)} clean lines)"
    )
    assert not missed, missed
    assert fp_rate <= 0.02, flagged


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("DB_PASSWORD=hunter2x", "DB_PASSWORD=[REDACTED:password]"),
        ('{"password": "s3cr3t!"}', '{"password": "[REDACTED:password]"}'),
        (
            "export GITHUB_TOKEN=ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8",
            "export GITHUB_TOKEN=[REDACTED:github_token]",
        ),
        ("postgres://app:pw123@db:5432/x", "postgres://app:[REDACTED:url_password]@db:5432/x"),
        ("redis://:pw123@cache:6379", "redis://:[REDACTED:url_password]@cache:6379"),
        (
            "Authorization: Basic dXNlcjpwYXNzd29yZA==",
            "Authorization: Basic [REDACTED:auth_header]",
        ),
        ("mail jane.doe@acme.io now", "mail [REDACTED:email] now"),
        # Phoenix's signing salt signs session cookies: a secret, though not named one.
        ("SIGNING_SALT=Qm9vZ2xlU2FsdDEyMw", "SIGNING_SALT=[REDACTED:secret]"),
        ('config :app, AppWeb.Endpoint, live_view: [signing_salt: "x7Yz9QwErT"]',
         'config :app, AppWeb.Endpoint, live_view: [signing_salt: "[REDACTED:secret]"]'),
        ("SESSION_SALT=Xk3Lq9Zp", "SESSION_SALT=[REDACTED:secret]"),
        ('live_view: [salt: "Xk3Lq9Zp"]', 'live_view: [salt: "[REDACTED:secret]"]'),
    ],
)
def test_masks_the_value_and_keeps_the_name(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "commit 3f2a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a",
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "id 550e8400-e29b-41d4-a716-446655440000",
        "AbstractSingletonProxyFactoryBeanImpl",
        "/home/dev/.venv/lib/python3.11/site-packages/kuzu/__init__.py",
        "password=password",
        "primary_key=True",
        "PASSWORD=${DB_PASSWORD}",
        "git@github.com:acme/api.git",
        "echo aGVsbG8gd29ybGQgdGhpcyBpcyBub3QgYSBzZWNyZXQ= | base64 -d",
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "salt = bcrypt.gensalt()",
        "SALT_ROUNDS=10",
        "hash(password, salt=salt)",
        "const salt = await bcrypt.genSalt(10)",
        "const token = await fetchToken()",
    ],
)
def test_leaves_public_identifiers_alone(text: str) -> None:
    assert redact(text) == text


def test_redaction_is_idempotent() -> None:
    for row in corpus():
        once = redact(row["text"])
        assert redact(once) == once


def test_scan_reports_kinds_and_offsets() -> None:
    token = "AKIA" + "Q7W3E9R2T5Y8U1I4"
    text = f"key {token} and mail a.b@acme.io"
    findings = scan(text)
    assert findings[0] == Finding("aws_access_key_id", 4, 4 + len(token))
    assert [f.kind for f in findings] == ["aws_access_key_id", "email"]
    assert text[findings[1].start : findings[1].end] == "a.b@acme.io"


def test_offsets_survive_text_whose_lowercase_changes_length() -> None:
    text = "İstanbul DB_PASSWORD=hunter2x İ"
    assert redact(text) == "İstanbul DB_PASSWORD=[REDACTED:password] İ"


def test_redact_obj_recurses_and_masks_secret_named_keys() -> None:
    data = {
        "env": {"API_TOKEN": "plain-looking-value", "HOME": "/root"},
        "args": ["--verbose", "sk-ant-api03-" + "x9Y8z7W6v5U4t3S2r1Q0" * 2],
        "pair": ("user", "mail me at dev@acme.io"),
        "count": 3,
    }
    out = redact_obj(data)
    assert out["env"] == {"API_TOKEN": "[REDACTED:token]", "HOME": "/root"}
    assert out["args"] == ["--verbose", "[REDACTED:anthropic_key]"]
    assert out["pair"] == ("user", "mail me at [REDACTED:email]")
    assert out["count"] == 3
    assert data["env"]["API_TOKEN"] == "plain-looking-value"


def test_extra_patterns_and_allowlist_arguments() -> None:
    text = "ticket ACME-SECRET-1234 for dev@acme.io"
    assert redact(text, extra_patterns=[r"ACME-SECRET-\d+"]) == (
        "ticket [REDACTED:custom] for [REDACTED:email]"
    )
    assert redact(text, extra_patterns=[r"ticket (\S+)"], allowlist=[r".*@acme\.io"]) == (
        "ticket [REDACTED:custom] for dev@acme.io"
    )


def test_environment_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHMEM_REDACT_EXTRA", json.dumps([r"INTERNAL-\w+", "(unbalanced"]))
    monkeypatch.setenv("GRAPHMEM_REDACT_ALLOW", json.dumps([r"ops@acme\.io"]))
    assert redact("INTERNAL-abc ops@acme.io x@acme.io") == (
        "[REDACTED:custom] ops@acme.io [REDACTED:email]"
    )
    monkeypatch.setenv("GRAPHMEM_REDACT_EXTRA", "not json")
    assert redact("INTERNAL-abc") == "INTERNAL-abc"


def test_private_key_block_is_masked_whole_even_when_cut_off() -> None:
    body = "MIIEowIBAAKCAQEA7s9X2k\nQ8w3Zr5Tn1Lp0Vb6Yc4Hd2Jf8Kg\n"
    whole = f"-----BEGIN RSA PRIVATE KEY-----\n{body}-----END RSA PRIVATE KEY-----\nnext"
    assert redact(whole) == "[REDACTED:private_key]\nnext"
    assert "MIIE" not in redact(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}")


@pytest.mark.parametrize("line", ["+@pytest.fixture(autouse=True)", "-@app.route('/orders')",
                                  "  +@dataclass(frozen=True)"])
def test_decorators_in_diffs_are_not_mailboxes(line: str) -> None:
    assert redact(line) == line


@pytest.mark.parametrize(("text", "kept"), [
    # held-out review 19 (perigee df9ef30e): the agent named the key to rotate by its head
    ("rotate the API key you pasted: delete `sk-proj-Z0S9...` on platform.openai.com", False),
    ("token ghp_ab12… was revoked", False),
    # placeholders and words are no key
    ("set OPENAI_API_KEY=sk-xxxx... in .env", True),
    ("the sk-learn... module", True),
])
def test_the_head_of_a_key_cut_short_is_masked(text: str, kept: bool) -> None:
    assert (redact(text) == text) is kept, redact(text)


def test_the_head_of_an_anthropic_key_cut_short_is_masked() -> None:
    assert "x9Kq" not in redact("revoke `sk-ant-api03-x9Kq1...` and `sk-proj-Ab-9cd...` today")
