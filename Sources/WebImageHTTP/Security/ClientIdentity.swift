import Foundation
import NIOSSL
import SwiftASN1
import X509

/// A client certificate and its private key, presented to servers that ask for one (mutual TLS:
/// URLSession's `NSURLAuthenticationMethodClientCertificate` answered with a `URLCredential`
/// identity; curl's `--cert`/`--key`). Set it as ``SecurityPolicy/clientIdentity``.
///
/// Checked when made: the chain parses, the key parses, and the key belongs to the first
/// certificate, so a wrong pair fails here, naming the file, and not at a handshake. Encrypted
/// keys are not read (decrypt one with `openssl pkey -in key.pem -out plain.pem`).
public struct ClientIdentity: Sendable, Hashable {
    /// The client's certificate first, then any intermediates that issued it (DER).
    public let certificateChain: [Data]
    /// The private key of the first certificate (PEM).
    public let privateKeyPEM: String

    /// An identity from DER certificates and a PEM private key.
    /// - Throws: ``SecurityPolicyError`` (its path "(client identity)") when the chain is empty,
    ///   a certificate or the key does not parse, or the key is not the certificate's.
    public init(certificateChain: [Data], privateKeyPEM: String) throws(SecurityPolicyError) {
        try self.init(certificateChain: certificateChain, privateKeyPEM: privateKeyPEM, source: "(client identity)")
    }

    private init(certificateChain: [Data], privateKeyPEM: String, source: String) throws(SecurityPolicyError) {
        guard let first = certificateChain.first else {
            throw SecurityPolicyError(path: source, reason: "no client certificate")
        }
        let certificate: Certificate
        do {
            certificate = try Certificate(derEncoded: Array(first))
        } catch {
            throw SecurityPolicyError(path: source, reason: "the client certificate does not parse")
        }
        if privateKeyPEM.contains("ENCRYPTED") {
            throw SecurityPolicyError(
                path: source,
                reason: "an encrypted private key (decrypt it first: openssl pkey -in KEY -out PLAIN)"
            )
        }
        let key: Certificate.PrivateKey
        do {
            key = try Certificate.PrivateKey(pemEncoded: privateKeyPEM)
        } catch {
            throw SecurityPolicyError(path: source, reason: "no readable private key (PEM: PKCS#8, EC or RSA)")
        }
        guard key.publicKey == certificate.publicKey else {
            throw SecurityPolicyError(path: source, reason: "the private key does not belong to the client certificate")
        }
        self.certificateChain = certificateChain
        self.privateKeyPEM = privateKeyPEM
    }

    /// Reads an identity as curl's `--cert FILE --key FILE` does: `certificateFile` holds the
    /// PEM certificate (then its intermediates), and the key too when `keyFile` is `nil`.
    /// - Throws: ``SecurityPolicyError`` naming the file that cannot be read or holds the wrong
    ///   thing, or the pair that does not match.
    public static func contentsOf(
        certificateFile: URL,
        keyFile: URL? = nil
    ) throws(SecurityPolicyError) -> ClientIdentity {
        let certificateText = try read(certificateFile)
        let chain: [Data]
        do {
            chain = try NIOSSLCertificate.fromPEMBytes(Array(certificateText.utf8)).map { Data(try $0.toDERBytes()) }
        } catch {
            throw SecurityPolicyError(path: certificateFile.path, reason: "no PEM certificate in the file")
        }
        guard !chain.isEmpty else {
            throw SecurityPolicyError(path: certificateFile.path, reason: "no PEM certificate in the file")
        }
        let keyText = try keyFile.map { (file) throws(SecurityPolicyError) in try read(file) } ?? certificateText
        guard let keyPEM = privateKeyBlock(in: keyText) else {
            throw SecurityPolicyError(
                path: (keyFile ?? certificateFile).path,
                reason: keyFile == nil
                    ? "no private key in the file (give it with --key)" : "no PEM private key in the file"
            )
        }
        let source = keyFile.map { "\(certificateFile.path) and \($0.path)" } ?? certificateFile.path
        return try ClientIdentity(certificateChain: chain, privateKeyPEM: keyPEM, source: source)
    }

    private static func read(_ file: URL) throws(SecurityPolicyError) -> String {
        do {
            return String(decoding: try Data(contentsOf: file), as: UTF8.self)
        } catch {
            throw SecurityPolicyError(path: file.path, reason: "cannot read the file: \(reasonInWords(error))")
        }
    }

    /// The first `-----BEGIN … PRIVATE KEY-----` block of `text`, whole.
    private static func privateKeyBlock(in text: String) -> String? {
        guard let begin = text.range(of: #"-----BEGIN [A-Z ]*PRIVATE KEY-----"#, options: .regularExpression),
            let end = text.range(
                of: #"-----END [A-Z ]*PRIVATE KEY-----"#,
                options: .regularExpression,
                range: begin.upperBound..<text.endIndex
            )
        else { return nil }
        return String(text[begin.lowerBound..<end.upperBound]) + "\n"
    }

    /// The chain and key as NIOSSL takes them.
    func nioValues() throws -> ([NIOSSLCertificateSource], NIOSSLPrivateKeySource) {
        let chain = try certificateChain.map {
            NIOSSLCertificateSource.certificate(try NIOSSLCertificate(bytes: Array($0), format: .der))
        }
        let key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
        return (chain, .privateKey(key))
    }
}
