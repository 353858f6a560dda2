import Testing
import WebImageTestSupport

@Suite("Test builders' checksums")
struct ChecksumTests {
    @Test("CRC-32 matches the standard check value")
    func checkValue() {
        #expect(Checksum.crc32(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(Checksum.crc32([UInt8]()) == 0)
    }

    @Test("The CRC-32 of zeros by squaring equals feeding the zeros", arguments: [0, 1, 2, 7, 258, 1000, 65_537])
    func zeros(count: Int) {
        #expect(Checksum.crc32OfZeros(count: count) == Checksum.crc32([UInt8](repeating: 0, count: count)))
    }
}
