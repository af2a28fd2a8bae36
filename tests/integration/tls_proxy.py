"""A TLS terminator for tests: tls_proxy.py CERT KEY LISTEN_PORT BACKEND_PORT.

kubectl (client-go) sends a kubeconfig's bearer token only over https, and `sluice serve`
speaks plain HTTP: the tests put this in front of it, as a deployment puts nginx or a load
balancer. Bytes are copied both ways, one thread per direction; it exits on SIGTERM."""
import socket
import ssl
import sys
import threading


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(conn, backend_port):
    try:
        upstream = socket.create_connection(("127.0.0.1", backend_port), timeout=10)
        upstream.settimeout(None)
    except OSError:
        conn.close()
        return
    threading.Thread(target=pump, args=(conn, upstream), daemon=True).start()
    pump(upstream, conn)


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
