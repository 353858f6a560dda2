import Testing
import WebImageCoders

@Suite struct SaturatingConversionTests {
    @Test func insideTheBoundsIsTheValue() {
        #expect(Int(saturating: 42, in: 0...100) == 42)
        #expect(Int(saturating: -7, in: -10...10) == -7)
        #expect(Int(saturating: 100, in: 0...100) == 100)
        #expect(Int(saturating: 0, in: 0...100) == 0)
    }

    @Test func pastTheBoundsIsTheBound() {
        #expect(Int(saturating: 1e30, in: 0...Int.max) == .max)
        #expect(Int(saturating: Double(Int.max), in: 0...Int.max) == .max)
        #expect(Int(saturating: .infinity, in: 1...Int(Int32.max)) == Int(Int32.max))
        #expect(Int(saturating: -.infinity, in: -2_147_483_648...2_147_483_648) == -2_147_483_648)
        #expect(Int(saturating: -1e300, in: 0...Int.max) == 0)
        #expect(Int(saturating: 101, in: 0...100) == 100)
        #expect(Int(saturating: -1e30, in: Int.min...Int.max) == .min)
    }

    @Test func notANumberCountsAsZeroWithinTheBounds() {
        #expect(Int(saturating: .nan, in: 0...Int.max) == 0)
        #expect(Int(saturating: .nan, in: -5...5) == 0)
        #expect(Int(saturating: .nan, in: 1...Int(Int32.max)) == 1)
        #expect(Int(saturating: -.nan, in: -9 ... -3) == -3)
    }
}
