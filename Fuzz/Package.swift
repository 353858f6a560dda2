// swift-tools-version:6.1
import PackageDescription

// libFuzzer targets, in their own package so `swift test` never builds them with sanitizers.
// One executable, `webimage-fuzz`; WEBIMAGE_FUZZ_TARGET picks what it fuzzes.
// Build and run: scripts/fuzz.sh TARGET [-runs=N | -max_total_time=S]  (README: Hardening)
let package = Package(
    name: "swift-web-image-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "swift-web-image", path: "..")],
    targets: [
        // Hands the executable's inputs to libFuzzer's driver.
        .target(name: "FuzzSupport", path: "Sources/FuzzSupport"),
        .executableTarget(
            name: "webimage-fuzz",
            dependencies: [
                "FuzzSupport",
                .product(name: "WebImage", package: "swift-web-image"),
                .product(name: "WebImageCoders", package: "swift-web-image"),
                .product(name: "WebImageHTTP", package: "swift-web-image"),
                .product(name: "WebImageServer", package: "swift-web-image"),
                .product(name: "WebImageTestEncoders", package: "swift-web-image"),
            ],
            path: "Sources/WebImageFuzz"
        ),
    ],
    swiftLanguageModes: [.v6]
)
