public import Foundation

/// A decoded image: its size and its pixels, three bytes (red, green, blue) each.
///
/// The example's images are binary PPM files (`P6`), which decode in a few lines on every
/// platform; an app decodes PNG or JPEG with `UIImage(data:)` or `CGImageSource` at the same
/// place in the chain. What matters is the same: the memory cache holds decoded images and
/// counts their pixel bytes, not the size of the file they came from.
public struct Thumbnail: Sendable, Hashable {
    /// The width in pixels.
    public var width: Int
    /// The height in pixels.
    public var height: Int
    /// `width × height × 3` bytes, row by row.
    public var pixels: [UInt8]

    /// What the image costs in memory: its pixel bytes.
    public var byteCount: Int { pixels.count }

    /// The largest side accepted, so that a hostile header cannot ask for gigabytes.
    public static let maximumSide = 8_192

    /// Creates an image of one colour, for tests and previews.
    public init(width: Int, height: Int, red: UInt8, green: UInt8, blue: UInt8) {
        self.width = width
        self.height = height
        self.pixels = Array(repeating: [red, green, blue], count: width * height).flatMap { $0 }
    }

    /// Decodes a binary PPM file.
    ///
    /// - Throws: ``ThumbnailError`` when `data` is not a complete PPM image.
    public init(decoding data: Data) throws(ThumbnailError) {
        let header = try Self.header(of: data)
        self.width = header.width
        self.height = header.height
        self.pixels = Array(data[(data.startIndex + header.length)...])
    }

    /// The image as a binary PPM file.
    public var ppm: Data {
        Data("P6\n\(width) \(height)\n255\n".utf8) + pixels
    }

    /// Checks that `data` is a whole PPM image without copying its pixels: what a download is
    /// validated with before it is cached.
    ///
    /// - Throws: ``ThumbnailError`` when it is not.
    public static func validate(_ data: Data) throws(ThumbnailError) {
        _ = try header(of: data)
    }

    /// Reads the header: `P6`, the width, the height and 255, separated by white space, with
    /// `#` comments; then exactly `width × height × 3` bytes must follow.
    static func header(of data: Data) throws(ThumbnailError) -> (width: Int, height: Int, length: Int) {
        let bytes = [UInt8](data.prefix(256))
        var index = 0
        func skipSpaceAndComments() {
            while index < bytes.count {
                if bytes[index] == UInt8(ascii: "#") {
                    while index < bytes.count, bytes[index] != UInt8(ascii: "\n") { index += 1 }
                } else if [9, 10, 13, 32].contains(bytes[index]) {
                    index += 1
                } else {
                    return
                }
            }
        }
        func number() throws(ThumbnailError) -> Int {
            skipSpaceAndComments()
            var value = 0
            let start = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                value = value * 10 + Int(bytes[index] - UInt8(ascii: "0"))
                guard value <= maximumSide else { throw .tooLarge }
                index += 1
            }
            guard index > start else { throw .notAnImage }
            return value
        }
        guard bytes.starts(with: Array("P6".utf8)) else { throw .notAnImage }
        index = 2
        let width = try number()
        let height = try number()
        guard try number() == 255, index < bytes.count, [9, 10, 13, 32].contains(bytes[index]) else {
            throw .notAnImage
        }
        index += 1
        guard width > 0, height > 0 else { throw .notAnImage }
        guard data.count - index == width * height * 3 else { throw .truncated }
        return (width, height, index)
    }
}

/// Why bytes are not a ``Thumbnail``.
public enum ThumbnailError: Error, Sendable, Hashable {
    /// The bytes are not a binary PPM image.
    case notAnImage
    /// The header asks for a side longer than ``Thumbnail/maximumSide``.
    case tooLarge
    /// The pixels are fewer or more than the header says.
    case truncated
}
