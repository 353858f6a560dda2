import Foundation
import Testing
import WebImageCoders

@testable import WebImageServer

@Suite("Proxy URLs and signatures")
struct ProxyURLTests {
    @Test("Plain sources: options, percent-decoding, @extension, /info")
    func plain() throws {
        let path = try ProxyPath(parsing: "/sig/rs:fill:300:200/q:80/plain/http://img.test/a%20b.jpg?x=1@webp")
        #expect(path.signature == "sig")
        #expect(path.signedPath == "/rs:fill:300:200/q:80/plain/http://img.test/a%20b.jpg?x=1@webp")
        #expect(
            path.options == [
                .init(name: "rs", arguments: ["fill", "300", "200"]), .init(name: "q", arguments: ["80"]),
            ]
        )
        #expect(path.source == "http://img.test/a b.jpg?x=1")
        #expect(path.outputExtension == "webp" && !path.isInfo)
        let info = try ProxyPath(parsing: "/info/_/plain/https://img.test/a.png")
        #expect(info.isInfo && info.source == "https://img.test/a.png" && info.outputExtension == nil)
        #expect(info.signedPath == "/plain/https://img.test/a.png")
    }

    @Test("Base64 sources: URL-safe, unpadded, split by slashes, .extension")
    func base64() throws {
        let path = try ProxyPath(
            parsing: "/x/rs:fill:300:400:0/g:sm/aHR0cDovL2V4YW1w/bGUuY29tL2ltYWdl/cy9jdXJpb3NpdHku/anBn.png"
        )
        #expect(path.source == "http://example.com/images/curiosity.jpg")
        #expect(path.outputExtension == "png")
        #expect(path.options.map(\.name) == ["rs", "g"])
        let encoded = ProxyPath.base64URLEncode(Array("https://img.test/ü?a=b~".utf8))
        #expect(try ProxyPath(parsing: "/x/\(encoded)").source == "https://img.test/ü?a=b~")
    }

    @Test(
        "Malformed paths are 400s naming the fault",
        arguments: [
            ("", "must start with /"), ("/sig", "there is no source"),
            ("//plain/http://a.test/", "signature segment is empty"),
            ("/sig/w:10/plain/", "no source URL"), ("/sig/w:10/@@@", "neither an option"),
            ("/sig/plain/http://a.test/x%zz.png", "malformed percent escape"),
            ("/sig/plain/http://a.test/x.png@", "extension"),
        ]
    )
    func malformed(path: String, fault: String) {
        #expect {
            try ProxyPath(parsing: path)
        } throws: { error in
            let error = error as? ProxyError
            return error?.status == 400 && error?.message.contains(fault) == true
        }
    }

    // Expected values computed independently with Python's hmac module (hmac.new(key,
    // salt + path, sha256), URL-safe base64 without padding); the first is imgproxy's
    // documented example (key "secret", salt "hello").
    @Test("Signatures match an independent HMAC-SHA256 table; rotation, truncation, constant-time checks")
    func signatures() throws {
        let table: [(key: String, salt: String, path: String, size: Int, signature: String)] = [
            (
                "736563726574", "68656C6C6F",
                "/rs:fill:300:400:0/g:sm/aHR0cDovL2V4YW1w/bGUuY29tL2ltYWdl/cy9jdXJpb3NpdHku/anBn.png", 32,
                "oKfUtW34Dvo2BGQehJFR4Nr0_rIjOtdtzJ3QFsUcXH8"
            ),
            (
                "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881",
                "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5",
                "/rs:fit:300:200/plain/http://127.0.0.1:8080/a.jpg@webp", 32,
                "6oKtrctrTGy2GlNXCwhX7HWKI4HdXVSfrAhWiPsSW24"
            ),
            ("00ff", "", "/w:100/plain/https://example.com/%C3%A9t%C3%A9.png", 8, "cMrNgabcZVI"),
        ]
        for row in table {
            let signer = try URLSigner(pairs: [try .init(keyHex: row.key, saltHex: row.salt)], size: row.size)
            #expect(signer.signature(for: row.path) == row.signature)
            #expect(signer.verify(signature: row.signature, path: row.path))
            #expect(!signer.verify(signature: row.signature, path: row.path + "x"))
            #expect(!signer.verify(signature: String(row.signature.dropLast()), path: row.path))
        }
        // Rotation: a URL signed with the old pair still passes beside the new one.
        let old = try URLSigner.KeyPair(keyHex: "736563726574", saltHex: "68656C6C6F")
        let new = try URLSigner.KeyPair(keyHex: "00ff", saltHex: "")
        let rotating = try URLSigner(pairs: [new, old])
        #expect(rotating.verify(signature: table[0].signature, path: table[0].path))
        #expect(!(try URLSigner(pairs: [new])).verify(signature: table[0].signature, path: table[0].path))
        #expect(!rotating.verify(signature: "not base64 at all!", path: table[0].path))
        #expect(throws: URLSignerConfigurationError.self) { try URLSigner.KeyPair(keyHex: "xyz", saltHex: "00") }
        #expect(throws: URLSignerConfigurationError.self) { try URLSigner.KeyPair(keyHex: "00", saltHex: "0") }
        #expect(throws: URLSignerConfigurationError.self) { try URLSigner(pairs: []) }
        #expect(throws: URLSignerConfigurationError.self) { try URLSigner(pairs: [old], size: 33) }
    }

    @Test("One spelling per signed URL: padding, the standard alphabet and flipped spare bits are refused")
    func canonicalSignatures() throws {
        let signer = try URLSigner(pairs: [try .init(keyHex: "736563726574", saltHex: "68656C6C6F")])
        let path = "/rs:fill:300:400:0/g:sm/aHR0cDovL2V4YW1w/bGUuY29tL2ltYWdl/cy9jdXJpb3NpdHku/anBn.png"
        let signature = signer.signature(for: path)
        #expect(signature == "oKfUtW34Dvo2BGQehJFR4Nr0_rIjOtdtzJ3QFsUcXH8")
        #expect(signer.verify(signature: signature, path: path))
        // 43 characters carry 258 bits for 256: the last character's 2 spare bits must be 0.
        let last = signature.last!
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let value = alphabet.firstIndex(of: last)!
        let spareBitsFlipped = String(signature.dropLast()) + String(alphabet[value ^ 1])
        let variants = [
            signature + "=", signature + String(repeating: "=", count: 20), spareBitsFlipped,
            signature.replacingOccurrences(of: "_", with: "/"), " " + signature,
        ]
        for variant in variants {
            #expect(!signer.verify(signature: variant, path: path), "\(variant)")
        }
        // The same holds for truncated signatures (8 bytes: 11 characters, 2 spare bits).
        let short = try URLSigner(pairs: [try .init(keyHex: "00ff", saltHex: "")], size: 8)
        let shortPath = "/w:100/plain/https://example.com/%C3%A9t%C3%A9.png"
        #expect(short.verify(signature: "cMrNgabcZVI", path: shortPath))
        #expect(!short.verify(signature: "cMrNgabcZVI=", path: shortPath))
        #expect(!short.verify(signature: "cMrNgabcZVJ", path: shortPath))
    }
}
