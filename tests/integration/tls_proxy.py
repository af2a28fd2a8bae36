"""A TLS terminator for tests: tls_proxy.py CERT KEY LISTEN_PORT BACKEND_PORT.

kubectl (client-go) sends a kubeconfig's bearer token only over https, and `sluice serve`
speaks plain HTTP: the tests put this in front of it, as a deployment puts nginx or a load
balancer. Bytes are copied both ways, one thread per connection; it exits on SIGTERM."""
import select
import socket
import ssl
import sys
import threading


def serve(conn, backend_port):
    """Copies bytes both ways, from one thread: an SSL socket must not be read in one thread
    while another writes it (OpenSSL's SSL object is not safe for that: CPython crashed, seen
    under kubectl drain's parallel evictions). So the TLS side is read without blocking, and
    bytes buffered inside the SSL object (pending()) are drained before select waits."""
    try:
        upstream = socket.create_connection(("127.0.0.1", backend_port), timeout=10)
        upstream.settimeout(None)
    except OSError:
        conn.close()
        return
    try:
        while True:
            readable = [conn] if conn.pending() else select.select([conn, upstream], [], [])[0]
            if conn in readable:
                conn.setblocking(False)
                try:
                    data = conn.recv(65536)
                except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                    data = None
                finally:
                    conn.setblocking(True)
                if data == b"":
                    break
                if data:
                    upstream.sendall(data)
            if upstream in readable:
                data = upstream.recv(65536)
                if not data:
                    break
                conn.sendall(data)
    except OSError:
        pass
    finally:
        for s in (conn, upstream):
            try:
                s.close()
            except OSError:
                pass


def main():
    cert, key, port, backend = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", port))
    lsock.listen(64)
    print("listening", flush=True)
    while True:
        raw, _ = lsock.accept()
        try:
            raw.settimeout(10)
            conn = ctx.wrap_socket(raw, server_side=True)
            conn.settimeout(None)
        except (OSError, ssl.SSLError):
            raw.close()
            continue
        threading.Thread(target=serve, args=(conn, backend), daemon=True).start()


if __name__ == "__main__":
    main()
