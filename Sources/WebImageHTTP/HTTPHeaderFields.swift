/// Ordered HTTP header fields with case-insensitive names; a name may repeat.
public struct HTTPHeaderFields: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    public struct Field: Sendable, Hashable {
        public var name: String
        public var value: String
    }

    private var fields: [Field] = []

    public init() {}

    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { add(name: name, value: value) }
    }

    public init(_ pairs: some Sequence<(String, String)>) {
        for (name, value) in pairs { add(name: name, value: value) }
    }

    /// The first value for `name`, or `nil`. Setting replaces every value (`nil` removes).
    public subscript(name: String) -> String? {
        get { fields.first { $0.name.caseInsensitiveEquals(name) }?.value }
        set {
            remove(name: name)
            if let newValue { add(name: name, value: newValue) }
        }
    }

    /// Every value for `name`, in order.
    public func values(for name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// Appends a field, keeping existing ones with the same name.
    public mutating func add(name: String, value: String) { fields.append(Field(name: name, value: value)) }

    public mutating func remove(name: String) { fields.removeAll { $0.name.caseInsensitiveEquals(name) } }

    public func contains(_ name: String) -> Bool { fields.contains { $0.name.caseInsensitiveEquals(name) } }

    /// Fields of `other` replace same-named fields here.
    public func merging(_ other: HTTPHeaderFields) -> HTTPHeaderFields {
        guard !other.fields.isEmpty else { return self }
        var merged = self
        merged.fields.removeAll { field in other.fields.contains { $0.name.caseInsensitiveEquals(field.name) } }
        merged.fields += other.fields
        return merged
    }

    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }

    public var description: String { fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n") }
}

extension String {
    /// ASCII case-insensitive equality, without allocating (header names are ASCII).
    func caseInsensitiveEquals(_ other: String) -> Bool {
        var left = utf8.makeIterator()
        var right = other.utf8.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil):
                return true
            case (let a?, let b?):
                if a != b && (a | 0x20) != (b | 0x20) || a != b && !((a | 0x20) >= 0x61 && (a | 0x20) <= 0x7A) {
                    return false
                }
            default:
                return false
            }
        }
    }
}
