#if AsyncHTTPClient
public import AsyncHTTPClient
import Foundation
public import HTTPTypes
import NIOCore
import NIOHTTP1
import Strata
public import StrataHTTP
import _StrataInternals

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An `HTTPTransport` on AsyncHTTPClient, for servers: connection pooling on
/// SwiftNIO's event loops, redirects as the client's `redirectConfiguration` says.
///
/// ```swift
/// let source = HTTPSource(client: .shared, timeout: .seconds(10))
/// ```
///
/// The transport never shuts its client down. `HTTPClient.shared` needs no shutting down; a client
/// you create is yours: call `try await client.shutdown()` once the last request has finished.
/// Any task may use it.
public struct AsyncHTTPClientTransport: HTTPTransport {
    /// The client that makes the requests.
    public let client: HTTPClient

    /// `true`: the client's deadline covers the response head, and the transport gives up on a
    /// body still arriving at the limit.
    public var enforcesTimeout: Bool { true }

    /// Creates a transport on `client`.
    public init(client: HTTPClient = .shared) {
        self.client = client
    }

    /// Sends `request` and returns the response with its whole body.
    ///
    /// - Throws: `HTTPTransportError`, `HTTPBodyTooLargeError` or
    ///   `CancellationError`.
    public func send(_ request: HTTPRequest, limits: HTTPTransportLimits) async throws -> HTTPTransportResponse {
        guard let url = request.url else {
            throw HTTPTransportError(.invalidRequest, message: "the request has no URL")
        }
        let end = ContinuousClock.now.advanced(by: limits.timeout)
        do {
            var clientRequest = HTTPClientRequest(url: url.absoluteString)
            clientRequest.method = HTTPMethod(rawValue: request.method.rawValue)
            for field in request.headerFields {
                clientRequest.headers.add(name: field.name.rawName, value: field.value)
            }
            let response = try await client.execute(
                clientRequest,
                deadline: .now() + .nanoseconds(limits.timeout.clampedNanoseconds)
            )
            var fields = HTTPFields()
            for header in response.headers {
                if let name = HTTPField.Name(header.name) {
                    fields.append(HTTPField(name: name, value: header.value))
                }
            }
            let head = HTTPResponse(
                status: HTTPResponse.Status(
                    code: Int(response.status.code),
                    reasonPhrase: response.status.reasonPhrase
                ),
                headerFields: fields
            )
            if let declared = response.headers.first(name: "content-length").flatMap({ Int($0) }),
                declared > limits.maximumBodyByteCount
            {
                throw HTTPBodyTooLargeError(
                    url: url,
                    maximumByteCount: limits.maximumBodyByteCount,
                    declaredByteCount: declared
                )
            }
            // The client's deadline covers only the head: the body gets what is left of the limit.
            let limit = limits.maximumBodyByteCount
            let outcome = await Deadline.race(within: ContinuousClock.now.duration(to: end)) {
                () async throws -> ByteBuffer in
                do {
                    return try await response.body.collect(upTo: limit)
                } catch is NIOTooManyBytesError {
                    throw HTTPBodyTooLargeError(url: url, maximumByteCount: limit, declaredByteCount: nil)
                }
            }
            switch outcome {
            case .value(let buffer):
                return HTTPTransportResponse(head: head, body: Data(buffer.readableBytesView), finalURL: response.url)
            case .failure(let error): throw error
            case .timedOut: throw HTTPClientError.deadlineExceeded
            case .cancelled: throw CancellationError()
            }
        } catch let error as HTTPBodyTooLargeError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw Self.transportError(error)
        }
    }

    /// Says what a client error means, keeping it beneath.
    private static func transportError(_ error: any Error) -> any Error {
        if let error = error as? HTTPClientError {
            if error == .cancelled { return CancellationError() }
            if [.deadlineExceeded, .connectTimeout, .readTimeout, .writeTimeout, .getConnectionFromPoolTimeout]
                .contains(error)
            {
                return HTTPTransportError(.timedOut, message: "no complete response in time", underlying: error)
            }
            if error == .alreadyShutdown {
                return HTTPTransportError(.shutDown, message: "the HTTP client was shut down", underlying: error)
            }
            if error == .redirectCycleDetected {
                return HTTPTransportError(.redirects, message: "the redirects go round in a cycle", underlying: error)
            }
            if error == .redirectLimitReached {
                return HTTPTransportError(
                    .redirects,
                    message: "the response redirected more times than the client allows",
                    underlying: error
                )
            }
            if error == .remoteConnectionClosed {
                return HTTPTransportError(
                    .connectionFailed,
                    message: "the server closed the connection before answering",
                    underlying: error
                )
            }
            return HTTPTransportError(.connectionFailed, message: "the request failed", underlying: error)
        }
        if let error = error as? IOError {
            let message =
                switch error.errnoCode {
                case ECONNREFUSED: "the server refused the connection (is it running?)"
                case ECONNRESET: "the server reset the connection"
                default: "the connection failed"
                }
            return HTTPTransportError(.connectionFailed, message: message, underlying: error)
        }
        if let error = error as? HTTPParserError {
            return HTTPTransportError(
                .connectionFailed,
                message: "the response was cut short or malformed",
                underlying: error
            )
        }
        return HTTPTransportError(.connectionFailed, message: "the request failed", underlying: error)
    }
}

extension HTTPSource {
    /// Creates a source that makes its requests with AsyncHTTPClient's `client`.
    ///
    /// - Precondition: `timeout` is positive and `maximumBodyByteCount` is not negative.
    public init(
        client: HTTPClient,
        timeout: Duration = .seconds(30),
        maximumBodyByteCount: Int = 32 * 1024 * 1024,
        headers: HTTPFields = [:],
        name: String = "HTTPSource"
    ) {
        self.init(
            transport: AsyncHTTPClientTransport(client: client),
            timeout: timeout,
            maximumBodyByteCount: maximumBodyByteCount,
            headers: headers,
            name: name
        )
    }
}

extension Duration {
    /// The duration in whole nanoseconds, clamped to what an `Int64` holds.
    var clampedNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (wholeSeconds, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return wholeSeconds.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
#endif
