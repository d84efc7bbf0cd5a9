public import HTTPTypes
import HTTPTypesFoundation
import Strata
import _StrataInternals

#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif

/// An ``HTTPTransport`` on URLSession (FoundationNetworking on Linux): the default transport of
/// ``HTTPSource``, so an app needs no other HTTP client.
///
/// It keeps no cache and no cookies of its own (``HTTPCache`` does the caching, and conditional
/// requests must reach the server), follows redirects as URLSession does, and stops downloading
/// a body as soon as it passes the limit. Any task may use it.
public final class URLSessionTransport: HTTPTransport, Sendable {
    /// A transport on an ephemeral session, shared by every source that is given no other.
    public static let shared = URLSessionTransport()

    private let session: URLSession
    private let delegate: TransferDelegate
    /// Whether the configuration's `httpAdditionalHeaders` hold an `Authorization` or a `Cookie`,
    /// which URLSession adds to every request.
    public let sendsCredentials: Bool

    /// Creates a transport on a session with `configuration`, whose URL cache and cookie storage
    /// are turned off.
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        sendsCredentials = (configuration.httpAdditionalHeaders ?? [:]).keys.contains { name in
            guard let name = name.base as? String else { return false }
            return ["authorization", "cookie"].contains(name.lowercased())
        }
        let delegate = TransferDelegate()
        let queue = OperationQueue()
        queue.name = "strata.urlsession"
        queue.maxConcurrentOperationCount = 1
        self.delegate = delegate
        self.session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
    }

    deinit {
        session.invalidateAndCancel()
    }

    /// Sends `request` and returns the response with its whole body.
    ///
    /// - Throws: ``HTTPTransportError``, ``HTTPBodyTooLargeError`` or `CancellationError`.
    public func send(_ request: HTTPRequest, limits: HTTPTransportLimits) async throws -> HTTPTransportResponse {
        guard var urlRequest = URLRequest(httpRequest: request), let url = urlRequest.url else {
            throw HTTPTransportError(.invalidRequest, message: "the request has no URL that URLSession can use")
        }
        urlRequest.timeoutInterval = limits.timeout.timeInterval
        let task = TaskHandle(session.dataTask(with: urlRequest))
        let delegate = delegate
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                delegate.begin(task.task, url: url, limit: limits.maximumBodyByteCount, continuation: continuation)
                task.task.resume()
            }
        } onCancel: {
            task.task.cancel()
        }
    }
}

/// A URLSession task, handed to the cancellation handler; `cancel()` may be called from any
/// thread.
private struct TaskHandle: @unchecked Sendable {
    let task: URLSessionDataTask

    init(_ task: URLSessionDataTask) {
        self.task = task
    }
}

/// Collects each task's response and body, holding it to its limit, and resumes its caller when
/// it completes. URLSession calls it on the transport's serial queue; its state is locked as well,
/// since `begin` runs on the caller's thread.
private final class TransferDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private struct Transfer {
        var continuation: CheckedContinuation<HTTPTransportResponse, any Error>
        var url: URL
        var limit: Int
        var head: HTTPResponse?
        var body = Data()
        var failure: (any Error)?
    }

    private let transfers = LockedState<[Int: Transfer]>([:])

    func begin(
        _ task: URLSessionDataTask,
        url: URL,
        limit: Int,
        continuation: CheckedContinuation<HTTPTransportResponse, any Error>
    ) {
        transfers.withLock { $0[task.taskIdentifier] = Transfer(continuation: continuation, url: url, limit: limit) }
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let allowed = transfers.withLock { transfers -> Bool in
            guard var transfer = transfers[dataTask.taskIdentifier] else { return false }
            defer { transfers[dataTask.taskIdentifier] = transfer }
            guard let head = (response as? HTTPURLResponse)?.httpResponse else {
                transfer.failure = HTTPTransportError(.connectionFailed, message: "the response is not HTTP")
                return false
            }
            if response.expectedContentLength > transfer.limit {
                transfer.failure = HTTPBodyTooLargeError(
                    url: transfer.url,
                    maximumByteCount: transfer.limit,
                    declaredByteCount: Int(response.expectedContentLength)
                )
                return false
            }
            transfer.head = head
            return true
        }
        completionHandler(allowed ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let overLimit = transfers.withLock { transfers -> Bool in
            guard var transfer = transfers[dataTask.taskIdentifier], transfer.failure == nil else { return false }
            defer { transfers[dataTask.taskIdentifier] = transfer }
            guard transfer.body.count + data.count <= transfer.limit else {
                transfer.failure = HTTPBodyTooLargeError(
                    url: transfer.url,
                    maximumByteCount: transfer.limit,
                    declaredByteCount: nil
                )
                transfer.body = Data()
                return true
            }
            transfer.body.append(data)
            return false
        }
        // The rest of the body is not downloaded.
        if overLimit { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let transfer = transfers.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let failure = transfer.failure {
            transfer.continuation.resume(throwing: failure)
        } else if let error {
            transfer.continuation.resume(throwing: Self.transportError(error))
        } else if let head = transfer.head {
            transfer.continuation.resume(
                returning: HTTPTransportResponse(head: head, body: transfer.body, finalURL: task.response?.url)
            )
        } else {
            transfer.continuation.resume(
                throwing: HTTPTransportError(.connectionFailed, message: "the connection ended without a response")
            )
        }
    }

    /// Says what a URLSession error means, keeping it beneath.
    private static func transportError(_ error: any Error) -> any Error {
        guard let error = error as? URLError else {
            return HTTPTransportError(.connectionFailed, message: "the request failed", underlying: error)
        }
        switch error.code {
        case .cancelled:
            return CancellationError()
        case .timedOut:
            return HTTPTransportError(.timedOut, message: "no complete response in time", underlying: error)
        case .httpTooManyRedirects, .redirectToNonExistentLocation:
            return HTTPTransportError(
                .redirects,
                message: "the redirects go round in a cycle or exceed the limit",
                underlying: error
            )
        case .cannotConnectToHost:
            return HTTPTransportError(
                .connectionFailed,
                message: "the server refused the connection (is it running?)",
                underlying: error
            )
        case .networkConnectionLost:
            return HTTPTransportError(
                .connectionFailed,
                message: "the connection was lost before the response was whole",
                underlying: error
            )
        case .badURL, .unsupportedURL:
            return HTTPTransportError(.invalidRequest, message: "URLSession cannot use the URL", underlying: error)
        default:
            return HTTPTransportError(.connectionFailed, message: "the connection failed", underlying: error)
        }
    }
}
