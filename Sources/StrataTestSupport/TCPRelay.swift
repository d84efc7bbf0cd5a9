import Foundation
import Synchronization
package import _StrataInternals

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP relay on 127.0.0.1 that a test can freeze: while frozen it forwards no byte in either
/// direction and closes nothing, as a network partition, a NAT that dropped its mapping or a
/// failover without a reset looks to both ends (a half-open connection); resumed, it forwards
/// what it held and what comes next. Any task may use it. It can also slow every connection to
/// a rate (``limit(toBytesPerSecond:)``), as a slow link does.
///
/// Its threads are its own (blocking reads and writes, never on the cooperative pool); each
/// connection has two, one a direction.
package final class TCPRelay: Sendable {
    /// The port the relay listens on.
    package let port: UInt16
    private let targetPort: UInt16
    private let listener: Int32
    private let frozen = Atomic(false)
    private let bytesPerSecond = Atomic(0)
    private let closed = Atomic(false)
    private let sockets = LockedState<[Int32]>([])
    private let accepted = Atomic(0)

    /// Starts relaying connections to 127.0.0.1:`targetPort`.
    package init(toPort targetPort: UInt16) throws(SystemCallError) {
        self.targetPort = targetPort
        let descriptor = socket(AF_INET, Self.streamType, 0)
        guard descriptor >= 0 else { throw SystemCallError(call: "socket", path: "127.0.0.1", errno: errno) }
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(descriptor, 64) == 0 else {
            let failure = errno
            close(descriptor)
            throw SystemCallError(call: "bind", path: "127.0.0.1", errno: failure)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        listener = descriptor
        let thread = Thread { [self] in acceptConnections() }
        thread.name = "strata-relay-accept"
        thread.start()
    }

    deinit {
        stop()
    }

    /// Connections accepted so far.
    package var connectionCount: Int {
        accepted.load(ordering: .relaxed)
    }

    /// Stops forwarding; every connection stays open and silent.
    package func freeze() {
        frozen.store(true, ordering: .releasing)
    }

    /// Forwards again, first what was held.
    package func resume() {
        frozen.store(false, ordering: .releasing)
    }

    /// Forwards at most `rate` bytes a second in each direction of each connection, from the
    /// next chunk on; 0 lifts the limit.
    package func limit(toBytesPerSecond rate: Int) {
        bytesPerSecond.store(max(0, rate), ordering: .releasing)
    }

    /// Closes the listener and every connection.
    package func stop() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for descriptor in sockets.withLock({ $0 }) {
            shutdown(descriptor, Int32(SHUT_RDWR))
        }
    }

    /// `SOCK_STREAM`: an enum's case in glibc's headers, an integer in Darwin's and musl's.
    private static var streamType: Int32 {
        #if canImport(Glibc)
        Int32(SOCK_STREAM.rawValue)
        #else
        SOCK_STREAM
        #endif
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func acceptConnections() {
        while !closed.load(ordering: .acquiring) {
            let client = accept(listener, nil, nil)
            guard client >= 0 else {
                if errno == EINTR { continue }
                return
            }
            let server = socket(AF_INET, Self.streamType, 0)
            var address = Self.loopback(port: targetPort)
            let connected =
                server >= 0
                && withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                } == 0
            guard connected else {
                close(client)
                if server >= 0 { close(server) }
                continue
            }
            accepted.add(1, ordering: .relaxed)
            sockets.withLock { $0 += [client, server] }
            let pair = Pair()
            for (from, to) in [(client, server), (server, client)] {
                let thread = Thread { [self] in
                    pump(from: from, to: to)
                    // The first direction to end shuts the other down; the second closes both.
                    shutdown(to, Int32(SHUT_RDWR))
                    shutdown(from, Int32(SHUT_RDWR))
                    if pair.end() {
                        sockets.withLock { $0.removeAll { $0 == client || $0 == server } }
                        close(client)
                        close(server)
                    }
                }
                thread.name = "strata-relay-pump"
                thread.start()
            }
        }
    }

    /// Copies bytes from `from` to `to` until either end closes, holding them while frozen.
    private func pump(from: Int32, to: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while !closed.load(ordering: .acquiring) {
            if frozen.load(ordering: .acquiring) {
                usleep(2_000)
                continue
            }
            var poller = pollfd(fd: from, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 20)
            if ready < 0, errno == EINTR { continue }
            guard ready >= 0 else { return }
            guard ready > 0 else { continue }
            let count = read(from, &buffer, buffer.count)
            guard count > 0 else { return }
            // A chunk read just before a freeze waits for the thaw, as the network would hold it.
            while frozen.load(ordering: .acquiring), !closed.load(ordering: .acquiring) {
                usleep(2_000)
            }
            var sent = 0
            while sent < count {
                let written = buffer.withUnsafeBytes { write(to, $0.baseAddress! + sent, count - sent) }
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return }
                sent += written
            }
            let rate = bytesPerSecond.load(ordering: .acquiring)
            if rate > 0 {
                usleep(UInt32(min(Int(UInt32.max), count * 1_000_000 / rate)))
            }
        }
    }

    /// Counts the two directions of one connection down to the one that closes it.
    private final class Pair: Sendable {
        private let left = Atomic(2)

        /// Whether the caller was the last direction to end.
        func end() -> Bool {
            left.subtract(1, ordering: .acquiringAndReleasing).newValue == 0
        }
    }
}
