import Dispatch
import Foundation
import NIOCore
import NIOEmbedded
import NIOPosix
import Synchronization
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

/// A one-loop group that counts the loops it hands out.
private final class CountingEventLoopGroup: EventLoopGroup {
    let base = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let loopsHandedOut = Atomic<Int>(0)

    func next() -> any EventLoop {
        loopsHandedOut.add(1, ordering: .relaxed)
        return base.next()
    }

    func any() -> any EventLoop { next() }

    func makeIterator() -> EventLoopIterator { base.makeIterator() }

    func shutdownGracefully(queue: DispatchQueue, _ callback: @escaping @Sendable ((any Error)?) -> Void) {
        base.shutdownGracefully(queue: queue, callback)
    }
}

@Suite("A session on the event loops it is given", .timeLimit(.minutes(3)))
struct EventLoopGroupTests {
    /// A session whose connections run on `group`.
    private static func session(on group: any EventLoopGroup) -> HTTPSession {
        var configuration = HTTPSession.Configuration()
        configuration.eventLoopGroup = group
        return HTTPSession(configuration: configuration)
    }

    @Test("Its connections and read timeout run on the configured group, which the session leaves running")
    func configuredGroup() async throws {
        let group = CountingEventLoopGroup()
        var configuration = HTTPSession.Configuration()
        configuration.eventLoopGroup = group
        configuration.readTimeout = .seconds(5)
        configuration.requestTimeout = .seconds(600)
        try await HTTPTestContext.with(configuration: configuration) { context in
            context.origin.setRoute("/body", OriginRoute(body: Data(repeating: 7, count: 30_000)))
            context.origin.setRoute("/silent", OriginRoute(behavior: .init(stall: true)))
            let session = context.session
            let silentURL = context.origin.url("/silent")
            // A request to a server that never answers keeps the read timeout's timer running
            // (it asks the group for its loop once, when the first request starts).
            let silent = Task { () async -> HTTPSessionError? in
                do throws(HTTPSessionError) {
                    _ = try await session.data(for: .init(url: silentURL))
                    return nil
                } catch {
                    return error
                }
            }
            #expect(await waitUntil { context.origin.requestCount(for: "/silent") == 1 })
            let handedOutBefore = group.loopsHandedOut.load(ordering: .relaxed)
            for _ in 0..<3 {
                let (data, _) = try await session.data(for: .init(url: context.origin.url("/body")))
                #expect(data == Data(repeating: 7, count: 30_000))
            }
            // The loads' connections came from the group: it handed out more loops.
            #expect(group.loopsHandedOut.load(ordering: .relaxed) > handedOutBefore)
            // And the read timeout, whose timer runs on the group, ended the silent request.
            let error = await silent.value
            #expect(error?.code == .timedOut, "\(error?.message ?? "a silent server answered")")
            #expect(error?.message.contains("read timeout") == true, "\(error?.message ?? "")")
        }
        // The session was shut down and left the group running: its owner shuts it down.
        let loop = group.base.next()
        #expect(try await loop.submit { 42 }.get() == 42)
        try await group.base.shutdownGracefully()
    }

    @Test("Its stream tasks connect and time their reads on the configured group")
    func streamTaskOnConfiguredGroup() async throws {
        let group = CountingEventLoopGroup()
        let server = try await LineServer.start()
        let session = Self.session(on: group)
        let stream = session.streamTask(withHostName: "127.0.0.1", port: server.port)
        do {
            stream.resume()
            // Connecting, with no read or write asked yet: the bootstrap takes a loop of the group.
            #expect(await waitUntil({ group.loopsHandedOut.load(ordering: .relaxed) > 0 }, timeout: .seconds(20)))
            let greeting = try await stream.readData(ofMinLength: 6, maxLength: 6, timeout: .seconds(20))
            #expect(String(decoding: greeting.data, as: UTF8.self) == "hello\n")
            let handedOut = group.loopsHandedOut.load(ordering: .relaxed)
            // A read that finds nothing ends on its timer, which the group runs too.
            do throws(HTTPSessionError) {
                _ = try await stream.readData(ofMinLength: 1, maxLength: 64, timeout: .milliseconds(200))
                Issue.record("a silent stream returned data")
            } catch {
                #expect(error.code == .timedOut, "\(error.message)")
            }
            #expect(group.loopsHandedOut.load(ordering: .relaxed) > handedOut)
        } catch {
            Issue.record("stream task failed: \(error)")
        }
        stream.cancel()
        try? await session.shutdown()
        await server.stop()
        try await group.base.shutdownGracefully()
    }

    @Test("A stream task on loops that are not SwiftNIO's POSIX ones fails to connect with an error naming them")
    func streamTaskOnForeignLoops() async throws {
        let loop = EmbeddedEventLoop()
        let session = Self.session(on: loop)
        let stream = session.streamTask(withHostName: "127.0.0.1", port: 9)
        stream.resume()
        do throws(HTTPSessionError) {
            _ = try await stream.readData(ofMinLength: 1, maxLength: 64, timeout: .seconds(20))
            Issue.record("a stream task connected on an embedded event loop")
        } catch {
            #expect(error.code == .cannotConnect, "\(error.message)")
            #expect(error.message.contains("tcp://127.0.0.1:9"), "\(error.message)")
            #expect(error.message.contains("EmbeddedEventLoop"), "\(error.message)")
        }
        stream.cancel()
        try? await session.shutdown()
        try await loop.shutdownGracefully()
    }

    @Test("An HTTP task on loops that are not SwiftNIO's POSIX ones fails with an error naming them, not a trap")
    func httpTaskOnForeignLoops() async throws {
        let loop = EmbeddedEventLoop()
        let session = Self.session(on: loop)
        let url = try #require(URL(string: "http://127.0.0.1:9/image.jpg"))
        do throws(HTTPSessionError) {
            _ = try await session.data(for: .init(url: url))
            Issue.record("an HTTP task loaded on an embedded event loop")
        } catch {
            #expect(error.code == .cannotConnect, "\(error.message)")
            #expect(error.message.contains("http://127.0.0.1:9/image.jpg"), "\(error.message)")
            #expect(error.message.contains("EmbeddedEventLoop"), "\(error.message)")
        }
        try? await session.shutdown()
        try await loop.shutdownGracefully()
    }
}
