// swift-tools-version:6.1
import PackageDescription

// Benchmarks live in their own package so `swift test` of the library never builds them.
// Run: swift run -c release --package-path Benchmarks webimage-benchmarks
let package = Package(
    name: "swift-web-image-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "swift-web-image", path: ".."),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // The same work done directly through the C libraries: the reference figures.
        .target(
            name: "CDirectCodecs",
            linkerSettings: [
                .linkedLibrary("jpeg"), .linkedLibrary("png16"), .linkedLibrary("webp"), .linkedLibrary("gif"),
                .linkedLibrary("avif"), .linkedLibrary("heif"), .linkedLibrary("jxl"), .linkedLibrary("lcms2"),
            ]
        ),
        // Arguments, medians, timed batches of loads and a test photo, for the executables below.
        .target(
            name: "BenchmarkSupport",
            dependencies: [.product(name: "WebImage", package: "swift-web-image")]
        ),
        .executableTarget(
            name: "webimage-http-benchmarks",
            dependencies: [
                .product(name: "WebImageHTTP", package: "swift-web-image"),
                .product(name: "WebImageOrigin", package: "swift-web-image"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                "CDirectCodecs",
            ],
            path: "Sources/HTTPBenchmarks"
        ),
        .executableTarget(
            name: "webimage-downloader-benchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "WebImage", package: "swift-web-image"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "WebImageOrigin", package: "swift-web-image"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                "CDirectCodecs",
            ],
            path: "Sources/DownloaderBenchmarks"
        ),
        .executableTarget(
            name: "webimage-manager-benchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "WebImage", package: "swift-web-image"),
                .product(name: "WebImageOrigin", package: "swift-web-image"),
            ],
            path: "Sources/ManagerBenchmarks"
        ),
        .executableTarget(
            name: "webimage-warm-load-benchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "WebImage", package: "swift-web-image"),
                .product(name: "WebImageOrigin", package: "swift-web-image"),
            ],
            path: "Sources/WarmLoadBenchmarks"
        ),
        .executableTarget(
            name: "webimage-cache-benchmarks",
            dependencies: [.product(name: "WebImage", package: "swift-web-image"), "CDirectCodecs"],
            path: "Sources/CacheBenchmarks"
        ),
        .executableTarget(
            name: "webimage-benchmarks",
            dependencies: [
                .product(name: "WebImageCoders", package: "swift-web-image"),
                .product(name: "WebImageTestEncoders", package: "swift-web-image"),
                "CDirectCodecs",
            ],
            path: "Sources/WebImageBenchmarks"
        ),
    ],
    swiftLanguageModes: [.v6]
)
