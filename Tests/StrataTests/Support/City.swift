/// The value type of Shallows' README, used across the tests.
struct City: Codable, Hashable, Sendable {
    var name: String
    var foundationYear: Int

    static let kharkiv = City(name: "Kharkiv", foundationYear: 1654)
    static let kyiv = City(name: "Kyiv", foundationYear: 482)
    static let lviv = City(name: "Lviv", foundationYear: 1256)
}
