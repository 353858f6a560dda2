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

/// Makes self-signed server certificates for 127.0.0.1 and localhost.
public enum TestCertificates {
    /// A self-signed certificate valid for `hosts` (IP addresses or DNS names) from an hour ago
    /// for `validity`; a negative `validity` makes an already expired certificate.
    public static func selfSigned(
        commonName: String = "swift-web-image test",
        hosts: [String] = ["127.0.0.1", "localhost"],
        validity: TimeInterval = 24 * 3600
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
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: certificateKey.publicKey,
            notValidBefore: notBefore,
            notValidAfter: notAfter,
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                KeyUsage(digitalSignature: true, keyCertSign: true)
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(altNames)
            },
            issuerPrivateKey: certificateKey
        )
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        let der = Data(serializer.serializedBytes)
        return TestIdentity(
            certificateDER: der,
            certificatePEM: try certificate.serializeAsPEM().pemString,
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
