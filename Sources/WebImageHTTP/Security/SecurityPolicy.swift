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

    /// The oldest TLS version a connection may use.
    public enum TLSVersion: Sendable, Hashable, Comparable {
        case tls1_0, tls1_1, tls1_2, tls1_3

        var nioVersion: NIOSSL.TLSVersion {
            switch self {
            case .tls1_0: .tlsv1
            case .tls1_1: .tlsv11
            case .tls1_2: .tlsv12
            case .tls1_3: .tlsv13
            }
        }
    }

    public var pinningMode: PinningMode
    /// DER-encoded pinned certificates.
    public var pinnedCertificates: [Data]
    /// Skip chain validation (self-signed, expired, wrong host are accepted). Pins are still
    /// enforced when set, as in AFSecurityPolicy: with certificate pinning the server's
    /// certificate must then be one of the pinned ones, with public-key pinning its key one of
    /// theirs. Default `false`. For tests and development only.
    public var allowInvalidCertificates: Bool
    /// Check that the certificate names the host. Default `true`.
    public var validatesDomainName: Bool
    /// The oldest TLS version accepted. Default TLS 1.2 (TLS 1.0 and 1.1 are broken and
    /// deprecated, RFC 8996); lower it only for a server that cannot be fixed.
    public var minimumTLSVersion: TLSVersion = .tls1_2

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

    /// A check AsyncHTTPClient runs on each new connection once TLS is up, before any request is
    /// sent on it: for public-key pinning the server's key must be pinned; for certificate
    /// pinning without chain validation (`allowInvalidCertificates`) its certificate must be.
    /// `nil` when the handshake's own verification covers the policy.
    var connectionCheck: (@Sendable (any Channel) -> EventLoopFuture<Void>)? {
        let matches: @Sendable (NIOSSLCertificate) throws -> Bool
        switch pinningMode {
        case .none:
            return nil
        case .publicKey:
            let pinned = pinnedPublicKeys
            matches = { pinned.contains(try $0.extractPublicKey().toSPKIBytes()) }
        case .certificate:
            guard allowInvalidCertificates else { return nil }
            let pinned = Set(pinnedCertificates.map { [UInt8]($0) })
            matches = { pinned.contains(try $0.toDERBytes()) }
        }
        let mode = pinningMode
        return { channel in
            channel.pipeline.handler(type: NIOSSLClientHandler.self).flatMapThrowing { handler in
                // Runs on the channel's event loop, where the handler may be read.
                guard let certificate = handler.peerCertificate, try matches(certificate) else {
                    throw PinMismatch(mode: mode)
                }
            }.flatMapError { error in
                // No TLS handler: a plain-http connection, which pinning does not cover.
                error is PinMismatch
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

    /// Reads a certificate to pin from a PEM or DER file and checks that it is one.
    /// - Throws: ``SecurityPolicyError`` naming the file when it cannot be read or holds no
    ///   certificate (random bytes, a private key, an empty file).
    public static func certificate(contentsOf url: URL) throws -> Data {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw SecurityPolicyError(path: url.path, reason: "cannot read the file")
        }
        let text = String(decoding: data.prefix(1 << 16), as: UTF8.self)
        if text.contains("-----BEGIN") {
            guard text.contains("-----BEGIN CERTIFICATE-----") else {
                let kind =
                    text.components(separatedBy: "-----BEGIN ").dropFirst().first?
                    .components(separatedBy: "-----").first ?? "something else"
                throw SecurityPolicyError(path: url.path, reason: "a PEM \(kind.lowercased()), not a certificate")
            }
            guard let certificate = try? NIOSSLCertificate(bytes: Array(data), format: .pem),
                let der = try? certificate.toDERBytes()
            else { throw SecurityPolicyError(path: url.path, reason: "a damaged PEM certificate") }
            return Data(der)
        }
        guard (try? NIOSSLCertificate(bytes: Array(data), format: .der)) != nil else {
            throw SecurityPolicyError(path: url.path, reason: "not a PEM or DER certificate")
        }
        return data
    }

    /// The NIOSSL client configuration that enforces this policy.
    var tlsConfiguration: TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = minimumTLSVersion.nioVersion
        if allowInvalidCertificates {
            // Pins, when set, are checked by `connectionCheck` once the handshake is done.
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

/// A file given as a certificate to pin that is not one.
public struct SecurityPolicyError: Error, Sendable, CustomStringConvertible {
    /// The file.
    public let path: String
    /// Why it was refused.
    public let reason: String

    public var description: String { "\(path): \(reason)" }
}

/// The server's certificate (or its public key) is not among the pinned ones.
struct PinMismatch: Error, CustomStringConvertible {
    let mode: SecurityPolicy.PinningMode
    var description: String {
        mode == .publicKey
            ? "the server's public key does not match any pinned key"
            : "the server's certificate does not match any pinned certificate"
    }
}
