"""Processes of the harness: signalled only when /proc/PID/cmdline names the harness's own
temp dir, found by that mark, stopped by PID at the end.

Everything the harness starts carries its temp dir on its command line: the server
(--data-dir), agents and their fencers (--state-dir), pods (the ledger directory is an
argument of their script) and the pods' background children (argv[0] is a path under it).
So a scan of /proc for that string finds every process the harness is answerable for, and
nothing else: a pid reused by some other program never matches and is never signalled."""
import os
import signal
import threading
import time

_lock = threading.Lock()
POPENS = []  # every subprocess.Popen the harness made, stopped at exit
# Set when the harness exits: a schedule thread still running then may start nothing more
# (it would race the final cleanup).
STOPPING = threading.Event()


def cmdline(pid):
    """The process's argv joined by spaces; '' for one that is gone or a zombie."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def is_zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def alive(pid, mark):
    """True while `pid` runs (not a zombie) and its command line contains `mark`."""
    return mark in cmdline(pid) and not is_zombie(pid)


def find(mark, *also):
    """Pids (not ours) whose command line contains `mark` and every string of `also`."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        line = cmdline(int(name))
        if mark in line and all(a in line for a in also) and not is_zombie(int(name)):
            out.append(int(name))
    return sorted(out)


def signal_marked(pid, sig, mark):
    """Sends `sig` to `pid` only if it still carries `mark`; True when it was sent."""
    if not mark or not alive(pid, mark):
        return False
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def track(popen):
    with _lock:
        POPENS.append(popen)
    if STOPPING.is_set():
        popen.kill()
        popen.wait()
        raise RuntimeError("the harness is exiting: started nothing")
    return popen


def reap():
    """Collects the exit status of our own children that ended (no zombies pile up)."""
    with _lock:
        for p in POPENS:
            p.poll()


def kill_marked(mark, timeout=10.0):
    """SIGCONT + SIGKILL every process carrying `mark`, until none is left or `timeout`.
    Returns the pids that would not go (the caller fails loudly on them)."""
    deadline = time.time() + timeout
    while True:
        reap()
        pids = find(mark)
        if not pids or time.time() > deadline:
            return pids
        for pid in pids:
            signal_marked(pid, signal.SIGCONT, mark)
            signal_marked(pid, signal.SIGKILL, mark)
        time.sleep(0.05)


def stop_popen(p, mark, term_wait=5.0):
    """SIGCONT then SIGTERM one of our children, SIGKILL after `term_wait` s; waits for it."""
    if p.poll() is not None:
        return
    if alive(p.pid, mark):
        p.send_signal(signal.SIGCONT)
        p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=term_wait)
    except Exception:  # noqa: BLE001 - TimeoutExpired; anything else: kill anyway
        p.kill()
        p.wait(timeout=10)
