import Foundation
import StrataTestSupport

extension TemporaryFolder {
    /// Sets every value folder's modification time `seconds` back, as if the folder had not
    /// changed for a while: a snapshot saved then trusts it (one saved within a second of a
    /// change does not).
    func ageValueFolders(by seconds: TimeInterval = 10) throws {
        let then = Date(timeIntervalSinceNow: -seconds)
        for name in try FileManager.default.contentsOfDirectory(atPath: path) where name.count == 2 {
            try FileManager.default.setAttributes([.modificationDate: then], ofItemAtPath: path + "/" + name)
        }
    }
}
