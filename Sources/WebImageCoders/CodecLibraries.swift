import CAVIF
import CGIF
import CHEIF
import CJPEG
import CJXL
import CPNG
import CWebImageShims
import CWebP

/// The C codec libraries this build decodes and encodes with, and their versions: what
/// `webimage --version` prints, and what a bug report should name.
public struct CodecLibrary: Sendable, Hashable {
    /// The library, such as `libpng`.
    public let name: String
    /// Its version as the library reports it (at run time where it can; libjpeg-turbo and
    /// giflib only have their headers' version).
    public let version: String

    /// Every codec library, in the order of ``ImageCodersManager/builtInCoders``, then Little CMS.
    public static var all: [CodecLibrary] {
        func dotted(_ packed: Int, _ base: Int) -> String {
            "\(packed / (base * base)).\(packed / base % base).\(packed % base)"
        }
        /// A library loaded on first use: its version, or why it cannot be used.
        func loaded(_ library: wi_codec_library, _ version: () -> String) -> String {
            library.unavailableReason.map { "unavailable: \($0)" } ?? version()
        }
        return [
            CodecLibrary(name: "libjpeg-turbo", version: dotted(Int(LIBJPEG_TURBO_VERSION_NUMBER), 1000)),
            CodecLibrary(name: "libpng", version: String(cString: png_get_libpng_ver(nil))),
            CodecLibrary(name: "giflib", version: "\(GIFLIB_MAJOR).\(GIFLIB_MINOR).\(GIFLIB_RELEASE)"),
            CodecLibrary(name: "libwebp", version: dotted(Int(WebPGetDecoderVersion()), 256)),
            CodecLibrary(
                name: "libavif",
                version: loaded(WI_LIBRARY_AVIF) {
                    var codecs = [CChar](repeating: 0, count: 256)
                    avifCodecVersions(&codecs)
                    let names = String(decoding: codecs.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                    return String(cString: avifVersion()) + (names.isEmpty ? "" : " (\(names))")
                }
            ),
            CodecLibrary(name: "libheif", version: loaded(WI_LIBRARY_HEIF) { String(cString: heif_get_version()) }),
            CodecLibrary(name: "libjxl", version: loaded(WI_LIBRARY_JXL) { dotted(Int(JxlDecoderVersion()), 1000) }),
            // Colour management changes pixels too: results name its version (and the proxy's
            // entity tags change with it).
            CodecLibrary(name: "lcms2", version: "\(wi_lcms_version() / 1000).\(wi_lcms_version() % 1000 / 10)"),
        ]
    }
}
