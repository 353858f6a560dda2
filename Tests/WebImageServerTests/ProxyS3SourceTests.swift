import Foundation
import Testing
import WebImage
import WebImageCoders
import WebImageHTTP
import WebImageTestSupport

@testable import WebImageServer

/// `s3://` sources signed with AWS Signature Version 4, against moto's S3-compatible server on
/// loopback with authentication on (scripts/moto.sh installs it; scripts/test.sh sets
/// `WEBIMAGE_MOTO_VENV`).
@Suite("webimage serve: S3 sources", .timeLimit(.minutes(2)))
struct ProxyS3SourceTests {
    @Test("SigV4 matches AWS's published GET example")
    func publishedExample() throws {
        // docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html, "GET Object".
        let configuration = S3Configuration(
            region: "us-east-1",
            accessKeyID: "AKIAIOSFODNN7EXAMPLE",
            secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
        )
        let url = try #require(URL(string: "https://examplebucket.s3.amazonaws.com/test.txt"))
        let date = Date(timeIntervalSince1970: 1_369_353_600)  // 2013-05-24T00:00:00Z
        let headers = S3Signer.headers(
            method: "GET",
            url: url,
            date: date,
            configuration: configuration,
            extra: [("range", "bytes=0-9")]
        )
        let authorization = try #require(headers.first { $0.name == "authorization" }?.value)
        #expect(
            authorization
                == "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        )
        #expect(S3Signer.encoded("a b/ü~") == "a%20b%2F%C3%BC~")
    }

    @Test("Objects are served; a missing key is 404, a wrong secret the server's 403 mapped")
    func served() async throws {
        let moto = try await MotoServer.start()
        defer { moto.stop() }
        let png = try ImageCodersManager.shared.encode(
            DecodedImage(frames: [.init(bitmap: GeneratedImages.gradient(width: 90, height: 60))], format: .png),
            as: .png
        )
        let credentials = try await moto.setUp(bucket: "images", key: "dir/a b.png", data: png)
        let fixture = try await ImageProxyServerTests.start {
            $0.s3 = S3Configuration(
                endpoint: moto.endpoint,
                accessKeyID: credentials.key,
                secretAccessKey: credentials.secret
            )
        }
        defer { Task { await fixture.stop() } }
        func get(_ source: String, _ proxy: Fixture, options: String = "w:45") async throws -> (Int, String, Data) {
            let signedPath = "/\(options)/plain/\(source)@png"
            let url = proxy.server.baseURL + "/" + proxy.signer.signature(for: signedPath) + signedPath
            let (response, body) = try await proxy.get(url)
            return (response.statusCode, String(decoding: body.prefix(300), as: UTF8.self), body)
        }
        let (status, text, body) = try await get("s3://images/dir/a%20b.png", fixture)
        #expect(status == 200, "\(text)")
        if status == 200 { #expect(try ImageCodersManager.shared.decode(body).width == 45) }
        // Kept with its ETag: the next use revalidates (S3 answers 304, no body) and reads the copy.
        let cache = try #require(fixture.proxy.manager.imageCache as? ImageCache)
        var kept = false
        for _ in 0..<400 where !kept {
            kept = await cache.diskEntry(forKey: "s3://images/dir/a%20b.png")?.metadata.etag != nil
            if !kept { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(kept, "the object and its ETag are on disk")
        let (again, againText, _) = try await get("s3://images/dir/a%20b.png", fixture, options: "w:30")
        #expect(again == 200, "\(againText)")
        #expect(fixture.proxy.metrics.exposition().contains(#"webimage_cache_hits_total{tier="disk"} 1"#))
        // A new object under the key has a new ETag: the next use gets it.
        let replacement = try ImageCodersManager.shared.encode(
            DecodedImage(frames: [.init(bitmap: GeneratedImages.gradient(width: 70, height: 20))], format: .png),
            as: .png
        )
        try await moto.put(bucket: "images", key: "dir/a b.png", data: replacement, credentials: credentials)
        let (changed, _, changedBody) = try await get("s3://images/dir/a%20b.png", fixture, options: "h:10")
        #expect(changed == 200)
        if changed == 200 { #expect(try ImageCodersManager.shared.decode(changedBody).width == 35) }
        let (missing, missingText, _) = try await get("s3://images/dir/none.png", fixture)
        #expect(missing == 404 && missingText.contains("sourceNotFound"), "\(missingText)")
        await fixture.stop()

        let wrong = try await ImageProxyServerTests.start {
            $0.s3 = S3Configuration(endpoint: moto.endpoint, accessKeyID: credentials.key, secretAccessKey: "wrong")
        }
        defer { Task { await wrong.stop() } }
        let (refused, refusedText, _) = try await get("s3://images/dir/a%20b.png", wrong)
        #expect(refused == 403 && refusedText.contains("sourceForbidden"), "\(refusedText)")
        await wrong.stop()

        let off = try await ImageProxyServerTests.start()
        defer { Task { await off.stop() } }
        let (disabled, _, _) = try await get("s3://images/dir/a%20b.png", off)
        #expect(disabled == 403, "no S3 configured: refused")
        await off.stop()
    }

    typealias Fixture = ImageProxyServerTests.Fixture
}

/// moto's standalone server on a free loopback port, with authentication on after the set-up's
/// five actions; stopped by ``stop()`` on every path.
final class MotoServer: Sendable {
    let process: Process
    let endpoint: URL
    let python: URL

    private init(process: Process, endpoint: URL, python: URL) {
        self.process = process
        self.endpoint = endpoint
        self.python = python
    }

    /// The virtualenv scripts/moto.sh installs (`WEBIMAGE_MOTO_VENV`, else its default place).
    static var virtualenv: URL {
        if let path = ProcessInfo.processInfo.environment["WEBIMAGE_MOTO_VENV"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        let cache =
            ProcessInfo.processInfo.environment["XDG_CACHE_HOME"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache")
        return cache.appendingPathComponent("webimage/moto-venv")
    }

    static func start() async throws -> MotoServer {
        let bin = virtualenv.appendingPathComponent("bin")
        let server = bin.appendingPathComponent("moto_server")
        try #require(
            FileManager.default.isExecutableFile(atPath: server.path),
            "moto_server is not at \(server.path): run scripts/moto.sh (scripts/test.sh does)"
        )
        let port = try FreePort.loopback()
        let process = Process()
        process.executableURL = server
        process.arguments = ["-H", "127.0.0.1", "-p", String(port)]
        process.environment = ProcessInfo.processInfo.environment.merging(["INITIAL_NO_AUTH_ACTION_COUNT": "5"]) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let moto = MotoServer(
            process: process,
            endpoint: try #require(URL(string: "http://127.0.0.1:\(port)")),
            python: bin.appendingPathComponent("python")
        )
        // Ready when it answers (it imports for a few seconds on a busy machine).
        let session = HTTPSession()
        defer { Task { try? await session.shutdown() } }
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if (try? await session.data(for: .init(url: moto.endpoint.appendingPathComponent("moto-api/")))) != nil {
                return moto
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        moto.stop()
        throw MotoError(description: "moto_server did not answer on port \(port) within 60 s")
    }

    /// With boto3 (moto's own dependency): an IAM user allowed every S3 action, its access key,
    /// the bucket and the object. Returns the key and secret.
    func setUp(bucket: String, key: String, data: Data) async throws -> (key: String, secret: String) {
        let (endpoint, python) = (endpoint, python)
        return try await onOwnThread {
            try Self.setUp(endpoint: endpoint, python: python, bucket: bucket, key: key, data: data)
        }
    }

    private static func setUp(
        endpoint: URL,
        python: URL,
        bucket: String,
        key: String,
        data: Data
    ) throws -> (key: String, secret: String) {
        let folder = try TemporaryDirectory(prefix: "webimage-moto")
        defer { folder.remove() }
        let object = folder.url.appendingPathComponent("object")
        try data.write(to: object)
        let script = folder.url.appendingPathComponent("setup.py")
        try Data(Self.setUpScript.utf8).write(to: script)
        let process = Process()
        process.executableURL = python
        process.arguments = [script.path, endpoint.absoluteString, bucket, key, object.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let parts = text.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        guard process.terminationStatus == 0, parts.count == 2 else {
            throw MotoError(description: "the moto set-up failed (\(process.terminationStatus)): \(text)")
        }
        return (parts[0], parts[1])
    }

    /// SIGTERM, and SIGKILL when it has not gone within 5 s (moto's server may ignore SIGTERM).
    /// Replaces `key` in `bucket`, signed with `credentials` (authentication is on by now).
    func put(bucket: String, key: String, data: Data, credentials: (key: String, secret: String)) async throws {
        let (endpoint, python) = (endpoint, python)
        try await onOwnThread {
            try Self.put(
                endpoint: endpoint,
                python: python,
                bucket: bucket,
                key: key,
                data: data,
                credentials: credentials
            )
        }
    }

    private static func put(
        endpoint: URL,
        python: URL,
        bucket: String,
        key: String,
        data: Data,
        credentials: (key: String, secret: String)
    ) throws {
        let folder = try TemporaryDirectory(prefix: "webimage-moto")
        defer { folder.remove() }
        let object = folder.url.appendingPathComponent("object")
        try data.write(to: object)
        let script = folder.url.appendingPathComponent("put.py")
        try Data(
            """
            import boto3, sys
            endpoint, bucket, key, path, access, secret = sys.argv[1:7]
            s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                              aws_access_key_id=access, aws_secret_access_key=secret)
            with open(path, "rb") as body:
                s3.put_object(Bucket=bucket, Key=key, Body=body.read())
            """.utf8
        ).write(to: script)
        let process = Process()
        process.executableURL = python
        process.arguments = [
            script.path, endpoint.absoluteString, bucket, key, object.path, credentials.key, credentials.secret,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw MotoError(description: "the moto put failed (\(process.terminationStatus))")
        }
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        for _ in 0..<50 where process.isRunning { usleep(100_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    struct MotoError: Error, CustomStringConvertible {
        var description: String
    }

    /// Five actions: what INITIAL_NO_AUTH_ACTION_COUNT lets through unsigned.
    static let setUpScript = """
        import boto3, json, sys
        endpoint, bucket, key, path = sys.argv[1:5]
        common = dict(endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id="setup", aws_secret_access_key="setup")
        iam = boto3.client("iam", **common)
        iam.create_user(UserName="proxy")
        access = iam.create_access_key(UserName="proxy")["AccessKey"]
        policy = {"Version": "2012-10-17",
                  "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
        iam.put_user_policy(UserName="proxy", PolicyName="read", PolicyDocument=json.dumps(policy))
        s3 = boto3.client("s3", **common)
        s3.create_bucket(Bucket=bucket)
        with open(path, "rb") as body:
            s3.put_object(Bucket=bucket, Key=key, Body=body.read())
        print(access["AccessKeyId"], access["SecretAccessKey"])
        """
}
