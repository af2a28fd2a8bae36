"""A user's terminal for tests of `sluice run --pty` (slurm_pty.py, tests/security): runs a
command on a fresh pseudo-terminal as its controlling terminal, so that the command sees a real
terminal (raw mode, window size, SIGWINCH), and lets the test type, read and resize.

Not a test itself (ctest runs integration/*.sh and security/*.py)."""
import fcntl
import os
import re
import select
import struct
import subprocess
import termios
import time


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class PtySession:
    """`argv` on a new terminal of rows x cols, in its own session (the terminal is its
    controlling terminal, as a login shell's is)."""

    def __init__(self, argv, env=None, rows=30, cols=100, cwd=None):
        self.master, self.slave = os.openpty()
        set_size(self.slave, rows, cols)
        self.modes_before = termios.tcgetattr(self.slave)
        self.out = b""
        self.pos = 0

        def take_terminal():
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        self.proc = subprocess.Popen(argv, stdin=self.slave, stdout=self.slave,
                                     stderr=self.slave, env=env, cwd=cwd,
                                     start_new_session=True, preexec_fn=take_terminal)

    def _read(self, timeout):
        r, _, _ = select.select([self.master], [], [], timeout)
        if not r:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:
            return False
        self.out += data
        return bool(data)

    def expect(self, pattern, timeout=60):
        """The first match of regex `pattern` (bytes) after the last one; None on timeout."""
        rx = re.compile(pattern)
        deadline = time.time() + timeout
        while True:
            m = rx.search(self.out, self.pos)
            if m:
                self.pos = m.end()
                return m
            left = deadline - time.time()
            if left <= 0:
                return None
            self._read(min(left, 0.5))

    def send(self, data):
        os.write(self.master, data if isinstance(data, bytes) else data.encode())

    def resize(self, rows, cols):
        """The terminal's new size: the command (its foreground process group) gets SIGWINCH."""
        set_size(self.slave, rows, cols)

    def wait(self, timeout=60):
        """The command's exit status (None if it is still running at the deadline), reading its
        last output meanwhile."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                while self._read(0.2):
                    pass
                return rc
            self._read(0.2)
        return None

    def terminal_restored(self):
        """Whether the terminal's modes are those it had before the command ran."""
        return termios.tcgetattr(self.slave) == self.modes_before

    def text(self):
        return self.out.decode("utf-8", "replace")

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.master, self.slave):
            try:
                os.close(fd)
            except OSError:
                pass
