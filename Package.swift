// swift-tools-version:6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

// WEBIMAGE_OPTIMIZE_PIXELS=1 (set by scripts/test.sh): debug builds compile the pixel code (the
// coders and the C shims) optimised, with assertions kept, so the test suites' megapixels take
// seconds instead of minutes. Unset (a package that depends on this one), no flags are added.
let optimizePixels = Context.environment["WEBIMAGE_OPTIMIZE_PIXELS"] == "1"
let pixelSwiftSettings: [SwiftSetting] =
    swiftSettings
    + (optimizePixels ? [.unsafeFlags(["-O", "-assert-config", "Debug"], .when(configuration: .debug))] : [])
let pixelCSettings: [CSetting] = optimizePixels ? [.unsafeFlags(["-O2"], .when(configuration: .debug))] : []

let package = Package(
    name: "swift-web-image",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "WebImageCoders", targets: ["WebImageCoders"]),
        .library(name: "WebImageHTTP", targets: ["WebImageHTTP"]),
        .library(name: "WebImageOrigin", targets: ["WebImageOrigin"]),
        .library(name: "WebImage", targets: ["WebImage"]),
        .library(name: "WebImageServer", targets: ["WebImageServer"]),
        .executable(name: "webimage", targets: ["webimage"]),
        // HEIC and JPEG XL writers for tests and fuzz seeds (the library only decodes those).
        .library(name: "WebImageTestEncoders", targets: ["WebImageTestEncoders"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // `swift package generate-documentation` (DocC); no code depends on it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // System codec libraries (installed by scripts/bootstrap.sh).
        .systemLibrary(
            name: "CJPEG",
            pkgConfig: "libjpeg",
            providers: [.apt(["libjpeg62-turbo-dev"]), .brew(["jpeg-turbo"])]
        ),
        .systemLibrary(
            name: "CPNG",
            pkgConfig: "libpng",
            providers: [.apt(["libpng-dev"]), .brew(["libpng"])]
        ),
        .systemLibrary(
            name: "CWebP",
            pkgConfig: "libwebp",
            providers: [.apt(["libwebp-dev"]), .brew(["webp"])]
        ),
        .systemLibrary(
            name: "CAVIF",
            // No pkgConfig: libavif's .pc adds -DAVIF_DLL, a flag SwiftPM refuses (with a warning).
            providers: [.apt(["libavif-dev"]), .brew(["libavif"])]
        ),
        // libavif, libheif and libjxl are not linked: CWebImageShims loads them on first use
        // (codec_loader.c), so a process that never decodes AVIF, HEIC or JPEG XL does not pay
        // ~25 ms to map them and their 30 dependencies. So no pkgConfig here either (its -lheif).
        .systemLibrary(
            name: "CHEIF",
            providers: [.apt(["libheif-dev"]), .brew(["libheif"])]
        ),
        .systemLibrary(
            name: "CJXL",
            // No pkgConfig: libjxl's .pc adds -DHWY_SHARED_DEFINE (from libhwy), a flag SwiftPM refuses.
            providers: [.apt(["libjxl-dev"]), .brew(["jpeg-xl"])]
        ),
        .systemLibrary(
            name: "CGIF",
            providers: [.apt(["libgif-dev"]), .brew(["giflib"])]
        ),
        // Little CMS 2: colour management (ICC profiles to sRGB), as libvips and Pillow use it.
        .systemLibrary(
            name: "CLCMS2",
            pkgConfig: "lcms2",
            providers: [.apt(["liblcms2-dev"]), .brew(["little-cms2"])]
        ),
        // libtiff: TIFF sources and results.
        .systemLibrary(
            name: "CTIFF",
            pkgConfig: "libtiff-4",
            providers: [.apt(["libtiff-dev"]), .brew(["libtiff"])]
        ),
        // Every setjmp/longjmp for libjpeg and libpng lives here, the lcms2 calls whose pixel
        // formats are C macros, libtiff's memory I/O callbacks, and pixel loops Swift cannot
        // vectorise.
        .target(
            name: "CWebImageShims",
            dependencies: ["CJPEG", "CPNG", "CLCMS2", "CTIFF"],
            cSettings: pixelCSettings
        ),
        // POSIX helpers the Glibc module does not expose (statx for the disk cache).
        .target(name: "CWebImageSystem"),
        .target(
            name: "WebImageCoders",
            dependencies: ["CJPEG", "CPNG", "CWebP", "CGIF", "CAVIF", "CHEIF", "CJXL", "CWebImageShims"],
            swiftSettings: pixelSwiftSettings
        ),
        .target(
            name: "WebImageHTTP",
            dependencies: [
                "WebImageCoders",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "WebImage",
            dependencies: [
                "WebImageCoders", "WebImageHTTP", "CWebImageSystem",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // A local origin server with scriptable behaviours, for tests, the demo and benchmarks.
        .target(
            name: "WebImageOrigin",
            dependencies: [
                "WebImageCoders",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "webimage",
            dependencies: [
                "WebImageCoders", "WebImage", "WebImageHTTP", "WebImageOrigin", "WebImageServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // A child process for the disk cache's kill and multi-process tests.
        .executableTarget(
            name: "webimage-cache-stress",
            dependencies: ["WebImage", "WebImageTestSupport"],
            path: "Sources/CacheStressTool",
            swiftSettings: swiftSettings
        ),
        // The soak run: 50,000 loads through ImageManager against a local origin (README, Hardening).
        .executableTarget(
            name: "webimage-soak",
            dependencies: [
                "WebImage", "WebImageHTTP", "WebImageOrigin", "WebImageTestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/SoakTool",
            swiftSettings: swiftSettings
        ),
        // The image proxy behind `webimage serve`: imgproxy-compatible URLs and signatures,
        // processing options and their geometry, the source rules.
        .target(
            name: "WebImageServer",
            dependencies: [
                "WebImage", "WebImageCoders", "WebImageHTTP",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // HEIC (libheif + x265) and JPEG XL (libjxl) writers: test files and fuzz seeds.
        .target(
            name: "WebImageTestEncoders",
            dependencies: ["WebImageCoders", "CHEIF", "CJXL", "CAVIF", "CLCMS2"],
            swiftSettings: swiftSettings
        ),
        // Test-only helpers: generated images, PNG/GIF builders, the WEBIMAGE_CORPUS loader.
        .target(
            name: "WebImageTestSupport",
            dependencies: [
                "WebImageCoders", "WebImageTestEncoders", "CGIF",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "WebImageCodersTests",
            dependencies: ["WebImageCoders", "WebImageTestEncoders", "WebImageTestSupport", "CWebImageShims"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "WebImageServerTests",
            dependencies: [
                "WebImageServer", "WebImageCoders", "WebImageHTTP", "WebImageOrigin", "WebImageTestSupport",
                "WebImageTestEncoders",
                // NIOHTTP1 beside WebImage: a server app's imports, which must not collide.
                .product(name: "NIOHTTP1", package: "swift-nio"),
                // EmbeddedChannel: the connection limiter's decisions tested without sockets.
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "WebImageHTTPTests",
            dependencies: [
                "WebImageHTTP", "WebImageOrigin", "WebImageTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "WebImageTests",
            dependencies: [
                "WebImage", "WebImageHTTP", "WebImageOrigin", "WebImageTestSupport", "webimage-cache-stress",
                "webimage-soak",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "WebImageCLITests",
            dependencies: [
                "webimage", "WebImage", "WebImageCoders", "WebImageOrigin", "WebImageTestEncoders",
                "WebImageTestSupport", "WebImageHTTP", "WebImageServer",
            ],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
