import Foundation
import Testing
import WebImageHTTP
import WebImageTestSupport

@testable import WebImage

@Suite("HTTP freshness (RFC 9111, private cache)")
struct HTTPFreshnessTests {
    let received = Date(timeIntervalSince1970: 1_700_000_000)

    func freshness(
        _ cacheControl: String? = nil,
        expires: String? = nil,
        date: Date? = nil,
        age: String? = nil,
        vary: String? = nil,
        lastModified: Date? = nil
    ) -> HTTPFreshness {
        let headers = HTTPCachingHeaders(
            cacheControl: cacheControl,
            expires: expires,
            date: HTTPDate.string(from: date ?? received),
            age: age,
            vary: vary,
            receivedDate: received
        )
        return HTTPFreshness(headers: headers, lastModified: lastModified.map(HTTPDate.string(from:)))
    }

    func at(_ seconds: TimeInterval) -> Date { received.addingTimeInterval(seconds) }

    @Test("max-age: fresh until its seconds pass; Age and a Date behind our clock count against it")
    func maxAge() {
        let plain = freshness("public, max-age=60")
        #expect(plain.lifetime == 60 && plain.isExplicit)
        #expect(plain.use(at: at(59)) == .fresh)
        #expect(plain.use(at: at(60)) == .stale)
        #expect(freshness("max-age=60", age: "50").use(at: at(11)) == .stale)
        #expect(freshness("max-age=60", age: "50").use(at: at(9)) == .fresh)
        #expect(freshness("max-age=60", date: at(-30)).use(at: at(31)) == .stale)
        #expect(freshness("MAX-AGE=\"60\"").lifetime == 60)
    }

    @Test("Invalid or conflicting max-age reads as stale; a huge one as the largest")
    func invalidMaxAge() {
        #expect(freshness("max-age=abc").use(at: received) == .stale)
        #expect(freshness("max-age=-5").use(at: received) == .stale)
        #expect(freshness("max-age=60, max-age=3600").use(at: received) == .stale)
        #expect(freshness("max-age=99999999999999999999").use(at: at(86_400 * 365)) == .fresh)
    }

    @Test("Expires: ahead is fresh until then (counted from Date); past or invalid is stale; max-age wins")
    func expires() {
        #expect(freshness(expires: HTTPDate.string(from: at(120))).use(at: at(119)) == .fresh)
        #expect(freshness(expires: HTTPDate.string(from: at(120))).use(at: at(121)) == .stale)
        #expect(freshness(expires: HTTPDate.string(from: at(-1))).use(at: received) == .stale)
        #expect(freshness(expires: "0").use(at: received) == .stale)
        #expect(freshness("max-age=10", expires: HTTPDate.string(from: at(3600))).use(at: at(11)) == .stale)
        // Expires − Date, not Expires − now: an origin clock 1 h ahead of ours does not matter.
        let ahead = freshness(expires: HTTPDate.string(from: at(3600 + 60)), date: at(3600))
        #expect(ahead.lifetime == 60)
    }

    @Test("Heuristic: 10 % of Date − Last-Modified when nothing explicit; none without Last-Modified")
    func heuristic() {
        let tenDaysOld = freshness(lastModified: at(-10 * 86_400))
        #expect(!tenDaysOld.isExplicit)
        #expect(tenDaysOld.lifetime == 86_400)
        #expect(tenDaysOld.use(at: at(86_399)) == .fresh)
        #expect(tenDaysOld.use(at: at(86_401)) == .stale)
        #expect(freshness().use(at: received) == .stale)
    }

    @Test("no-cache, no-store, Vary: *, immutable, must-revalidate, stale-while-revalidate, stale-if-error")
    func directives() {
        #expect(freshness("max-age=600, no-cache").use(at: received) == .stale)
        #expect(freshness("no-store").isStorable == false)
        #expect(freshness("max-age=600", vary: "Accept, *").isStorable == false)
        #expect(freshness("max-age=600", vary: "Accept").isStorable)
        #expect(freshness("max-age=600, immutable").immutable)
        let swr = freshness("max-age=10, stale-while-revalidate=30")
        #expect(swr.use(at: at(5)) == .fresh)
        #expect(swr.use(at: at(20)) == .staleWhileRevalidating)
        #expect(swr.use(at: at(41)) == .stale)
        #expect(freshness("max-age=10, stale-while-revalidate=30, must-revalidate").use(at: at(20)) == .stale)
        #expect(freshness("max-age=10").mayServeStale(afterFailureAt: at(1000), disconnected: true))
        #expect(!freshness("max-age=10").mayServeStale(afterFailureAt: at(1000), disconnected: false))
        #expect(freshness("max-age=10, stale-if-error=100").mayServeStale(afterFailureAt: at(50), disconnected: false))
        #expect(!freshness("max-age=10, must-revalidate").mayServeStale(afterFailureAt: at(20), disconnected: true))
        #expect(!freshness("no-cache").mayServeStale(afterFailureAt: at(20), disconnected: true))
    }

    @Test("The headers' isStorable (no dates read) agrees with the freshness's")
    func storableFromHeaders() {
        let cases: [(cacheControl: String?, vary: String?)] = [
            (nil, nil), ("no-store", nil), ("public, No-Store", nil), ("no-storex", nil), ("\"no-store\"", nil),
            ("max-age=60", "*"), (nil, "Accept, *"), (nil, " * "), (nil, "Accept"), ("no-cache", "Accept-Encoding"),
            ("no-cache, must-revalidate", nil),
        ]
        for (cacheControl, vary) in cases {
            let headers = HTTPCachingHeaders(
                cacheControl: cacheControl,
                date: "not a date",
                vary: vary,
                receivedDate: received
            )
            let freshness = HTTPFreshness(headers: headers, lastModified: "not a date either")
            #expect(headers.isStorable == freshness.isStorable, "\(cacheControl ?? "-") \(vary ?? "-")")
        }
        #expect(!HTTPCachingHeaders(cacheControl: "public, no-store", receivedDate: received).isStorable)
        #expect(!HTTPCachingHeaders(vary: "Accept, *", receivedDate: received).isStorable)
        #expect(HTTPCachingHeaders(cacheControl: "no-cache", vary: "Accept", receivedDate: received).isStorable)
    }

    @Test("A 304's headers replace the stored ones and restart the clock")
    func notModifiedUpdates() {
        let stored = DiskCacheMetadata(
            etag: "\"a\"",
            httpCaching: HTTPCachingHeaders(cacheControl: "max-age=1", age: "5", receivedDate: received)
        )
        let later = at(100)
        let answer = DiskCacheMetadata(
            etag: "\"a\"",
            httpCaching: HTTPCachingHeaders(cacheControl: "max-age=60", receivedDate: later)
        )
        let updated = stored.updated(by: answer)
        #expect(updated.httpCaching?.cacheControl == "max-age=60")
        #expect(updated.httpCaching?.age == nil)
        #expect(updated.httpCaching?.receivedDate == later)
        #expect(updated.freshness?.use(at: later.addingTimeInterval(59)) == .fresh)
    }

    @Test("HTTP dates: IMF-fixdate, RFC 850 and asctime read; anything else is nil")
    func dates() {
        let expected = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == expected)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == expected)
        #expect(HTTPDate.string(from: expected) == "Sun, 06 Nov 1994 08:49:37 GMT")
        for bad in ["", "0", "-1", "Sun, 06 Nov 1994 25:49:37 GMT", "Sun, 32 Nov 1994 08:49:37 GMT", "tomorrow"] {
            #expect(HTTPDate.parse(bad) == nil, "\(bad)")
        }
    }

    @Test("The disk entry keeps the caching headers and the time they arrived")
    func diskRoundTrip() throws {
        let folder = try TemporaryDirectory()
        defer { folder.remove() }
        let cache = DiskCache(directory: folder.url)
        let headers = HTTPCachingHeaders(
            cacheControl: "max-age=60, stale-while-revalidate=30",
            expires: "Sun, 06 Nov 1994 08:49:37 GMT",
            date: "Sun, 06 Nov 1994 08:49:00 GMT",
            age: "7",
            vary: "Accept",
            receivedDate: received
        )
        let metadata = DiskCacheMetadata(contentType: "image/png", etag: "\"e\"", httpCaching: headers)
        try cache.store(Data([1, 2, 3]), forKey: "k", metadata: metadata)
        try cache.store(Data([4]), forKey: "plain", metadata: DiskCacheMetadata(etag: "\"p\""))
        #expect(cache.dataAndEntry(forKey: "k")?.entry.metadata == metadata)
        #expect(cache.dataAndEntry(forKey: "k")?.data == Data([1, 2, 3]))
        #expect(cache.dataAndEntry(forKey: "plain")?.entry.metadata.httpCaching == nil)
        #expect(cache.dataAndEntry(forKey: "plain")?.entry.metadata.etag == "\"p\"")
    }
}
