#!/usr/bin/env python3
"""A TCP relay in one process, for fault runs: forwards every connection made to LISTEN_PORT on
127.0.0.1 to TARGET_PORT on 127.0.0.1. `kill -STOP` on it freezes every connection it carries
without closing any (a network partition, as the peers see it: no data, no reset); `kill -CONT`
lets them go on. Prints "listening PORT" once it accepts. Usage: tcp-relay.py LISTEN_PORT TARGET_PORT
(a LISTEN_PORT of 0 picks a free port)."""
import selectors
import socket
import sys


def main():
    listen_port, target_port = int(sys.argv[1]), int(sys.argv[2])
    selector = selectors.DefaultSelector()
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", listen_port))
    server.listen(128)
    server.setblocking(False)
    selector.register(server, selectors.EVENT_READ, None)
    print(f"listening {server.getsockname()[1]}", flush=True)
    peers = {}  # socket -> (its peer, bytes waiting to be written to the peer)

    def close(sock):
        for end in (sock, peers.get(sock, (None,))[0]):
            if end is not None and end in peers:
                selector.unregister(end)
                peers.pop(end)
                end.close()

    while True:
        for key, events in selector.select():
            sock = key.fileobj
            if sock is server:
                client, _ = server.accept()
                try:
                    upstream = socket.create_connection(("127.0.0.1", target_port))
                except OSError:
                    client.close()
                    continue
                for end, other in ((client, upstream), (upstream, client)):
                    end.setblocking(False)
                    peers[end] = (other, bytearray())
                    selector.register(end, selectors.EVENT_READ, None)
                continue
            if sock not in peers:
                continue
            other, _ = peers[sock]
            if events & selectors.EVENT_READ:
                try:
                    data = sock.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    close(sock)
                    continue
                peers[other][1].extend(data)
                selector.modify(other, selectors.EVENT_READ | selectors.EVENT_WRITE, None)
            if events & selectors.EVENT_WRITE and sock in peers:
                pending = peers[sock][1]
                try:
                    sent = sock.send(pending)
                except OSError:
                    close(sock)
                    continue
                del pending[:sent]
                if not pending:
                    selector.modify(sock, selectors.EVENT_READ, None)


if __name__ == "__main__":
    main()
