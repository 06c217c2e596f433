"""The UserPromptSubmit hook hands back what bears on the prompt, from a warm owner, and nothing
otherwise; real hook processes, a real owner, the real model."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphmem import Config, Memory
from graphmem.errors import OwnerUnavailable
from graphmem.owner.client import ask_running_owner, owner_running
from tests.conftest import git
from tests.retrieve.test_live import HOP_CHECK, REDIRECTS_LOOP, SESSIONS, SETTINGS_LOOP, SOURCE


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    return {**os.environ, "GRAPHMEM_HOME": str(home), "GRAPHMEM_NO_WORKER": "1",
            "GRAPHMEM_OWNER_IDLE": "60"}


def hook(repo: Path, env: dict[str, str], event: str, **payload: object) -> str:
    body = {"session_id": "s-1", "cwd": str(repo), "hook_event_name": event, **payload}
    done = subprocess.run([sys.executable, "-m", "graphmem.hooks", event, "--agent", "claude-code"],
                          input=json.dumps(body), cwd=repo, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def wait_for(condition, seconds: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def stop_owner(data_dir: Path) -> None:
    if owner_running(data_dir):
        pid = ask_running_owner(data_dir, "ping", {}, project="", branch="", checkout=None,
                                timeout=10)["pid"]
        os.kill(int(pid), signal.SIGTERM)
        wait_for(lambda: not owner_running(data_dir))


@pytest.fixture
def store(repo: Path, env: dict[str, str]):  # type: ignore[no-untyped-def]
    config = Config(home=Path(env["GRAPHMEM_HOME"]), cwd=repo)
    with Memory(config) as memory:  # seeded in-process: the hooks under test are real processes
        memory.add("`git push` fails with: The current branch has no upstream branch; "
                   "`git push --set-upstream origin <branch>` worked", kind="pitfall")
        memory.add("assets/build.js uses relative entry points: run it from inside assets/ "
                   "(cd assets && node build.js)", kind="env")
    data_dir = Memory.data_dir_for(config)
    yield data_dir
    stop_owner(data_dir)


def test_a_cold_prompt_starts_an_owner_and_the_next_prompt_gets_the_memory(
        repo: Path, env: dict[str, str], store: Path) -> None:
    prompt = "commit and push the work on this branch"
    stop_owner(store)
    started = time.monotonic()
    assert hook(repo, {**env, "GRAPHMEM_INJECT_COLD_WAIT": "0"}, "user-prompt", prompt=prompt) == ""
    assert time.monotonic() - started < 5  # it did not wait for the owner it started
    wait_for(lambda: owner_running(store))
    said: list[str] = []
    wait_for(lambda: bool(said.append(hook(repo, env, "user-prompt", prompt=prompt)) or said[-1]), 90)
    out = json.loads(said[-1])
    context = out["hookSpecificOutput"]["additionalContext"]
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "--set-upstream origin" in context and "build.js" not in context
    assert len(context) / 4 <= 300


def test_the_prompt_right_after_a_session_start_waits_for_the_starting_owner(
        repo: Path, env: dict[str, str], store: Path) -> None:
    """`claude -p "..."`: SessionStart and the one prompt come back to back; the prompt waits
    (boundedly) for the owner the session start launched instead of getting nothing."""
    stop_owner(store)
    warming = {k: v for k, v in env.items() if k != "GRAPHMEM_NO_WORKER"}
    hook(repo, warming, "session-start", source="startup")
    assert not owner_running(store) or not ask_running_owner(
        store, "ping", {}, project="", branch="", checkout=None, timeout=5)["search_ready"]
    said = hook(repo, {**env, "GRAPHMEM_INJECT_COLD_WAIT": "60"}, "user-prompt",
                prompt="commit and push the work on this branch")
    assert "--set-upstream origin" in json.loads(said)["hookSpecificOutput"]["additionalContext"]


def test_a_waiting_prompt_warms_the_owner_without_waiting_out_its_delay(
        repo: Path, env: dict[str, str], store: Path) -> None:
    """An owner not started by a hook (the MCP server's) delays its model load until a first
    call or GRAPHMEM_OWNER_WARM_AFTER: the ping of a prompt waiting for it is that call."""
    stop_owner(store)
    late = {**env, "GRAPHMEM_OWNER_WARM_AFTER": "600"}
    owner = subprocess.Popen([sys.executable, "-m", "graphmem", "owner", "--data-dir", str(store),
                              "--cwd", str(repo)], env=late, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: owner_running(store))
        said = hook(repo, {**late, "GRAPHMEM_INJECT_COLD_WAIT": "30"}, "user-prompt",
                    prompt="commit and push the work on this branch")
        assert said, "the prompt waited 30 s for an owner that never warmed"
        assert "--set-upstream origin" in json.loads(said)["hookSpecificOutput"]["additionalContext"]
    finally:
        owner.terminate()
        owner.wait(30)


def test_a_prompt_nothing_bears_on_adds_nothing(repo: Path, env: dict[str, str], store: Path) -> None:
    stop_owner(store)
    warming = {k: v for k, v in env.items() if k != "GRAPHMEM_NO_WORKER"}
    hook(repo, warming, "session-start", source="startup")  # warms an owner for the first prompt
    wait_for(lambda: owner_running(store))
    wait_for(lambda: bool(hook(repo, env, "user-prompt", prompt="commit and push this branch")), 90)
    for prompt in ("thanks!", "what a lovely afternoon for a walk in the park",
                   "summarise the plot of Hamlet in two sentences"):
        assert hook(repo, env, "user-prompt", prompt=prompt) == "", prompt


def test_pings_do_not_keep_an_idle_owner_alive(repo: Path, env: dict[str, str], store: Path) -> None:
    owner = subprocess.Popen([sys.executable, "-m", "graphmem", "owner", "--idle", "2"], cwd=repo,
                             env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    wait_for(lambda: owner_running(store))
    deadline = time.monotonic() + 20
    while owner.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(OwnerUnavailable):  # it may exit between the check and the ping
            ask_running_owner(store, "ping", {}, project="", branch="", checkout=None, timeout=5)
        time.sleep(0.3)
    assert owner.poll() is not None, "the owner stayed up while only pinged"


def owner_pids(data_dir: Path) -> set[int]:
    """Processes running `graphmem owner --data-dir DATA_DIR` (read from /proc)."""
    found = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"owner" in argv and str(data_dir).encode() in argv:
            found.add(int(proc.name))
    return found


def test_a_session_start_and_its_first_prompt_start_one_owner(
        repo: Path, env: dict[str, str], store: Path) -> None:
    stop_owner(store)
    warming = {k: v for k, v in env.items() if k != "GRAPHMEM_NO_WORKER"}
    hook(repo, warming, "session-start", source="startup")
    hook(repo, env, "user-prompt", prompt="commit and push the work on this branch")
    seen = set()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        seen |= owner_pids(store)
        time.sleep(0.1)
    assert len(seen) == 1, seen
    wait_for(lambda: bool(hook(repo, env, "user-prompt", prompt="commit and push this branch")), 90)
    assert not (store / "logs" / "owner.failed").exists()


def test_an_owner_that_loses_the_start_race_exits_quietly(
        repo: Path, env: dict[str, str], store: Path) -> None:
    import socket

    from graphmem.owner.rendezvous import socket_address

    stop_owner(store)
    holder = Memory(Config(home=Path(env["GRAPHMEM_HOME"]), cwd=repo))  # the store is held
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # and another owner answers
    try:
        started = time.monotonic()
        late = subprocess.Popen([sys.executable, "-m", "graphmem", "owner"], cwd=repo, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        time.sleep(3)  # it found no owner answering and now waits for the held store
        other.bind(socket_address(store))
        other.listen(8)
        _, stderr = late.communicate(timeout=60)
        # It saw the owner that won the race answer and left: no 30 s wait, no failure record.
        assert late.returncode == 0, stderr
        assert time.monotonic() - started < 15
        assert not (store / "logs" / "owner.failed").exists()
    finally:
        other.close()
        holder.close()


def test_an_edit_inside_a_function_brings_its_memory_not_its_neighbours(
        repo: Path, env: dict[str, str]) -> None:
    """Replay: the agent edits resolve_redirects(), then asks "why does this loop forever?".
    Both memories say "loop forever" of a function of the same file; the hook is told nothing
    but the session id, and injects the one about the function the edit was in."""
    (repo / "src").mkdir()
    (repo / SESSIONS).write_text(SOURCE)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "sessions")
    config = Config(home=Path(env["GRAPHMEM_HOME"]), cwd=repo)
    with Memory(config) as memory:
        memory.index_code()
        redirects = memory.add(REDIRECTS_LOOP, kind="pitfall", session_id="earlier-1").id
        settings = memory.add(SETTINGS_LOOP, kind="pitfall", session_id="earlier-2").id
    data_dir = Memory.data_dir_for(config)
    try:
        edited = (repo / SESSIONS).read_text().replace("        seen += 1\n",
                                                       "        seen += 1\n" + HOP_CHECK)
        (repo / SESSIONS).write_text(edited)
        hook(repo, env, "post-tool", tool_name="Edit", tool_use_id="t1",
             tool_input={"file_path": str(repo / SESSIONS), "old_string": "        seen += 1\n",
                         "new_string": "        seen += 1\n" + HOP_CHECK},
             tool_response={"filePath": str(repo / SESSIONS)})
        said: list[str] = []
        wait_for(lambda: bool(said.append(hook(repo, env, "user-prompt",
                                                prompt="why does this loop forever?"))
                              or said[-1]), 90)
        context = json.loads(said[-1])["hookSpecificOutput"]["additionalContext"]
        assert redirects in context and settings not in context
    finally:
        stop_owner(data_dir)


def test_a_ping_refused_just_before_an_owner_came_up_is_asked_again(
        repo: Path, env: dict[str, str], store: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """sessbench entire-cli: a prompt's ping was refused while no owner listened; by the time the
    hook looked, one had started (the session's own), and the hook logged a fault and injected
    nothing. The refusal is injected here for the one ping, in front of a real warm owner."""
    from graphmem import hooks
    from graphmem.capture.event import HookEvent
    from graphmem.owner import client
    from graphmem.paths import find_project

    prompt = "commit and push the work on this branch"
    warm = hook(repo, {**env, "GRAPHMEM_INJECT_COLD_WAIT": "60"}, "user-prompt", prompt=prompt)
    assert "--set-upstream origin" in warm
    real = client.ask_running_owner
    refused: list[str] = []

    def first_ping_refused(data_dir: Path, method: str, *args: object, **kwargs: object) -> object:
        if method == "ping" and not refused:
            refused.append(method)
            try:
                raise ConnectionRefusedError(111, "Connection refused")
            except ConnectionRefusedError as exc:
                raise OwnerUnavailable(f"{client.NOT_LISTENING} for {data_dir} ({exc})") from exc
        return real(data_dir, method, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(client, "ask_running_owner", first_ping_refused)
    for name in ("GRAPHMEM_HOME", "GRAPHMEM_NO_WORKER"):
        monkeypatch.setenv(name, env[name])
    monkeypatch.setenv("GRAPHMEM_INJECT_COLD_WAIT", "30")
    event = HookEvent("user-prompt", "claude-code", "s-1", str(repo), text=prompt)
    hooks._inject(event, find_project(str(repo)), "claude-code")
    assert refused == ["ping"]
    assert "--set-upstream origin" in capsys.readouterr().out


def test_an_owner_loading_its_extractor_is_still_cold_for_the_prompt(
        repo: Path, env: dict[str, str], store: Path) -> None:
    """The owner says when it is warm: search ready first, then the prose extractor that loads
    beside the calls and slows them (sessbench: the second prompt after a start took 365 ms and
    got nothing). Until then a prompt may wait out its cold wait; afterwards INJECT_WAIT."""
    from graphmem.hooks import INJECT_WAIT, answer_wait

    stop_owner(store)
    owner = subprocess.Popen([sys.executable, "-m", "graphmem", "owner", "--data-dir", str(store),
                              "--cwd", str(repo)], env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        seen: list[tuple[bool, bool]] = []
        deadline = time.monotonic() + 90
        while not (seen and seen[-1][1]):
            assert time.monotonic() < deadline, seen[-3:]
            with contextlib.suppress(OwnerUnavailable):
                status = ask_running_owner(store, "ping", {}, project="", branch="",
                                           checkout=None, timeout=5)
                seen.append((status["search_ready"], status["warm"]))
            time.sleep(0.01)
        assert (True, False) in seen, "never seen ready for search while still loading"
        assert all(ready for ready, warm in seen if warm), "warm before ready for search"
        loading, warm = {"search_ready": True, "warm": False}, {"search_ready": True, "warm": True}
        assert answer_wait(loading, cold=False, cold_left=1.5) == 1.5
        assert answer_wait(warm, cold=True, cold_left=1.5) == 1.5
        assert answer_wait(warm, cold=False, cold_left=1.5) == INJECT_WAIT
    finally:
        owner.terminate()
        owner.wait(30)
