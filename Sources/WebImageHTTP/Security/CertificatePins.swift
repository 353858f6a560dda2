import Foundation
import SwiftASN1
import X509

/// Pinned certificates, parsed once, as the check after a handshake uses them when the handshake
/// itself cannot (no chain validation, or a pin that is not a root).
struct CertificatePins: Sendable {
    private let encoded: Set<[UInt8]>
    private let authorities: [Certificate]

    init(_ pinned: [Data]) {
        encoded = Set(pinned.map { [UInt8]($0) })
        authorities = pinned.compactMap { try? Certificate(derEncoded: Array($0)) }.filter { certificate in
            guard case .isCertificateAuthority = try? certificate.extensions.basicConstraints else { return false }
            return true
        }
    }

    /// Throws unless `peer` (DER) is pinned or was issued directly by a pinned CA certificate
    /// (its signature checked). With `validates`, the dates of the certificates involved are
    /// checked and, when `host` is given, that `peer` names it.
    func check(_ peer: [UInt8], validates: Bool, host: String?) throws(PinMismatch) {
        let isPinned = encoded.contains(peer)
        if isPinned && !validates { return }
        guard let certificate = try? Certificate(derEncoded: peer) else { throw PinMismatch(.certificateNotPinned) }
        var trusted = [certificate]
        if !isPinned {
            guard
                let issuer = authorities.first(where: {
                    $0.subject == certificate.issuer
                        && $0.publicKey.isValidSignature(certificate.signature, for: certificate)
                })
            else { throw PinMismatch(.certificateNotPinned) }
            trusted.append(issuer)
        }
        guard validates else { return }
        let now = Date()
        for certificate in trusted {
            if now > certificate.notValidAfter { throw PinMismatch(.expired(certificate.notValidAfter)) }
            if now < certificate.notValidBefore { throw PinMismatch(.notYetValid(certificate.notValidBefore)) }
        }
        guard let host else { return }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard Self.names(certificate, host: bare) else { throw PinMismatch(.wrongHost(bare)) }
    }

    /// Whether the certificate's subject alternative names cover `host` (RFC 6125: an IP
    /// address matches an `iPAddress` entry; a name matches a `dNSName` case-insensitively, a
    /// `*.` wildcard standing for exactly the leftmost label).
    static func names(_ certificate: Certificate, host: String) -> Bool {
        guard let names = try? certificate.extensions.subjectAlternativeNames else { return false }
        var address = [UInt8](repeating: 0, count: 16)
        let addressLength: Int? =
            inet_pton(AF_INET, host, &address) == 1 ? 4 : inet_pton(AF_INET6, host, &address) == 1 ? 16 : nil
        let hostLabels = host.lowercased().split(separator: ".", omittingEmptySubsequences: false)
        return names.contains { name in
            switch name {
            case .ipAddress(let octets):
                guard let addressLength else { return false }
                return Array(octets.bytes) == Array(address.prefix(addressLength))
            case .dnsName(let pattern):
                guard addressLength == nil else { return false }
                let labels = pattern.lowercased().split(separator: ".", omittingEmptySubsequences: false)
                guard labels.count == hostLabels.count, !labels.isEmpty else { return false }
                if labels[0] == "*" {
                    return labels.count > 2 && !hostLabels[0].isEmpty && labels.dropFirst() == hostLabels.dropFirst()
                }
                return labels == hostLabels
            default:
                return false
            }
        }
    }
}
