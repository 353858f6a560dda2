import Foundation
import NIOCore
import NIOSSL
import SwiftASN1
import X509

/// How a session trusts TLS servers (AFSecurityPolicy).
///
/// - `.default`: the system trust store, host names checked; an invalid certificate (self-signed,
///   expired, wrong host) fails with `serverCertificateUntrusted`.
/// - Certificate pinning: a pinned root (a self-signed certificate) is the only trust anchor, so
///   only chains that end in it are trusted — enforced during the handshake. A pinned certificate
///   that is not self-signed (a server's own, CA-issued certificate: AFNetworking's usual pin;
///   or the intermediate CA that issued it) is trusted as it stands, as Apple's trust evaluation
///   treats an anchor: the server must present that certificate or one it issued directly,
///   within its dates and naming the host (each new connection is checked right after the
///   handshake, before any request is sent on it). With such a pin in the list, a pinned
///   certificate further up the chain than the server certificate's issuer is not found (NIOSSL
///   does not show a client the chain it was sent).
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
    /// DER-encoded CA certificates that replace the system's trust store (curl's `--cacert`):
    /// a server's chain must end in one of them. `nil` (default): the system's CAs. Ignored
    /// with certificate pinning, whose pins are the anchors.
    public var trustRoots: [Data]?
    /// The certificate and key presented to a server that asks the client for one (mutual
    /// TLS). `nil` (default): none; such a server then refuses the handshake.
    public var clientIdentity: ClientIdentity?

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

    /// The pinned certificates that are not self-signed: servers' own certificates, which the
    /// handshake cannot anchor trust in (BoringSSL's chains must end in a self-signed root).
    var pinnedServerCertificates: [Data] {
        pinningMode == .certificate ? pinnedCertificates.filter { !Self.isSelfSigned($0) } : []
    }

    /// Whether each connection must be checked against the host it was made for: a pinned server
    /// certificate is checked for the host name by ``connectionCheck(forHost:)``, not the handshake.
    var checksConnectionsPerHost: Bool {
        !allowInvalidCertificates && validatesDomainName && !pinnedServerCertificates.isEmpty
    }

    private static func isSelfSigned(_ der: Data) -> Bool {
        guard let certificate = try? Certificate(derEncoded: Array(der)) else { return false }
        return certificate.issuer == certificate.subject
            && certificate.publicKey.isValidSignature(certificate.signature, for: certificate)
    }

    /// A check AsyncHTTPClient runs on each new connection once TLS is up, before any request is
    /// sent on it: for public-key pinning the server's key must be pinned; for certificate
    /// pinning without chain validation (`allowInvalidCertificates`, or a pinned server
    /// certificate) its certificate must be, and a pinned server certificate must be within its
    /// dates and name `host` (when given and domain names are validated). `nil` when the
    /// handshake's own verification covers the policy.
    func connectionCheck(forHost host: String?) -> (@Sendable (any Channel) -> EventLoopFuture<Void>)? {
        let check: @Sendable (NIOSSLCertificate) throws -> Void
        switch pinningMode {
        case .none:
            return nil
        case .publicKey:
            let pinned = pinnedPublicKeys
            check = { certificate in
                guard pinned.contains(try certificate.extractPublicKey().toSPKIBytes()) else {
                    throw PinMismatch(.keyNotPinned)
                }
            }
        case .certificate:
            guard allowInvalidCertificates || !pinnedServerCertificates.isEmpty else { return nil }
            let pins = CertificatePins(pinnedCertificates)
            let validates = !allowInvalidCertificates
            let expectedHost = validatesDomainName ? host : nil
            check = { peer in try pins.check(try peer.toDERBytes(), validates: validates, host: expectedHost) }
        }
        return { channel in
            // No TLS handler: a plain-http connection, which pinning does not cover.
            channel.pipeline.handler(type: NIOSSLClientHandler.self).map(Optional.some).recover { _ in nil }
                .flatMapThrowing { handler in
                    // Runs on the channel's event loop, where the handler may be read.
                    guard let handler else { return }
                    guard let certificate = handler.peerCertificate else { throw PinMismatch(.certificateNotPinned) }
                    do {
                        try check(certificate)
                    } catch let mismatch as PinMismatch {
                        throw mismatch
                    } catch {
                        // A certificate that cannot be read is not a pinned one.
                        throw PinMismatch(.certificateNotPinned)
                    }
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

    /// Reads every certificate of a PEM bundle or DER file (a CA bundle for ``trustRoots``).
    /// - Throws: ``SecurityPolicyError`` naming the file when it cannot be read or holds no
    ///   certificate.
    public static func certificates(contentsOf url: URL) throws -> [Data] {
        let first = try certificate(contentsOf: url)
        guard let data = try? Data(contentsOf: url),
            String(decoding: data.prefix(1 << 16), as: UTF8.self).contains("-----BEGIN CERTIFICATE-----"),
            let all = try? NIOSSLCertificate.fromPEMBytes(Array(data)), all.count > 1
        else { return [first] }
        return try all.map { Data(try $0.toDERBytes()) }
    }

    /// Reads a certificate to pin from a PEM or DER file and checks that it is one.
    /// - Throws: ``SecurityPolicyError`` naming the file when it cannot be read or holds no
    ///   certificate (random bytes, a private key, an empty file).
    public static func certificate(contentsOf url: URL) throws -> Data {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw SecurityPolicyError(path: url.path, reason: "cannot read the file: \(reasonInWords(error))")
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
        // Checked when the identity was made; a failure here cannot happen short of a NIOSSL
        // that reads less than swift-certificates does, and then no certificate is sent.
        if let (chain, key) = try? clientIdentity?.nioValues() {
            tls.certificateChain = chain
            tls.privateKey = key
        }
        if allowInvalidCertificates {
            // Pins, when set, are checked by `connectionCheck` once the handshake is done.
            tls.certificateVerification = .none
            return tls
        }
        tls.certificateVerification = validatesDomainName ? .fullVerification : .noHostnameVerification
        if pinningMode == .certificate {
            guard pinnedServerCertificates.isEmpty else {
                // A pinned server certificate is its own anchor: `connectionCheck` checks it.
                tls.certificateVerification = .none
                return tls
            }
            let certificates = pinnedCertificates.compactMap { try? NIOSSLCertificate(bytes: Array($0), format: .der) }
            tls.trustRoots = .certificates(certificates)
        } else if let trustRoots {
            tls.trustRoots = .certificates(
                trustRoots.compactMap { try? NIOSSLCertificate(bytes: Array($0), format: .der) }
            )
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

/// The server's certificate (or its public key) is not among the pinned ones, or a certificate
/// trusted through a pin is out of date or names another host.
struct PinMismatch: Error, CustomStringConvertible {
    enum Reason {
        case keyNotPinned, certificateNotPinned
        case expired(Date)
        case notYetValid(Date)
        case wrongHost(String)
    }

    let reason: Reason

    init(_ reason: Reason) { self.reason = reason }

    var description: String {
        switch reason {
        case .keyNotPinned: "the server's public key does not match any pinned key"
        case .certificateNotPinned: "the server's certificate does not match any pinned certificate"
        case .expired(let date): "the server's certificate expired on \(date.formatted(.iso8601))"
        case .notYetValid(let date): "the server's certificate is not valid before \(date.formatted(.iso8601))"
        case .wrongHost(let host): "the server's certificate is for another host than \(host) (wrong host)"
        }
    }
}
