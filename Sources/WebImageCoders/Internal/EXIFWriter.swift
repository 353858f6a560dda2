/// Builds the smallest EXIF (TIFF) block that carries an orientation tag.
enum EXIFWriter {
    /// Little-endian TIFF header, one IFD with tag 274 (orientation), no next IFD.
    static func orientationBlock(_ orientation: ImageOrientation) -> [UInt8] {
        let value = UInt8(orientation.rawValue)
        return [
            0x49, 0x49, 0x2A, 0x00, 0x08, 0x00, 0x00, 0x00,  // "II", 42, IFD at 8
            0x01, 0x00,  // one entry
            0x12, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, value, 0x00, 0x00, 0x00,  // 274, SHORT, 1, value
            0x00, 0x00, 0x00, 0x00,  // no next IFD
        ]
    }
}
