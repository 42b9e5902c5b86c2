"""The README's examples run and print what it says they print.

Its `console` blocks run in order against a fresh real server (conftest's `live_server`),
in one working directory, with `BLOOMCAST_SERVER` and `BLOOMCAST_TOKEN` set and
`bloomcast-py` on `PATH` (running this source tree, as the installed entry point does):

- A line starting `$ ` is a command, run by bash; the lines after it, up to the next
  `$ `, are everything it prints (stdout and stderr, as a terminal shows them), compared
  line for line, and it must exit 0.
- A command whose comment says `until Ctrl-C` runs until it has printed as many lines as
  shown, then gets SIGINT and must exit 0. The command after `meanwhile:` in that comment
  runs (its output unchecked) once the first line is printed.

Before anything runs, two substitutions make the README's text this run's: the example
hour, `2026-11-27T05` (and `2026/11/27/05` in URLs), becomes the server's open hour, and
`127.0.0.1:8080` its address. Nothing else is normalised: versions (the first 80 bits of
the SHA-256 of the filter's bits, whatever the hour) and byte counts follow from the IDs,
so they are the same in every run. The run
starts at least 90 s before the end of an hour (waiting for the next if need be), so that
every example sees the same hour.

The `sh no-run` block is checked in part: `--help` must list exactly the verbs its comment
names, and the `check` line must run (exit 0). Its `pip install` line is not run: it
installs into the environment running these tests (`.ci/run` does so in its own venv)."""

import datetime
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from conftest import LIVE_TOKEN, ROOT

README = ROOT / "clients" / "python" / "README.md"
EXAMPLE_HOUR = datetime.datetime(2026, 11, 27, 5, tzinfo=datetime.timezone.utc)
EXAMPLE_ADDRESS = "127.0.0.1:8080"
# Seconds a command may take; `watch` included (it polls every 5 s).
TIMEOUT = 60


def blocks(markdown, info):
    """The fenced blocks whose info string is `info`: (line of the fence, lines)."""
    out, open_at, lines = [], None, []
    for n, line in enumerate(markdown.splitlines(), 1):
        if line.startswith("```"):
            if open_at is None:
                open_at, lines = (n if line[3:].strip() == info else -1), []
            else:
                if open_at > 0:
                    out.append((open_at, lines))
                open_at = None
        elif open_at is not None:
            lines.append(line)
    assert open_at is None, "an unclosed code fence"
    return out


def examples(lines):
    """A console block's (command, printed lines)."""
    out = []
    for line in lines:
        if line.startswith("$ "):
            out.append((line[2:], []))
        else:
            assert out, f"output before any command: {line!r}"
            out[-1][1].append(line)
    return out


def substituted(text, hour, address):
    """The README's text with this run's hour and address (the module docstring's rules)."""
    for form in ("%Y-%m-%dT%H", "%Y/%m/%d/%H"):
        text = text.replace(EXAMPLE_HOUR.strftime(form), hour.strftime(form))
    return text.replace(EXAMPLE_ADDRESS, address)


def comment(command):
    """The text after a command's ` # `, or ''."""
    return command.split(" # ", 1)[1] if " # " in command else ""


def test_readme_blocks_are_found():
    """The examples this test runs exist: a block of them, `watch` among them."""
    text = README.read_text(encoding="utf-8")
    runs = [e for _, lines in blocks(text, "console") for e in examples(lines)]
    assert len(runs) >= 6, runs
    assert any("until Ctrl-C" in comment(c) and "meanwhile:" in comment(c) for c, _ in runs)
    assert any("bloomcast-py --help" in line for _, lines in blocks(text, "sh no-run")
               for line in lines)
    assert "python3 -m pytest clients/python" in text


class Shell:
    """Runs the README's commands as a reader's terminal would, in `work`."""

    def __init__(self, tmp_path, server):
        self.work = tmp_path / "work"
        self.work.mkdir()
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        shim = bin_dir / "bloomcast-py"
        shim.write_text(f"#!/bin/sh\nPYTHONPATH='{ROOT / 'clients' / 'python'}' "
                        f"exec '{sys.executable}' -m bloomcast_client \"$@\"\n")
        shim.chmod(0o755)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("BLOOMCAST_")}
        self.env.update(PATH=f"{bin_dir}:{os.environ.get('PATH', '')}",
                        BLOOMCAST_SERVER=server.base, BLOOMCAST_TOKEN=LIVE_TOKEN,
                        XDG_CACHE_HOME=str(tmp_path / "cache"))
        self.env.pop("PYTHONPATH", None)

    def popen(self, command):
        return subprocess.Popen(["bash", "--noprofile", "--norc", "-c", command],
                                cwd=self.work, env=self.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)

    def run(self, command):
        """(exit code, printed lines)."""
        p = self.popen(command)
        try:
            out, _ = p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            pytest.fail(f"`{command}` did not finish in {TIMEOUT} s:\n{out}")
        return p.returncode, out.splitlines()

    def run_until_ctrl_c(self, command, expected):
        """Runs `command` until it printed len(expected) lines, running the comment's
        `meanwhile:` command after the first; then SIGINT. (exit code, printed lines)."""
        meanwhile = comment(command).split("meanwhile:", 1)[1].strip()
        p = self.popen(command)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line.rstrip("\n")) for line in p.stdout],
                         daemon=True).start()
        printed, deadline = [], time.monotonic() + TIMEOUT
        try:
            while len(printed) < len(expected) and time.monotonic() < deadline:
                try:
                    printed.append(lines.get(timeout=0.1))
                except queue.Empty:
                    if p.poll() is not None:
                        break
                    continue
                if len(printed) == 1:
                    code, out = self.run(meanwhile)
                    assert code == 0, f"`{meanwhile}` (meanwhile): exit {code}\n{out}"
            os.killpg(p.pid, signal.SIGINT)
            code = p.wait(timeout=TIMEOUT)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        time.sleep(0.1)  # what it printed on its way out
        while not lines.empty():
            printed.append(lines.get())
        return code, printed


def open_hour(server):
    with urllib.request.urlopen(server.base + "/", timeout=10) as r:
        hour = json.load(r)["current"]["hour"]
    return datetime.datetime.strptime(hour, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc)


def test_readme_examples_print_what_it_says(live_server, tmp_path):
    pytest.importorskip("zstandard", reason="the README's watch example shows dcz deltas: "
                        "pip install zstandard (the client's dcz extra)")
    into_hour = time.time() % 3600
    if into_hour > 3600 - 90:
        time.sleep(3600 - into_hour + 1)
    hour = open_hour(live_server)
    address = live_server.base.removeprefix("http://")
    text = substituted(README.read_text(encoding="utf-8"), hour, address)
    shell = Shell(tmp_path, live_server)

    # The sh block: --help's verbs are the comment's; `check` runs.
    (_, sh), = blocks(text, "sh no-run")
    help_line, = [line for line in sh if line.startswith("bloomcast-py --help")]
    said = sorted(re.search(r"# verbs: (.*)", help_line).group(1).replace(" ", "").split(","))
    code, out = shell.run("bloomcast-py --help")
    assert code == 0, out
    listed = out[out.index("positional arguments:") + 1:]
    verbs = sorted(m.group(1) for m in map(re.compile(r"    (\w+)\s").match, listed) if m)
    assert verbs == said, f"--help lists {verbs}, the README says {said}"
    check_line, = [line for line in sh if line.startswith("bloomcast-py check ")]
    code, out = shell.run(check_line)
    assert code == 0, f"README: `{check_line}` exited {code}:\n" + "\n".join(out)

    # The console blocks, in order.
    ran = 0
    for fence, lines in blocks(text, "console"):
        for command, expected in examples(lines):
            if "until Ctrl-C" in comment(command):
                code, printed = shell.run_until_ctrl_c(command, expected)
            else:
                code, printed = shell.run(command)
            where = f"README line {fence}: `$ {command}`"
            assert code == 0, f"{where} exited {code}:\n" + "\n".join(printed)
            assert printed == expected, (
                f"{where} printed\n" + "\n".join(printed)
                + "\n--- the README says (hour and address substituted)\n"
                + "\n".join(expected))
            ran += 1
    assert ran >= 6, f"only {ran} README examples ran"
