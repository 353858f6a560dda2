import Crypto
import Foundation
import HTTPTypes
import WebImageHTTP

/// Where `s3://bucket/key` sources come from and how requests for them are signed (imgproxy's
/// `IMGPROXY_USE_S3`): AWS Signature Version 4 with the credentials the AWS tools read.
public struct S3Configuration: Sendable, Hashable {
    /// An S3-compatible server (MinIO, moto, …), addressed path-style (`endpoint/bucket/key`);
    /// `nil`: AWS itself, `https://bucket.s3.REGION.amazonaws.com/key`.
    public var endpoint: URL?
    public var region: String
    public var accessKeyID: String
    public var secretAccessKey: String
    /// Temporary credentials' token (`AWS_SESSION_TOKEN`).
    public var sessionToken: String?

    public init(
        endpoint: URL? = nil,
        region: String = "us-east-1",
        accessKeyID: String,
        secretAccessKey: String,
        sessionToken: String? = nil
    ) {
        self.endpoint = endpoint
        self.region = region
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    /// The configuration the AWS tools would use: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_SESSION_TOKEN`, `AWS_REGION` (or `AWS_DEFAULT_REGION`, else us-east-1) and
    /// `AWS_ENDPOINT_URL_S3` (or `AWS_ENDPOINT_URL`); `nil` without credentials.
    public static func fromEnvironment(_ environment: [String: String]) -> S3Configuration? {
        func value(_ names: String...) -> String? {
            names.lazy.compactMap { environment[$0] }.first { !$0.isEmpty }
        }
        guard let key = value("AWS_ACCESS_KEY_ID"), let secret = value("AWS_SECRET_ACCESS_KEY") else { return nil }
        return S3Configuration(
            endpoint: value("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL").flatMap(URL.init(string:)),
            region: value("AWS_REGION", "AWS_DEFAULT_REGION") ?? "us-east-1",
            accessKeyID: key,
            secretAccessKey: secret,
            sessionToken: value("AWS_SESSION_TOKEN")
        )
    }

    /// The HTTP URL of `key` in `bucket`.
    func objectURL(bucket: String, key: String) -> URL? {
        let path =
            "/"
            + key.split(separator: "/", omittingEmptySubsequences: false).map { S3Signer.encoded(String($0)) }
            .joined(separator: "/")
        if let endpoint {
            let base =
                endpoint.absoluteString.hasSuffix("/")
                ? String(endpoint.absoluteString.dropLast()) : endpoint.absoluteString
            return URL(string: base + "/" + S3Signer.encoded(bucket) + path)
        }
        return URL(string: "https://\(bucket).s3.\(region).amazonaws.com" + path)
    }
}

/// AWS Signature Version 4 for S3 requests without a body.
enum S3Signer {
    /// SHA-256 of no bytes: the payload hash of a GET.
    static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// The headers that sign a `method` request for `url` at `date`: `x-amz-date`,
    /// `x-amz-content-sha256`, the session token when there is one, and `Authorization`.
    /// `extra` header fields (lower-case names) are signed too.
    static func headers(
        method: String,
        url: URL,
        date: Date,
        configuration: S3Configuration,
        extra: [(name: String, value: String)] = []
    ) -> [(name: String, value: String)] {
        let stamp = timestamp(date)
        let day = String(stamp.prefix(8))
        var host = url.host ?? ""
        if let port = url.port { host += ":\(port)" }
        var signed: [(name: String, value: String)] =
            [("host", host), ("x-amz-content-sha256", emptyPayloadHash), ("x-amz-date", stamp)] + extra
        if let token = configuration.sessionToken { signed.append(("x-amz-security-token", token)) }
        signed.sort { $0.name < $1.name }
        let signedNames = signed.map(\.name).joined(separator: ";")
        let path = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? url.path
        let canonical = [
            method, path.isEmpty ? "/" : path, canonicalQuery(url),
            signed.map { "\($0.name):\($0.value.trimmingCharacters(in: .whitespaces))\n" }.joined(),
            signedNames, emptyPayloadHash,
        ].joined(separator: "\n")
        let scope = "\(day)/\(configuration.region)/s3/aws4_request"
        let stringToSign = ["AWS4-HMAC-SHA256", stamp, scope, hex(SHA256.hash(data: Data(canonical.utf8)))]
            .joined(separator: "\n")
        var key = SymmetricKey(data: Data("AWS4\(configuration.secretAccessKey)".utf8))
        for part in [day, configuration.region, "s3", "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        let signature = hex(HMAC<SHA256>.authenticationCode(for: Data(stringToSign.utf8), using: key))
        let authorization =
            "AWS4-HMAC-SHA256 Credential=\(configuration.accessKeyID)/\(scope), SignedHeaders=\(signedNames), Signature=\(signature)"
        return signed.filter { $0.name != "host" } + [("authorization", authorization)]
    }

    /// `yyyyMMdd'T'HHmmss'Z'` in UTC.
    static func timestamp(_ date: Date) -> String {
        let parts = HTTPDate.gmtFields(date)
        let two = HTTPDate.twoDigits
        return "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
    }

    /// URI-encodes every byte but the unreserved characters, as SigV4 requires.
    static func encoded(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                UInt8(ascii: "~"):
                result.append(Character(UnicodeScalar(byte)))
            default:
                result += String(format: "%%%02X", byte)
            }
        }
        return result
    }

    private static func canonicalQuery(_ url: URL) -> String {
        guard let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems else { return "" }
        return items.map { (encoded($0.name), encoded($0.value ?? "")) }.sorted { $0 < $1 }
            .map { "\($0.0)=\($0.1)" }.joined(separator: "&")
    }

    private static func hex<Digest: Sequence>(_ bytes: Digest) -> String where Digest.Element == UInt8 {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}

/// Fetches `s3://bucket/key` objects with signed requests; the operator's endpoint is trusted
/// (the source rules for hosts do not apply to it).
struct S3Source: Sendable {
    /// What a (conditional) GET gave.
    enum Answer: Sendable {
        case object(Data, etag: String?, lastModified: String?)
        /// The `If-None-Match` ETag still names the object.
        case notModified
    }

    let configuration: S3Configuration
    let session: HTTPSession

    init(configuration: S3Configuration, timeout: Duration) {
        self.configuration = configuration
        var session = HTTPSession.Configuration()
        session.connectTimeout = timeout
        session.readTimeout = timeout
        session.cookieStore = nil
        session.redirectPolicy = .init(maximumCount: 0)
        self.session = HTTPSession(configuration: session)
    }

    /// The object's bytes (at most `limit`) and validators, or ``Answer/notModified`` when
    /// `ifNoneMatch` still names it.
    /// - Throws: ``ProxyError`` 404 for a missing bucket or key, 403 `sourceForbidden` naming
    ///   the server's reason when it refuses the credentials, 422 over `limit`, 502 otherwise.
    func fetch(_ url: URL, limit: Int64, ifNoneMatch: String? = nil) async throws(ProxyError) -> Answer {
        guard let bucket = url.host, !bucket.isEmpty, url.path.count > 1 else {
            throw .badURL("an S3 source is s3://BUCKET/KEY")
        }
        let key = String((url.path.removingPercentEncoding ?? url.path).dropFirst())
        guard let target = configuration.objectURL(bucket: bucket, key: key) else {
            throw .badURL("the S3 source '\(url.absoluteString.prefix(200))' makes no URL")
        }
        var request = HTTPSession.Request(url: target)
        for (name, value) in S3Signer.headers(method: "GET", url: target, date: Date(), configuration: configuration) {
            if let field = HTTPField.Name(name) { request.headers[field] = value }
        }
        request.maximumBodySize = limit
        if let ifNoneMatch { request.headers[.ifNoneMatch] = ifNoneMatch }  // unsigned: SigV4 allows it
        let data: Data
        let response: HTTPSession.Response
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            switch error.code {
            case .cancelled: throw .cancelled
            case .responseTooLarge:
                throw ProxyError(.limitExceeded, "the source is over --max-src-file-size")
            case .timedOut:
                throw ProxyError(.timedOut, "the S3 server did not answer in time")
            default:
                throw ProxyError(.sourceFailed, "the S3 server failed: \(error.message)")
            }
        }
        switch response.statusCode {
        case 200: return .object(data, etag: response.headers[.eTag], lastModified: response.headers[.lastModified])
        case 304: return .notModified
        case 404:
            throw ProxyError(
                .sourceNotFound,
                "S3 has no such object (\(Self.reason(data)))"
            )
        case 401, 403:
            throw ProxyError(
                .sourceForbidden,
                "the S3 server refused the request: \(Self.reason(data))"
            )
        default:
            throw ProxyError(
                .sourceFailed,
                "the S3 server answered \(response.statusCode) (\(Self.reason(data)))"
            )
        }
    }

    /// The `<Code>` of an S3 error body, or "no reason given".
    static func reason(_ body: Data) -> String {
        let text = String(decoding: body.prefix(4096), as: UTF8.self)
        guard let start = text.range(of: "<Code>"),
            let end = text.range(of: "</Code>", range: start.upperBound..<text.endIndex)
        else { return "no reason given" }
        return String(text[start.upperBound..<end.lowerBound].prefix(100))
    }
}
