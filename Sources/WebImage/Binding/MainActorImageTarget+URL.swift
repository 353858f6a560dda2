import Foundation
import WebImageCoders

// The non-optional `URL` form of the SDWebImage-shaped entry points. The `URL?` form stays for
// SDWebImage parity (a `nil` URL fails with `invalidURL` at run time); with a `URL` in hand the
// compiler picks this one, which forwards to its optional twin unchanged.

extension MainActorImageTarget {
    /// ``setImage(with:placeholder:options:context:operationKey:manager:completed:)-(URL?,_,_,_,_,_,_)``
    /// for a URL that is there.
    @discardableResult
    // shape: SDWebImage's sd_setImage(with:placeholderImage:options:context:progress:completed:) shape
    public func setImage(
        with url: URL,
        placeholder: DecodedImage? = nil,
        options: ImageOptions = [],
        context: ImageContext? = nil,
        operationKey: String? = nil,
        manager: ImageManager = .shared,
        completed: (@MainActor (Result<ImageLoadResult, WebImageError>) -> Void)? = nil
    ) -> ImageLoadOperation? {
        setImage(
            with: Optional(url),
            placeholder: placeholder,
            options: options,
            context: context,
            operationKey: operationKey,
            manager: manager,
            completed: completed
        )
    }
}
