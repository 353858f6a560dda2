import Foundation
import Testing
import WebImage
import WebImageOrigin
import WebImageTestSupport

@Suite("Decoding memory budget", .timeLimit(.minutes(1)))
struct DecodingMemoryBudgetTests {
    /// 256×256 PNGs (256 KiB decoded), each a different picture.
    static func png(seed: UInt64) -> Data {
        let image = DecodedImage(bitmap: GeneratedImages.noise(width: 256, height: 256, seed: seed), format: .png)
        return try! PNGCoder().encode(image, as: .png, options: .init())
    }
    static let decodedBytes = 256 * 256 * 4

    @Test("Reservations wait in request order and are granted as room is released")
    func order() {
        let budget = DecodingMemoryBudget(limit: 100)
        let granted = Locked<[(String, DecodingMemoryBudget.Reservation)]>([])
        guard let first = budget.reserve(60, whenGranted: { _ in Issue.record("granted twice") }) else {
            Issue.record("an empty budget made the first reservation wait")
            return
        }
        /// Asks for `bytes` as `name`: whether it had to wait.
        func waits(_ name: String, _ bytes: Int) -> Bool {
            budget.reserve(bytes, whenGranted: { reservation in granted.withLock { $0.append((name, reservation)) } })
                == nil
        }
        #expect(waits("b", 50))
        // It would fit now, but waits behind the larger request (no starvation).
        #expect(waits("c", 10))
        #expect(budget.waitingCount == 2)
        #expect(budget.bytesInUse == 60)

        first.release()
        first.release()  // a second release gives nothing back twice
        #expect(granted.withLock { $0.map(\.0) } == ["b", "c"])
        #expect(budget.bytesInUse == 60)
        #expect(budget.waitingCount == 0)
        #expect(budget.peakBytesInUse == 60)

        // More than the whole budget is clamped to it: it runs alone.
        #expect(!budget.admits(500))
        #expect(waits("d", 500))
        for (_, reservation) in granted.withLock({ $0.prefix(2) }) { reservation.release() }
        #expect(granted.withLock { $0.map(\.0) } == ["b", "c", "d"])
        #expect(budget.bytesInUse == 100)
        // A dropped reservation gives its bytes back.
        granted.withLock { $0.removeAll() }
        #expect(budget.bytesInUse == 0)
    }

    @Test("Stress: concurrent reservations never hold more than the limit, and all come back")
    func stress() async {
        let budget = DecodingMemoryBudget(limit: 1000)
        let over = Locked(0)
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    var random = SplitMix64(seed: UInt64(task))
                    for _ in 0..<300 {
                        let reservation = await budget.reserve(Int(random.next() % 700) + 1)
                        if budget.bytesInUse > budget.limit { over.withLock { $0 += 1 } }
                        reservation.release()
                    }
                }
            }
        }
        #expect(over.withLock { $0 } == 0)
        #expect(budget.bytesInUse == 0)
        #expect(budget.waitingCount == 0)
        #expect(budget.peakBytesInUse <= 1000)
    }

    @Test("Six downloads decode through the budget: one at a time when only one fits, and all load")
    func downloadsShareTheBudget() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        for index in 0..<6 {
            origin.setRoute("/\(index).png", .data(Self.png(seed: UInt64(index)), contentType: "image/png"))
        }
        let budget = DecodingMemoryBudget(limit: Self.decodedBytes * 3 / 2)
        var context = ImageContext()
        context.decodingMemoryBudget = budget
        let sizes = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<6 {
                group.addTask { [context] in
                    let result = try await fixture.manager.loadImage(
                        with: origin.url("/\(index).png"),
                        context: context
                    )
                    return result.image?.width ?? 0
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(sizes == Array(repeating: 256, count: 6))
        // Each decode reserved its 256 KiB; two never fit at once.
        #expect(budget.peakBytesInUse == Self.decodedBytes)
        #expect(budget.bytesInUse == 0)
        await origin.stop()
    }

    @Test("An image larger than the whole budget fails with limitExceeded: downloads, files and disk hits")
    func overBudget() async throws {
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        let data = Self.png(seed: 7)
        origin.setRoute("/big.png", .data(data, contentType: "image/png"))
        let budget = DecodingMemoryBudget(limit: Self.decodedBytes / 2)
        var context = ImageContext()
        context.decodingMemoryBudget = budget

        let url = origin.url("/big.png")
        await #expect {
            try await fixture.manager.loadImage(with: url, context: context)
        } throws: { error in
            let error = error as! WebImageError
            return error.code == .badImageData && error.message.hasPrefix(url.absoluteString)
                && error.message.contains("limit") && error.message.contains("256×256")
                && error.message.contains("decoding memory budget")
        }

        let file = fixture.folder.file("big.png")
        try data.write(to: file)
        await #expect {
            try await fixture.manager.loadImage(with: file, context: context)
        } throws: { error in
            (error as! WebImageError).message.contains("decoding memory budget")
        }

        // The same bytes on disk: a hit with this budget cannot decode them; the default can.
        try await fixture.cache.store(nil, data: data, forKey: "disk-hit", cacheType: .disk)
        let refused = await fixture.cache.queryImage(forKey: "disk-hit", context: context, cacheType: .disk)
        #expect(refused.image == nil && refused.data == data)
        let decoded = await fixture.cache.queryImage(forKey: "disk-hit", cacheType: .disk)
        #expect(decoded.image?.width == 256)
        #expect(budget.peakBytesInUse == 0)
        await origin.stop()
    }

    @Test("Six concurrent 4096² × 15-frame animations of a few hundred bytes end with a clean limit error")
    func animationBombs() async throws {
        // Defaults hold them off: 1 GB decoded each is over the 512 MiB animation limit, and the
        // budget lets at most two of the largest admitted animations decode at once.
        #expect(ImageDecodingOptions().maxAnimationBytes == 512 << 20)
        #expect(DecodingMemoryBudget.defaultLimit <= 1 << 30)
        let fixture = try ManagerFixture()
        defer { fixture.folder.remove() }
        let origin = try await OriginServer.start()
        // 1×1 frames on a 4096² canvas: every composed frame is a full canvas.
        let palette: [(UInt8, UInt8, UInt8)] = [(255, 0, 0), (0, 0, 255)]
        let frames = (0..<15).map { GIFBuilder.Frame(x: $0, y: $0, width: 1, height: 1, indices: [UInt8($0 % 2)]) }
        let bomb = GIFBuilder(width: 4096, height: 4096, globalPalette: palette).build(frames: frames)
        #expect(bomb.count < 1000)
        for index in 0..<6 { origin.setRoute("/\(index).gif", .data(bomb, contentType: "image/gif")) }
        let messages = await withTaskGroup(of: String.self) { group in
            for index in 0..<6 {
                group.addTask {
                    do {
                        let result = try await fixture.manager.loadImage(with: origin.url("/\(index).gif"))
                        return "loaded \(result.image?.frames.count ?? 0) frames"
                    } catch let error as WebImageError {
                        return "\(error.code.rawValue): \(error.message)"
                    } catch {
                        return "\(error)"
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(messages.count == 6)
        for message in messages {
            #expect(message.hasPrefix("badImageData: http://127.0.0.1"), "\(message)")
            #expect(message.contains("15 frames of 4096×4096 exceed the 536870912-byte animation limit"), "\(message)")
        }
        await origin.stop()
    }
}
