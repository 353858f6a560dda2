import Crypto
import Foundation
import SwiftASN1
import X509

/// A certificate and private key made at run time (committed certificates expire).
public struct TestIdentity: Sendable {
    /// The certificate, DER-encoded.
    public let certificateDER: Data
    /// The certificate, PEM-encoded.
    public let certificatePEM: String
    /// The private key, PEM-encoded (PKCS#8).
    public let privateKeyPEM: String
}

/// Makes server certificates for 127.0.0.1 and localhost: self-signed, or issued by a test CA.
public enum TestCertificates {
    /// A self-signed certificate valid for `hosts` (IP addresses or DNS names) from an hour ago
    /// for `validity`; a negative `validity` makes an already expired certificate. It is also a
    /// CA: it can issue others (``issued(by:hosts:validity:)``).
    public static func selfSigned(
        commonName: String = "swift-web-image test",
        hosts: [String] = ["127.0.0.1", "localhost"],
        validity: TimeInterval = 24 * 3600
    ) throws -> TestIdentity {
        try make(commonName: commonName, hosts: hosts, validity: validity, isAuthority: true, issuer: nil)
    }

    /// A server certificate for `hosts` (or, with `isAuthority`, an intermediate CA), signed by
    /// `authority` (a ``selfSigned(commonName:hosts:validity:)`` root or an intermediate). Its
    /// ``TestIdentity/certificatePEM`` holds the chain a server sends: the certificate, then the
    /// authority's chain.
    public static func issued(
        by authority: TestIdentity,
        commonName: String = "swift-web-image test server",
        hosts: [String] = ["127.0.0.1", "localhost"],
        validity: TimeInterval = 24 * 3600,
        isAuthority: Bool = false
    ) throws -> TestIdentity {
        try make(commonName: commonName, hosts: hosts, validity: validity, isAuthority: isAuthority, issuer: authority)
    }

    /// A client certificate (extended key usage `clientAuth`) signed by `authority`, for servers
    /// that ask clients to identify themselves (mutual TLS).
    public static func client(
        issuedBy authority: TestIdentity,
        commonName: String = "swift-web-image test client"
    ) throws -> TestIdentity {
        try make(
            commonName: commonName,
            hosts: [],
            validity: 24 * 3600,
            isAuthority: false,
            issuer: authority,
            usage: .clientAuth
        )
    }

    private static func make(
        commonName: String,
        hosts: [String],
        validity: TimeInterval,
        isAuthority: Bool,
        issuer: TestIdentity?,
        usage: ExtendedKeyUsage.Usage = .serverAuth
    ) throws -> TestIdentity {
        let key = P256.Signing.PrivateKey()
        let certificateKey = Certificate.PrivateKey(key)
        let name = try DistinguishedName { CommonName(commonName) }
        let now = Date()
        let notBefore = validity < 0 ? now.addingTimeInterval(validity * 2) : now.addingTimeInterval(-3600)
        let notAfter = now.addingTimeInterval(validity)
        let altNames: [GeneralName] = hosts.map { host in
            if let address = IPv4(host) { return .ipAddress(ASN1OctetString(contentBytes: address[...])) }
            return .dnsName(host)
        }
        let issuerName: DistinguishedName
        let issuerKey: Certificate.PrivateKey
        if let issuer {
            issuerName = try Certificate(derEncoded: Array(issuer.certificateDER)).subject
            issuerKey = Certificate.PrivateKey(try P256.Signing.PrivateKey(pemRepresentation: issuer.privateKeyPEM))
        } else {
            issuerName = name
            issuerKey = certificateKey
        }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: certificateKey.publicKey,
            notValidBefore: notBefore,
            notValidAfter: notAfter,
            issuer: issuerName,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                if isAuthority {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                    KeyUsage(digitalSignature: true, keyCertSign: true)
                } else {
                    Critical(BasicConstraints.notCertificateAuthority)
                    KeyUsage(digitalSignature: true)
                }
                try ExtendedKeyUsage([usage])
                if !altNames.isEmpty { SubjectAlternativeNames(altNames) }
            },
            issuerPrivateKey: issuerKey
        )
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        let der = Data(serializer.serializedBytes)
        return TestIdentity(
            certificateDER: der,
            certificatePEM: try certificate.serializeAsPEM().pemString
                + (issuer.map { "\n" + $0.certificatePEM } ?? ""),
            privateKeyPEM: key.pemRepresentation
        )
    }

    private static func IPv4(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".")
        guard parts.count == 4 else { return nil }
        let bytes = parts.compactMap { UInt8($0) }
        return bytes.count == 4 ? bytes : nil
    }
}
