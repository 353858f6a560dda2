import Foundation
import Testing
import WebImageCoders
import WebImageHTTP
import WebImageOrigin
import WebImageServer
import WebImageTestSupport

/// The README's cluster: `scripts/cluster.sh up` starts three `webimage serve` nodes and nginx in
/// front on loopback ports (nginx installed by `scripts/bootstrap.sh nginx`); every request here
/// goes through the front, and the nodes' `/metrics` tell which node answered.
@Suite("Cluster behind nginx (scripts/cluster.sh)", .serialized, .timeLimit(.minutes(3)))
struct ClusterTests {
    static let keyHex = "943b421c9eb07c830af81030552c86009268de4e532ba2ee2eab8247c6da0881"
    static let saltHex = "520f986b998545b4785e0defbc4f3c1203f22de2374a3d53cb7a7fe9fea309c5"

    /// A running cluster, stopped by `down()` (every test calls it on every path).
    struct Cluster {
        struct Node {
            var url: String
            var metrics: URL
            var pid: Int32
        }

        let folder: TemporaryDirectory
        let front: String
        let nodes: [Node]
        let signer: URLSigner
        let session: HTTPSession

        static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/cluster.sh")

        static func up(serveOptions: [String] = []) async throws -> Cluster {
            let folder = try TemporaryDirectory(prefix: "webimage-cluster")
            let result = try await CLIRunner.runDetached(
                [
                    "up", "--detach", "--dir", folder.url.path, "--nodes", "3", "--port", "0",
                    "--webimage", CLIRunner.executable.path, "--fail-timeout", "2", "--",
                    "--allow-loopback", "--workers", "2", "--grace", "1",
                    // Behaviour, not speed: no node may time out on a busy machine.
                    "--download-timeout", "60", "--processing-timeout", "120",
                ] + serveOptions,
                environment: ["WEBIMAGE_KEY": keyHex, "WEBIMAGE_SALT": saltHex],
                program: script
            )
            guard result.status == 0,
                let state = try? Data(contentsOf: folder.url.appendingPathComponent("cluster.json")),
                let object = try JSONSerialization.jsonObject(with: state) as? [String: Any],
                let front = object["front"] as? String,
                let nodeObjects = object["nodes"] as? [[String: Any]]
            else {
                _ = try? await CLIRunner.runDetached(["down", "--dir", folder.url.path], program: script)
                folder.remove()
                throw ClusterError("cluster.sh up exited \(result.status): \(result.stdout)\n\(result.stderr)")
            }
            let nodes = nodeObjects.compactMap { node -> Node? in
                guard let url = node["url"] as? String, let metrics = (node["metrics"] as? String).flatMap(URL.init),
                    let pid = node["pid"] as? Int
                else { return nil }
                return Node(url: url, metrics: metrics, pid: Int32(pid))
            }
            var configuration = HTTPSession.Configuration()
            configuration.maximumConnectionsPerHost = 256
            return Cluster(
                folder: folder,
                front: front,
                nodes: nodes,
                signer: try URLSigner(pairs: [.init(keyHex: keyHex, saltHex: saltHex)]),
                session: HTTPSession(configuration: configuration)
            )
        }

        /// Stops nginx and the nodes, then removes the folder.
        func down() async {
            try? await session.shutdown()
            let result = try? await CLIRunner.runDetached(["down", "--dir", folder.url.path], program: Self.script)
            #expect(result?.status == 0, "\(result?.stderr ?? "cluster.sh down did not run")")
            folder.remove()
        }

        /// GET through the front: status, body and headers.
        func get(_ path: String, query: String = "", accept: String? = nil) async throws -> (Int, Data, HTTPFields) {
            let url = try #require(URL(string: front + "/" + signer.signature(for: path) + path + query))
            var request = HTTPSession.Request(url: url)
            if let accept { request.headers[.accept] = accept }
            let (data, response) = try await session.data(for: request)
            return (response.statusCode, data, response.headers)
        }

        /// Requests each node has answered so far (`webimage_requests_total`, every status).
        func requestsPerNode() async throws -> [Int] {
            var counts: [Int] = []
            for index in nodes.indices { counts.append(try await requests(atNode: index)) }
            return counts
        }

        /// `webimage_requests_total` of one node: every status, or the one given.
        func requests(atNode index: Int, status: Int? = nil) async throws -> Int {
            let prefix = status.map { "webimage_requests_total{status=\"\($0)\"}" } ?? "webimage_requests_total{"
            let (data, _) = try await session.data(for: HTTPSession.Request(url: nodes[index].metrics))
            let total = String(decoding: data, as: UTF8.self).split(separator: "\n")
                .filter { $0.hasPrefix(prefix) }
                .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
                .reduce(0, +)
            return Int(total)
        }

        /// The node's metrics, once it answers again (after a restart).
        func waitForNode(_ index: Int) async throws {
            for _ in 0..<100 {
                if (try? await session.data(for: HTTPSession.Request(url: nodes[index].metrics))) != nil { return }
                try await Task.sleep(for: .milliseconds(100))
            }
            throw ClusterError("node \(index + 1) did not come back")
        }
    }

    struct ClusterError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// An origin on 127.0.0.1 serving a 400×300 JPEG at `/photo.jpg`, counting requests.
    static func startOrigin() async throws -> OriginServer {
        let origin = try await OriginServer.start()
        let photo = try JPEGCoder().encode(
            DecodedImage(bitmap: GeneratedImages.gradient(width: 400, height: 300), format: .jpeg),
            as: .jpeg,
            options: .init()
        )
        origin.setRoute("/photo.jpg", .data(photo, contentType: "image/jpeg", cacheControl: "max-age=86400"))
        return origin
    }

    @Test(
        "The same signed URL twice through nginx reaches a node once; five sizes of one source share a node and one origin fetch"
    )
    func cachesAndRoutesBySource() async throws {
        let origin = try await Self.startOrigin()
        let cluster = try await Cluster.up()
        do {
            let source = origin.url("/photo.jpg").absoluteString
            let first = try await cluster.get("/rs:fit:100:100/plain/\(source)")
            let second = try await cluster.get("/rs:fit:100:100/plain/\(source)")
            #expect(first.0 == 200 && second.0 == 200)
            #expect(first.1 == second.1)
            #expect(first.2[.xCacheStatus] == "MISS" && second.2[.xCacheStatus] == "HIT")
            // Nodes ignore a query string, so the shared cache's key does too: `?anything` on a
            // signed URL is a hit, not a render on a node.
            let busted = try await cluster.get("/rs:fit:100:100/plain/\(source)", query: "?bust=\(UUID().uuidString)")
            #expect(busted.0 == 200 && busted.2[.xCacheStatus] == "HIT" && busted.1 == first.1)
            #expect(try ImageCodersManager.shared.decode(first.1).width == 100)
            #expect(try await cluster.requestsPerNode().reduce(0, +) == 1)

            for width in [120, 140, 160, 180] {
                let (status, data, _) = try await cluster.get("/rs:fit:\(width):0/plain/\(source)")
                #expect(status == 200)
                #expect(try ImageCodersManager.shared.decode(data).width == width)
            }
            let counts = try await cluster.requestsPerNode()
            #expect(counts.sorted() == [0, 0, 5], "requests per node: \(counts)")
            #expect(origin.requestCount(for: "/photo.jpg") == 1)

            // Base64 sources route by their base64 form: its sizes share a node too.
            let base64 = Data(source.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            for width in [70, 80, 90] {
                let (status, data, _) = try await cluster.get("/rs:fit:\(width):0/\(base64).png")
                #expect(status == 200 && ImageFormat(sniffing: data) == .png)
            }
            let after = try await cluster.requestsPerNode()
            let grown = zip(after, counts).map { $0 - $1 }
            #expect(grown.sorted() == [0, 0, 3], "base64 requests per node: \(grown)")
        } catch {
            Issue.record(error)
        }
        await cluster.down()
        await origin.stop()
    }

    @Test("A node killed with SIGKILL: its sources are served by the next node; restarted, it takes them back")
    func survivesAKilledNode() async throws {
        let origin = try await Self.startOrigin()
        let cluster = try await Cluster.up()
        do {
            let source = origin.url("/photo.jpg").absoluteString
            #expect(try await cluster.get("/rs:fit:100:0/plain/\(source)").0 == 200)
            let owner = try #require(try await cluster.requestsPerNode().firstIndex(of: 1))
            kill(cluster.nodes[owner].pid, SIGKILL)

            // The cached variant still comes from nginx; new variants go to another node.
            #expect(try await cluster.get("/rs:fit:100:0/plain/\(source)").0 == 200)
            for width in [110, 120, 130] {
                let (status, data, _) = try await cluster.get("/rs:fit:\(width):0/plain/\(source)")
                #expect(status == 200)
                #expect(try ImageCodersManager.shared.decode(data).width == width)
            }
            // The survivors answered those three: the killed node's count cannot have grown.
            var survivors = 0
            for index in cluster.nodes.indices where index != owner {
                survivors += try await cluster.requests(atNode: index, status: 200)
            }
            #expect(survivors == 3)

            let restart = try await CLIRunner.runDetached(
                ["node-start", String(owner + 1), "--dir", cluster.folder.url.path],
                program: Cluster.script
            )
            #expect(restart.status == 0, "\(restart.stderr)")
            try await cluster.waitForNode(owner)
            // nginx tries the node again once --fail-timeout (2 s) has passed.
            try await Task.sleep(for: .seconds(3))
            var rejoined = false
            for width in 140..<150 where !rejoined {
                #expect(try await cluster.get("/rs:fit:\(width):0/plain/\(source)").0 == 200)
                rejoined = try await cluster.requestsPerNode()[owner] > 0
            }
            #expect(rejoined, "the restarted node got none of its source's requests back")
        } catch {
            Issue.record(error)
        }
        await cluster.down()
        await origin.stop()
    }

    @Test(
        "200 concurrent requests for one cold variant make one origin request; Accept buckets key the cache under negotiation"
    )
    func coldVariantUnderLoad() async throws {
        let origin = try await Self.startOrigin()
        let cluster = try await Cluster.up(serveOptions: ["--format-negotiation"])
        do {
            let source = origin.url("/photo.jpg").absoluteString
            let path = "/rs:fill:64:64/plain/\(source)"
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<200 { group.addTask { try await cluster.get(path, accept: "image/webp,*/*").0 } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.count == 200 && statuses.allSatisfy { $0 == 200 }, "\(Set(statuses))")
            #expect(origin.requestCount(for: "/photo.jpg") == 1)
            #expect(try await cluster.requestsPerNode().reduce(0, +) == 1)

            // Two browsers' WebP Accept strings share the cached WebP; AVIF and no preference each
            // get their own, with Vary: Accept for the caches beyond.
            let chrome = try await cluster.get(path, accept: "image/avif;q=0,image/webp,image/apng,*/*;q=0.8")
            #expect(chrome.2[.xCacheStatus] == "HIT" && ImageFormat(sniffing: chrome.1) == .webp)
            let avif = try await cluster.get(path, accept: "image/avif,image/webp,*/*")
            #expect(avif.2[.xCacheStatus] == "MISS" && ImageFormat(sniffing: avif.1) == .avif)
            #expect(avif.2[.vary] == "Accept")
            let plain = try await cluster.get(path)
            #expect(plain.2[.xCacheStatus] == "MISS" && ImageFormat(sniffing: plain.1) == .jpeg)
            #expect(try await cluster.get(path, accept: "*/*").2[.xCacheStatus] == "HIT")
            #expect(try await cluster.requestsPerNode().reduce(0, +) == 3)

            // Errors are not kept: a missing source is asked for again.
            let missing = "/rs:fit:50:0/plain/\(origin.url("/missing.jpg").absoluteString)"
            #expect(try await cluster.get(missing).0 == 404)
            #expect(try await cluster.get(missing).0 == 404)
            #expect(origin.requestCount(for: "/missing.jpg") == 2)
        } catch {
            Issue.record(error)
        }
        await cluster.down()
        await origin.stop()
    }
}

extension HTTPField.Name {
    /// nginx's cache outcome header, set by the cluster's configuration.
    fileprivate static let xCacheStatus = HTTPField.Name("X-Cache-Status")!
}
