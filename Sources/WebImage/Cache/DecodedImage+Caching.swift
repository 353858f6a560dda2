import Foundation
import WebImageCoders

extension DecodedImage {
    /// Whether this image, found in memory, is what a load with `options` decodes: an animation
    /// decoded on demand (``animation``) serves loads with ``ImageOptions/decodeFramesOnDemand``
    /// (or ``ImageOptions/decodeFirstFrameOnly``, which want its first frame), a whole animation
    /// every load but those with `decodeFramesOnDemand`, which decode it again from disk
    /// (SDWebImage's matching of the animated image class). Still images serve every load.
    func serves(_ options: ImageOptions) -> Bool {
        guard !options.contains(.decodeFirstFrameOnly) else { return true }
        let onDemand = options.contains(.decodeFramesOnDemand)
        return animation != nil ? onDemand : !(onDemand && isAnimated)
    }

    /// The bytes a disk cache stores when it is given the image alone: its own format when an
    /// encoder writes it, else PNG; an animation decoded on demand, its encoded bytes (a load
    /// decodes them as it asks).
    func encodedForDisk() throws -> Data {
        if let animation { return animation.data }
        let coders = ImageCodersManager.shared
        if let data = try? coders.encode(self, as: format, options: ImageEncodingOptions()) { return data }
        return try coders.encode(self, as: .png, options: ImageEncodingOptions())
    }
}

extension ImageOptions {
    /// The options a load runs with: ``decodeFramesOnDemand`` dropped when a transformer or the
    /// manager's hook must see every frame, or only the first frame is wanted.
    func framesOnDemandResolved(transforms: Bool) -> ImageOptions {
        guard contains(.decodeFramesOnDemand), transforms || contains(.decodeFirstFrameOnly) else { return self }
        return subtracting(.decodeFramesOnDemand)
    }
}
