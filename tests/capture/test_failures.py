"""The one recogniser of what failed: linter and type-checker complaints, read from real output."""

from __future__ import annotations

import pytest

from graphmem.capture.failures import LintFinding, lint_findings, signature

GOLANGCI = """Exit code 1
[lint] $ golangci-lint run ./...
[lint] ERROR task failed

cmd/entire/cli/hooks_opencode_transcript.go:95:24: string `user` has 5 occurrences, but such constant `transcriptTypeUser` already exists (goconst)
		if line.Info.Role == "user" {
		                     ^
cmd/entire/cli/hooks_opencode_handlers.go:65:1: Function name: handleOpencodeStop, Cyclomatic Complexity: 30, Halstead Volume: 5494.14, Maintainability Index: 19 (maintidx)
func handleOpencodeStop() error {
^
6 issues:
* goconst: 2
"""


@pytest.mark.parametrize(("output", "expected"), [
    (GOLANGCI, [("cmd/entire/cli/hooks_opencode_transcript.go", 95, "goconst"),
                ("cmd/entire/cli/hooks_opencode_handlers.go", 65, "maintidx")]),
    ("cmd/entire/main.go:19:13: G304: Potential file inclusion via variable (gosec)",
     [("cmd/entire/main.go", 19, "gosec")]),
    ("a.py:3: error: Incompatible types in assignment  [assignment]", [("a.py", 3, "assignment")]),
    ("a.py:1:1: F401 `os` imported but unused", [("a.py", 1, "F401")]),
    ("src/a.ts(3,7): error TS2322: Type 'x' is not assignable to type 'y'.", [("src/a.ts", 3, "TS2322")]),
    # claude-code-log (unlabelled set): pyright relayed by `act`, its rule on the next line
    (("[CI/test-2]   |   /w/claude_code_log/converter.py:186:72 - error: Argument type is unknown\n"
     "[CI/test-2]   |     Argument corresponds to parameter \"object\" (reportUnknownArgumentType)"),
     [("/w/claude_code_log/converter.py", 186, "reportUnknownArgumentType")]),
    # spotter ae4a77f8: Dialyzer through the pre-commit hook, its text on the next line
    (("lib/spotter_web/controllers/otel_trace_helpers.ex:57:13:pattern_match\n"
     "The pattern can never match the type."), [("lib/spotter_web/controllers/otel_trace_helpers.ex", 57,
                                                "pattern_match")]),
    ("Exit code 1\n** (RuntimeError) no :secret_key_base configuration found", []),
    ("lib/a.ex:12: warning: variable x is unused", []),
])
def test_linter_complaints_are_read_with_their_rule(output: str, expected: list[tuple[str, int, str]]) -> None:
    assert [(f.path, f.line, f.rule) for f in lint_findings(output)] == expected


def test_a_dialyzer_complaint_takes_its_message_from_the_next_line() -> None:
    [found] = lint_findings("lib/a.ex:57:13:pattern_match\nThe pattern can never match the type.")
    assert found == LintFinding("lib/a.ex", 57, "pattern_match", "The pattern can never match the type.")


def test_a_biome_diagnostic_is_read_with_its_rule_and_the_text_below_it() -> None:
    # held-out review 34 (vertumnus, verbatim): grepped down to the headers, then in full
    short = ("src/components/Poster.astro:3:22 lint/correctness/noUnusedImports  FIXABLE  ━━━━━━━━━━━━━━\n"
             "src/pages/index.astro:6:7 lint/correctness/noUnusedVariables  FIXABLE  ━━━━━━━━━━━━━━━━\n"
             "Found 4 warnings.")
    assert [(f.path, f.line, f.rule) for f in lint_findings(short)] == [
        ("src/components/Poster.astro", 3, "noUnusedImports"), ("src/pages/index.astro", 6, "noUnusedVariables")]
    [found] = lint_findings("src/a.ts:3:22 lint/correctness/noUnusedImports  FIXABLE  ━━━━━━━\n\n"
                            "  ⚠ This import is unused.\n\n    1 │ ---")
    assert found == LintFinding("src/a.ts", 3, "noUnusedImports", "This import is unused.")


def test_credos_issue_line_is_the_error_not_its_progress_line() -> None:
    # spotter fa812bfe, verbatim: the lesson read "`mix credo` fails with Checking 3 source files ...".
    output = ("Exit code 2\nChecking 3 source files ...\n\n  Software Design\n┃ \n"
              "┃ [D] ↘ Nested modules could be aliased at the top of the invoking module.\n"
              "┃       lib/spotter/services/active_session_registry.ex:135:5 "
              "#(Spotter.Services.ActiveSessionRegistry.check_pane_present)\n\n"
              "Please report incorrect results: https://github.com/rrrene/credo/issues\n\n"
              "Analysis took 0.08 seconds (0.01s to load, 0.07s running 69 checks on 3 files)\n"
              "40 mods/funs, found 1 software design suggestion.\n")
    sig = signature(output)
    assert sig is not None and sig.type == ""
    assert sig.message == "Nested modules could be aliased at the top of the invoking module."


LINT_STAGED = """Exit code 1
[STARTED] Backing up original state...
[COMPLETED] Backed up original state in git stash (75c016b85)
[STARTED] markdownlint --fix
[FAILED] markdownlint --fix [FAILED]
[FAILED] markdownlint --fix [FAILED]
[SKIPPED] Skipped because of errors from tasks.

✖ markdownlint --fix:
/Users/michael/Code/cipher-box/.planning/phases/12.6-per-file-ipns-metadata-split/12.6-CONTEXT.md:16 error \
MD001/heading-increment Heading levels should only increment by one level at a time [Expected: h2; Actual: h3]
husky - pre-commit script failed (code 1)
"""


def test_a_checker_run_by_lint_staged_is_read_past_its_progress_lines() -> None:
    # held-out review 10 (cipher-box f337a126, verbatim but shortened): the failure read
    # "[FAILED] markdownlint --fix [FAILED]", which says neither the rule nor what it wants.
    sig = signature(LINT_STAGED)
    assert sig is not None and sig.type == "MD001"
    assert sig.message.startswith("Heading levels should only increment by one level at a time")
    [found] = lint_findings(LINT_STAGED)
    assert (found.line, found.rule) == (16, "MD001") and found.path.endswith("12.6-CONTEXT.md")
    assert [f.rule for f in lint_findings("README.md:3:1 MD009/no-trailing-spaces Trailing spaces [Expected: 0]")] \
        == ["MD009"]


def test_a_ginkgo_failure_line_is_the_error() -> None:
    # Only lint-staged's progress lines are skipped, not a test runner's "[FAILED] …".
    sig = signature("Exit code 1\n[FAILED] Timed out after 5.000s.\nExpected <bool>: false to be true\n")
    assert sig is not None and "Timed out after" in sig.message


def test_a_bun_run_is_read_by_the_test_it_marks_failed_not_by_a_passing_tests_log() -> None:
    # Held-out reviews 122 and 133 (PackmindHub/context-evaluator, MIT, verbatim, abridged): a test that passed throws
    # "Item 3 failed" on purpose; the one that failed is marked `(fail)` after its own error, the harness having cut
    # the output between them
    noise = ("[21:05:16.172] [ConcurrencyLimiter] Task 2 failed: 84 | \n89 | \t\t\t\t\tthrow new Error(\"Item 3 failed\");\n"
             "                    ^\nerror: Item 3 failed\n      at <anonymous> (/repo/src/shared/utils/concurrency-limiter"
             ".test.ts:89:12)\n")
    marked = ("(fail) prompt-generator > error prompt - target agent routing and output types > error fix prompt prefers "
              "generic updates for errors [0.60ms]\n\n 1328 pass\n 1 fail\nRan 1329 tests across 60 files. [820.00ms]\n"
              "error: script \"test\" exited with code 1")
    cut = signature(f"Exit code 1\n$ bun test src/\n{noise}\n... [19420 characters truncated] ...\n\n      at <anonymous> "
                    f"(/repo/src/shared/remediation/prompt-generator.test.ts:726:34)\n{marked}")
    assert cut is not None
    assert cut.text == ('failing test prompt-generator > error prompt - target agent routing and output types > error fix prompt '
                        'prefers generic updates for errors'), cut.text
    whole = signature(f"{noise}(pass) concurrency > should handle all items throwing errors [0.10ms]\n"
                      "error: expect(received).toContain(expected)\n\nExpected to contain: \"generic update\"\n"
                      "      at <anonymous> (/repo/src/shared/remediation/prompt-generator.test.ts:726:34)\n"
                      "(fail) prompt-generator > prefers generic updates [0.60ms]\n 1 fail")
    assert whole is not None and whole.text == 'failing test prompt-generator > prefers generic updates: expect(received).toContain(expected)', \
        whole.text


def test_scripts_run_one_after_another_failed_at_the_last_and_bun_tells_an_unhandled_error() -> None:
    # Held-out reviews 134 and 129 (PackmindHub/context-evaluator, MIT, verbatim, abridged): a pre-commit hook ran the
    # tests (a passing test logging "error: Item 3 failed"), Biome, then `tsc`, which failed; and a hook's test run
    # whose failures were a cloned repository's tests that could not load their modules
    hook = ("Exit code 1\n$ bun test src/\nbun test v1.3.5 (1e86cebd)\nerror: Item 3 failed\n      at <anonymous> "
            "(/repo/src/shared/utils/concurrency-limiter.test.ts:89:12)\n\n 1274 pass\n 0 fail\nRan 1274 tests across 56 "
            "files. [748.00ms]\n$ biome check --error-on-warnings\nChecked 282 files in 122ms. No fixes applied.\n"
            "$ tsc --noEmit\nsrc/api/routes/remediation.ts(572,32): error TS18046: 'fileResult' is of type 'unknown'.\n"
            "husky - pre-commit script failed (code 2)")
    failed = signature(hook)
    assert failed is not None and failed.text == "TS18046: 'fileResult' is of type 'unknown'.", failed
    clones = ("Exit code 1\n$ bun test src/\nbun test v1.3.5 (1e86cebd)\n[21:05:16.172] [ConcurrencyLimiter] Task 2 failed\n"
              "error: Item 3 failed\n\ntmp/clones/agents-eval-UUDzya/src/Clients/apps/storefront/__tests__/product-section"
              ".test.tsx:\n\n# Unhandled error between tests\n-------------------------------\nerror: Cannot find module "
              "'@tanstack/react-query' from '/repo/tmp/clones/agents-eval-UUDzya/src/Clients/apps/storefront/__tests__/'")
    unhandled = signature(clones)
    assert unhandled is not None and unhandled.text.startswith(
        "unhandled error between tests: Cannot find module '@tanstack/react-query'"), unhandled
    # one script, or scripts whose last printed nothing wrong, are read whole
    whole = signature("$ bun test src/\nerror: Cannot find module 'x'\n$ echo done\ndone")
    assert whole is not None and whole.text == "error: Cannot find module 'x'", whole


def test_the_last_script_is_not_read_past_an_earlier_failure_a_runners_closing_line_or_a_usage_text() -> None:
    # The review of 6bdf030, M7: a runner that went on after a failing test and closed with its own line, and a
    # CLI's usage text whose examples start with `$ `
    went_on = signature("$ bun test\nerror: expect(received).toBe(expected)\n(fail) orders > refunds a line [0.40ms]\n"
                        " 1 fail\n$ rm -rf .cache/tmp\nerror: script \"ci\" exited with code 1")
    assert went_on is not None and went_on.text == 'failing test orders > refunds a line: expect(received).toBe(expected)', went_on
    usage = signature("Error: Missing required argument: --project\nExamples:\n$ deployctl build --project web\n"
                      "$ deployctl deploy --project web --prod\nOptions not listed here are unknown to deployctl and ignored.")
    assert usage is not None and usage.text == "error: Missing required argument: --project", usage


def test_an_output_the_harness_printed_twice_is_no_run_of_scripts() -> None:
    # Held-out window 107 (PackmindHub/context-evaluator, MIT, abridged): stdout and stderr each held the same
    # `$ biome check` section; its diff lines are no error of a later script
    once = ("$ biome check --error-on-warnings\n at frontend/src/components/RemediateTab.tsx format ━━━━\n\n  × Formatter would "
            "have printed the following content:\n    543     │ - hasRepoUrl={repositoryUrl·!==·\"unknown\"}\n\nFound 1 "
            "error.\nerror: script \"lint\" exited with code 1\n")
    twice = signature(f"Exit code 1\n{once}\n{once}")
    assert twice is not None and "543" not in twice.text, twice


def test_a_fail_mark_is_bun_s_only_in_a_bun_run_and_two_failing_tests_are_two_failures() -> None:
    # The review of 6bdf030, L2 and L4: a `(fail) typecheck` line of another tool's log hid the error after it, and
    # the quoted test names were masked into one key
    other = signature("(pass) lint\n(fail) typecheck\nsrc/api/orders.ts(12,7): error TS2322: Type 'string' is not "
                      "assignable to type 'number'.\nchecks failed: 1 of 2")
    assert other is not None and other.text.startswith("TS2322"), other
    one, two = (signature(f"bun test v1.3.5\nerror: expect(received).toBe(expected)\n(fail) {name} [0.40ms]\n 1 fail")
                for name in ("orders > refunds a line", "payments > rejects a negative amount"))
    assert one is not None and two is not None and one.key != two.key


def test_a_copys_unhandled_error_does_not_hide_the_projects_own_failing_test() -> None:
    # The review of 6bdf030, L5: a cloned repository's test under tmp/ could not load its module, and the project's
    # own test failed after it
    out = ("bun test v1.3.5\ntmp/clones/x/src/a.test.tsx:\n# Unhandled error between tests\n-------------------------------\n"
           "error: Cannot find module '@tanstack/react-query' from '/repo/tmp/clones/x/src/a.test.tsx'\n"
           "error: expect(received).toBe(expected)\n(fail) orders > refunds a line [0.40ms]\n 1 fail")
    found = signature(out)
    assert found is not None and found.text.startswith("failing test orders > refunds a line"), found
    alone = signature(out.replace("(fail) orders > refunds a line [0.40ms]\n", ""))
    assert alone is not None and alone.text.startswith("unhandled error between tests: Cannot find module"), alone


def test_a_bun_timeout_after_its_mark_and_an_error_above_a_long_diff_are_the_tests_own() -> None:
    # The review of 6bdf030, L3: bun says a timeout after the `(fail)` mark, and a diff of 20 lines pushed the
    # test's own error out of reach
    timed = signature("bun test v1.3.5\n(pass) client > connects [1.20ms]\nerror: connect ECONNREFUSED 127.0.0.1:5432\n"
                      "(fail) client > reconnects after a drop [5001.20ms]\n  ^ this test timed out after 5000ms.\n 1 fail")
    assert timed is not None and timed.text.endswith(": this test timed out after 5000ms."), timed
    diff = "\n".join(f'  -   "line{i}": {i},' for i in range(20))
    long = signature(f"bun test v1.3.5\n(pass) a > one [0.1ms]\nerror: expect(received).toEqual(expected)\n\n{diff}\n"
                     "(fail) a > two [0.4ms]\n 1 fail")
    assert long is not None and long.text == "failing test a > two: expect(received).toEqual(expected)", long
