import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOHTTPCompression
import NIOPosix
import NIOSSL

extension HTTPSession {
    /// Maps AsyncHTTPClient, NIO and TLS errors to ``HTTPSessionError``.
    static func map(_ error: any Error, url: URL) -> HTTPSessionError {
        if let error = error as? HTTPSessionError { return error }
        if error is CancellationError { return .cancelled(url) }
        if let error = error as? HTTPClientError { return map(error, url: url) }
        return mapBodyError(error, url: url) ?? mapTransportError(error, url: url)
    }

    /// AsyncHTTPClient's own errors: timeouts, lost connections, bad URLs.
    private static func map(_ error: HTTPClientError, url: URL) -> HTTPSessionError {
        let subject = url.absoluteString
        switch error {
        case .cancelled: return .cancelled(url)
        case .deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout, .tlsHandshakeTimeout,
            .getConnectionFromPoolTimeout, .httpProxyHandshakeTimeout, .socksHandshakeTimeout:
            return HTTPSessionError(
                .timedOut,
                url: url,
                message: "\(subject): timed out (\(error.shortDescription))"
            )
        case .remoteConnectionClosed, .bodyLengthMismatch, .uncleanShutdown:
            return HTTPSessionError(
                .connectionLost,
                url: url,
                message: "\(subject): the connection was lost (\(error.shortDescription))"
            )
        case .invalidURL, .emptyHost, .emptyScheme:
            return HTTPSessionError(
                .invalidURL,
                url: url,
                message: "\(subject): invalid URL (\(error.shortDescription))"
            )
        default:
            return HTTPSessionError(.networkError, url: url, message: "\(subject): \(error.shortDescription)")
        }
    }

    /// Errors reading the response: decompression and HTTP parsing; `nil` for others.
    private static func mapBodyError(_ error: any Error, url: URL) -> HTTPSessionError? {
        let subject = url.absoluteString
        if let error = error as? NIOHTTPDecompression.DecompressionError {
            switch error {
            case .limit:
                return HTTPSessionError(
                    .responseTooLarge,
                    url: url,
                    message: "\(subject): the compressed body expands to over 100 times its size"
                        + " (the decompression limit; a decompression bomb?)"
                )
            case .inflationError(let code), .initializationError(let code):
                return HTTPSessionError(
                    .networkError,
                    url: url,
                    message: "\(subject): the gzip/deflate body cannot be decompressed (zlib error \(code))"
                )
            }
        }
        if error is NIOHTTPDecompression.ExtraDecompressionError {
            return HTTPSessionError(
                .networkError,
                url: url,
                message: "\(subject): the gzip/deflate body is cut short or followed by stray bytes (\(error))"
            )
        }
        if let error = error as? HTTPParserError {
            if error == .invalidEOFState {
                return HTTPSessionError(
                    .connectionLost,
                    url: url,
                    message: "\(subject): the connection closed before the body ended"
                )
            }
            return HTTPSessionError(.networkError, url: url, message: "\(subject): invalid HTTP response (\(error))")
        }
        return nil
    }

    /// Errors reaching the server: DNS, connecting, the address policy, pinning, TLS, sockets.
    private static func mapTransportError(_ error: any Error, url: URL) -> HTTPSessionError {
        let subject = url.absoluteString
        if let error = error as? NIOConnectionError {
            if error.connectionErrors.isEmpty && (error.dnsAError != nil || error.dnsAAAAError != nil) {
                return HTTPSessionError(
                    .cannotFindHost,
                    url: url,
                    message: "\(subject): cannot find host \(error.host)"
                )
            }
            return HTTPSessionError(
                .cannotConnect,
                url: url,
                message: "\(subject): cannot connect to \(error.host):\(error.port)"
            )
        }
        if error is AddressNotAllowed {
            return HTTPSessionError(.connectionNotAllowed, url: url, message: "\(subject): \(error)")
        }
        if error is PinMismatch {
            return HTTPSessionError(.serverCertificateUntrusted, url: url, message: "\(subject): \(error)")
        }
        if let refusal = clientCertificateRefusal(error) {
            return HTTPSessionError(.clientCertificateRejected, url: url, message: "\(subject): TLS failed: \(refusal)")
        }
        if error is NIOSSLError || error is NIOSSLExtraError || error is BoringSSLError {
            return HTTPSessionError(
                .serverCertificateUntrusted,
                url: url,
                message: "\(subject): TLS failed: \(tlsFailureReason(error, host: url.host ?? "the host"))"
            )
        }
        if let error = error as? IOError, error.errnoCode == ECONNREFUSED {
            return HTTPSessionError(.cannotConnect, url: url, message: "\(subject): connection refused")
        }
        if error is ChannelError, case .connectTimeout = error as! ChannelError {
            return HTTPSessionError(.timedOut, url: url, message: "\(subject): connect timed out")
        }
        if let error = error as? IOError {  // its description is a dump of the failed call
            return HTTPSessionError(
                .networkError,
                url: url,
                message: "\(subject): \(String(cString: strerror(error.errnoCode)))"
            )
        }
        return HTTPSessionError(.networkError, url: url, message: "\(subject): \(reasonInWords(error))")
    }
}

/// Why the server refused the client's certificate (or its lack of one), when the handshake
/// ended with the server's alert saying so; `nil` for every other failure. A client receives
/// these alerts only from a server that checks client certificates.
func clientCertificateRefusal(_ error: any Error) -> String? {
    guard error is BoringSSLError || error is NIOSSLError else { return nil }
    let text = String(describing: error)
    if text.contains("ALERT_CERTIFICATE_REQUIRED") {
        return "the server asks for a client certificate and none was given (SecurityPolicy.clientIdentity, --cert)"
    }
    let reasons: [(String, String)] = [
        ("ALERT_UNKNOWN_CA", "the server does not trust the authority that issued the client certificate"),
        ("ALERT_CERTIFICATE_EXPIRED", "the server says the client certificate has expired"),
        ("ALERT_CERTIFICATE_REVOKED", "the server says the client certificate was revoked"),
        ("ALERT_BAD_CERTIFICATE", "the server refused the client certificate"),
        ("ALERT_UNSUPPORTED_CERTIFICATE", "the server refused the client certificate (not for client authentication)"),
        ("ALERT_CERTIFICATE_UNKNOWN", "the server refused the client certificate"),
        ("ALERT_ACCESS_DENIED", "the server refused access to the client certificate's holder"),
    ]
    return reasons.first { text.contains($0.0) }?.1
}

/// A TLS failure in words, from BoringSSL's reason codes (never its raw error dump).
func tlsFailureReason(_ error: any Error, host: String) -> String {
    let text = String(describing: error)
    if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
        return "the certificate is for another host, not \(host) (wrong host)"
    }
    let reasons: [(String, String)] = [
        (
            "CERTIFICATE_VERIFY_FAILED",
            "the server's certificate is not trusted (self-signed, expired, or issued by an unknown authority)"
        ),
        ("UNSUPPORTED_PROTOCOL", "the server only offers a TLS version that is too old (TLS 1.2 is the minimum)"),
        ("PROTOCOL_VERSION", "the server only offers a TLS version that is too old (TLS 1.2 is the minimum)"),
        ("WRONG_VERSION_NUMBER", "the server did not answer with TLS (plain HTTP on an https port?)"),
        ("NO_SHARED_CIPHER", "the server and client share no cipher"),
        ("HANDSHAKE_FAILURE", "the server refused the TLS handshake"),
        ("UNKNOWN_CA", "the server's certificate is issued by an unknown authority"),
        ("BAD_CERTIFICATE", "the server's certificate is damaged"),
    ]
    for (code, reason) in reasons where text.contains(code) { return reason }
    if let ssl = error as? NIOSSLError {
        switch ssl {
        case .uncleanShutdown: return "the server closed the connection during the handshake"
        case .handshakeFailed: return "the TLS handshake failed"
        default: break
        }
    }
    return "the TLS handshake failed"
}
