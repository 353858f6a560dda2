import Foundation
import Testing
import WebImage
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("ImageDownloader TLS and cookie options", .timeLimit(.minutes(1)))
struct OptionsTests {
    @Test("allowInvalidSSLCertificates accepts a self-signed origin; without it the load fails")
    func invalidCertificates() async throws {
        let identity = try TestCertificates.selfSigned()
        let origin = try await OriginServer.start(
            tls: .init(certificatePEM: identity.certificatePEM, privateKeyPEM: identity.privateKeyPEM)
        )
        origin.setRoute("/tls.png", DownloaderFixtures.route())
        let downloader = DownloaderFixtures.downloader()
        do {
            _ = try await downloader.image(with: origin.url("/tls.png"))
            Issue.record("an untrusted certificate was accepted")
        } catch {
            #expect(error.code == .networkError && error.underlying?.code == .serverCertificateUntrusted)
        }
        let result = try await downloader.image(with: origin.url("/tls.png"), options: .allowInvalidSSLCertificates)
        #expect(result.image?.width == 32)
        await origin.stop()
    }

    @Test("handleCookies sends and stores cookies; loads without it do neither")
    func cookies() async throws {
        let origin = try await OriginServer.start()
        let path = "/cookie-\(UUID().uuidString)"
        origin.setRoute(
            path + "/set.png",
            OriginRoute(
                headers: [("Content-Type", "image/png"), ("Set-Cookie", "token=42; Path=\(path)")],
                body: DownloaderFixtures.png
            )
        )
        origin.setRoute(path + "/get.png", DownloaderFixtures.route())
        let downloader = DownloaderFixtures.downloader()
        _ = try await downloader.image(with: origin.url(path + "/set.png"), options: .handleCookies)
        _ = try await downloader.image(with: origin.url(path + "/get.png"))
        #expect(origin.requests.last?.header("cookie") == nil)
        _ = try await downloader.image(with: origin.url(path + "/get.png"), options: .handleCookies)
        #expect(origin.requests.last?.header("cookie") == "token=42")
        HTTPCookieStore.shared.store(
            setCookieHeaders: ["token=; Max-Age=0; Path=\(path)"],
            from: origin.url(path + "/set.png")
        )
        await origin.stop()
    }
}
