import Crypto
import Foundation

/// Signs and checks proxy URLs as imgproxy does: the signature is the URL-safe base64 (no
/// padding) of the first ``size`` bytes of HMAC-SHA256(key, salt + path), where path is what
/// follows the signature segment, leading `/` included. Several key/salt pairs may be active
/// (rotation): a signature made with any of them passes. Comparison is constant-time.
public struct URLSigner: Sendable {
    /// One key and its salt.
    public struct KeyPair: Sendable, Hashable {
        public var key: Data
        public var salt: Data

        public init(key: Data, salt: Data) {
            self.key = key
            self.salt = salt
        }

        /// A pair from hex strings, as `--key`/`--salt` and `WEBIMAGE_KEY`/`WEBIMAGE_SALT` give them.
        /// - Throws: ``URLSignerConfigurationError`` naming which of the two is not hex.
        public init(keyHex: String, saltHex: String) throws(URLSignerConfigurationError) {
            guard let key = Self.hexBytes(keyHex), !key.isEmpty else {
                throw URLSignerConfigurationError(message: "the key '\(keyHex.prefix(16))…' is not hex bytes")
            }
            guard let salt = Self.hexBytes(saltHex) else {
                throw URLSignerConfigurationError(message: "the salt '\(saltHex.prefix(16))…' is not hex bytes")
            }
            self.init(key: key, salt: salt)
        }

        static func hexBytes(_ text: String) -> Data? {
            let digits = Array(text.utf8)
            guard digits.count % 2 == 0 else { return nil }
            var bytes = Data(capacity: digits.count / 2)
            for index in stride(from: 0, to: digits.count, by: 2) {
                guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
                bytes.append(high << 4 | low)
            }
            return bytes
        }

        private static func hexValue(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: nil
            }
        }
    }

    public let pairs: [KeyPair]
    /// Digest bytes kept, 1 to 32. Default 32.
    public let size: Int

    /// - Throws: when `pairs` is empty or `size` is outside 1...32.
    public init(pairs: [KeyPair], size: Int = 32) throws(URLSignerConfigurationError) {
        guard !pairs.isEmpty else { throw URLSignerConfigurationError(message: "no key and salt given") }
        guard (1...32).contains(size) else {
            throw URLSignerConfigurationError(message: "the signature size must be 1 to 32 bytes, got \(size)")
        }
        self.pairs = pairs
        self.size = size
    }

    /// The signature for `path` with the first pair (the one new URLs are signed with).
    public func signature(for path: String) -> String {
        ProxyPath.base64URLEncode(digest(path, with: pairs[0]))
    }

    /// Whether `signature` signs `path` with any of the pairs. Only the canonical spelling
    /// passes: the unpadded URL-safe base64 of the (truncated) digest, as ``signature(for:)``
    /// writes it. Padding, the standard alphabet or flipped spare bits would otherwise give one
    /// signed URL unlimited spellings, each a new key at a CDN.
    public func verify(signature: String, path: String) -> Bool {
        let given = Array(signature.utf8)
        guard given.count == ProxyPath.base64URLEncodedLength(of: size) else { return false }
        var matched = false
        for pair in pairs {
            // Every pair is checked, and each comparison touches every byte: no early exit.
            let expected = Array(ProxyPath.base64URLEncode(digest(path, with: pair)).utf8)
            matched = constantTimeEqual(given, expected) || matched
        }
        return matched
    }

    private func digest(_ path: String, with pair: KeyPair) -> Data {
        var hmac = HMAC<SHA256>(key: SymmetricKey(data: pair.key))
        hmac.update(data: pair.salt)
        hmac.update(data: Data(path.utf8))
        return Data(hmac.finalize()).prefix(size)
    }

    private func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for (left, right) in zip(lhs, rhs) { difference |= left ^ right }
        return difference == 0
    }
}

/// A key, salt or size the signer cannot use, in words.
public struct URLSignerConfigurationError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
