"""A loopback TCP proxy between one agent and the server: the nemesis's network partition.

Modes:
  pass   bytes flow both ways.
  drop   every open connection is reset and new ones are reset on accept: the agent sees
         connection errors at once (a cable pulled, a firewall that rejects).
  stall  connections stay open but no byte moves either way; new connections are accepted
         and wait too (a black hole: the agent sees timeouts). When the stall ends, what the
         agent wrote meanwhile is delivered late, unless the agent gave up on the connection:
         a stale sync reaching the server seconds after it was sent.
"""
import select
import socket
import struct
import threading


class Proxy:
    def __init__(self, target_port):
        self.target_port = target_port
        self.mode = "pass"
        self.lock = threading.Lock()
        self.conns = []  # [client socket, upstream socket] pairs
        self.closed = False
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept_loop, daemon=True).start()

    def set_mode(self, mode):
        assert mode in ("pass", "drop", "stall")
        with self.lock:
            self.mode = mode
            if mode == "drop":
                for pair in self.conns:
                    for s in pair:
                        _reset(s)
                self.conns = []

    def close(self):
        self.closed = True
        self.set_mode("drop")
        self.listener.close()

    def _accept_loop(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.mode == "drop":
                _reset(client)
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=2)
        except OSError:
            _reset(client)  # the server is down: the agent sees a refused connection
            return
        pair = [client, upstream]
        with self.lock:
            if self.mode == "drop":
                _reset(client)
                _reset(upstream)
                return
            self.conns.append(pair)
        self._pump(client, upstream)
        with self.lock:
            if pair in self.conns:
                self.conns.remove(pair)
        for s in pair:
            s.close()

    def _pump(self, a, b):
        """Copies both ways until either side closes; moves nothing while stalled."""
        peer = {a: b, b: a}
        while not self.closed:
            if self.mode == "stall":
                select.select([], [], [], 0.05)
                continue
            try:
                ready, _, _ = select.select([a, b], [], [], 0.05)
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    peer[s].sendall(data)
            except (OSError, ValueError):  # ValueError: a socket `drop` closed under us
                return


def _reset(s):
    """Closes with an RST (SO_LINGER 0), not a FIN: the peer gets ECONNRESET."""
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
    except OSError:
        pass
