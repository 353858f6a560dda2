// swift-tools-version:6.1
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "swift-web-image",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "WebImageCoders", targets: ["WebImageCoders"]),
        .executable(name: "webimage", targets: ["webimage"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2")
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
            name: "CGIF",
            providers: [.apt(["libgif-dev"]), .brew(["giflib"])]
        ),
        // Every setjmp/longjmp for libjpeg and libpng lives here.
        .target(
            name: "CWebImageShims",
            dependencies: ["CJPEG", "CPNG"]
        ),
        .target(
            name: "WebImageCoders",
            dependencies: ["CJPEG", "CPNG", "CWebP", "CGIF", "CWebImageShims"],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "webimage",
            dependencies: [
                "WebImageCoders",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        // Test-only helpers: generated images, PNG/GIF builders, the WEBIMAGE_CORPUS loader.
        .target(
            name: "WebImageTestSupport",
            dependencies: ["WebImageCoders", "CGIF"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "WebImageCodersTests",
            dependencies: ["WebImageCoders", "WebImageTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "WebImageCLITests",
            dependencies: ["webimage", "WebImageCoders", "WebImageTestSupport"],
            swiftSettings: swiftSettings
        ),
    ],
    swiftLanguageModes: [.v6]
)
