import Foundation
import NIOCore
import NIOSSL

/// How a session trusts TLS servers (AFSecurityPolicy).
///
/// - `.default`: the system trust store, host names checked; an invalid certificate (self-signed,
///   expired, wrong host) fails with `serverCertificateUntrusted`.
/// - Certificate pinning: only chains that end in one of the pinned certificates are trusted —
///   enforced during the handshake, so a pin mismatch fails even when the chain is otherwise valid.
/// - Public-key pinning: the chain is validated as usual (unless `allowInvalidCertificates`), then
///   the server certificate's public key must be one of the pinned certificates' keys — checked on
///   every new connection right after the handshake, before any request is sent on it.
public struct SecurityPolicy: Sendable {
    /// What the server's certificate chain is checked against.
    public enum PinningMode: Sendable, Hashable {
        /// The system trust store.
        case none
        /// The pinned certificates (and only them) are the trust anchors.
        case certificate
        /// The server certificate's public key must match a pinned certificate's.
        case publicKey
    }

    public var pinningMode: PinningMode
    /// DER-encoded pinned certificates.
    public var pinnedCertificates: [Data]
    /// Accept any certificate (self-signed, expired, wrong host). Default `false`. For tests and
    /// development only.
    public var allowInvalidCertificates: Bool
    /// Check that the certificate names the host. Default `true`.
    public var validatesDomainName: Bool

    public init(
        pinningMode: PinningMode = .none,
        pinnedCertificates: [Data] = [],
        allowInvalidCertificates: Bool = false,
        validatesDomainName: Bool = true
    ) {
        self.pinningMode = pinningMode
        self.pinnedCertificates = pinnedCertificates
        self.allowInvalidCertificates = allowInvalidCertificates
        self.validatesDomainName = validatesDomainName
    }

    public static let `default` = SecurityPolicy()

    /// Pins the public keys of the given DER certificates.
    public static func pinning(
        publicKeysOf certificates: [Data],
        allowInvalidCertificates: Bool = false
    ) -> SecurityPolicy {
        SecurityPolicy(
            pinningMode: .publicKey,
            pinnedCertificates: certificates,
            allowInvalidCertificates: allowInvalidCertificates
        )
    }

    /// The SubjectPublicKeyInfo of each pinned certificate.
    var pinnedPublicKeys: Set<[UInt8]> {
        Set(
            pinnedCertificates.compactMap {
                try? NIOSSLCertificate(bytes: Array($0), format: .der).extractPublicKey().toSPKIBytes()
            }
        )
    }

    /// For public-key pinning, a check AsyncHTTPClient runs on each new connection once TLS is up:
    /// it fails the connection unless the server's key is pinned. `nil` for the other modes.
    var connectionCheck: (@Sendable (any Channel) -> EventLoopFuture<Void>)? {
        guard pinningMode == .publicKey else { return nil }
        let pinned = pinnedPublicKeys
        return { channel in
            channel.pipeline.handler(type: NIOSSLClientHandler.self).flatMapThrowing { handler in
                // Runs on the channel's event loop, where the handler may be read.
                let key = try handler.peerCertificate?.extractPublicKey().toSPKIBytes()
                guard let key, pinned.contains(key) else { throw PublicKeyPinMismatch() }
            }.flatMapError { error in
                // No TLS handler: a plain-http connection, which pinning does not cover.
                error is PublicKeyPinMismatch
                    ? channel.eventLoop.makeFailedFuture(error) : channel.eventLoop.makeSucceededVoidFuture()
            }
        }
    }

    /// Pins the given DER certificates.
    public static func pinning(certificates: [Data], validatesDomainName: Bool = true) -> SecurityPolicy {
        SecurityPolicy(
            pinningMode: .certificate,
            pinnedCertificates: certificates,
            validatesDomainName: validatesDomainName
        )
    }

    /// Reads a pinned certificate from a DER or PEM file.
    public static func certificate(contentsOf url: URL) throws -> Data {
        let data = try Data(contentsOf: url)
        if let text = String(data: data, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
            let certificate = try NIOSSLCertificate(bytes: Array(data), format: .pem)
            return Data(try certificate.toDERBytes())
        }
        return data
    }

    /// The NIOSSL client configuration that enforces this policy.
    var tlsConfiguration: TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if allowInvalidCertificates {
            tls.certificateVerification = .none
            return tls
        }
        tls.certificateVerification = validatesDomainName ? .fullVerification : .noHostnameVerification
        if pinningMode == .certificate {
            let certificates = pinnedCertificates.compactMap { try? NIOSSLCertificate(bytes: Array($0), format: .der) }
            tls.trustRoots = .certificates(certificates)
        }
        return tls
    }
}

/// The server's public key is not among the pinned keys.
struct PublicKeyPinMismatch: Error, CustomStringConvertible {
    var description: String { "the server's public key does not match any pinned key" }
}
