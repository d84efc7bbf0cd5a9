#if canImport(SwiftUI)
import Foundation
import Strata
import SwiftUI

// The SwiftUI example of "Getting started in an app" (Strata.docc), between `// snippet: name` and
// `// snippet end`; ReadmeTests checks that the article shows exactly these lines. It compiles
// where SwiftUI exists, on Apple platforms; on Linux only ReadmeTests reads it.

enum ArticleRootView {
    /// The app's cache of thumbnails, which the root view trims when the app leaves the screen.
    static let thumbnails = MemoryStorage<String, Data>()

    /// The app's content, a stand-in here.
    struct ContentView: View {
        var body: some View { Text("Thumbnails") }
    }

    // snippet: root-view-background
    struct RootView: View {
        @Environment(\.scenePhase) private var scenePhase

        var body: some View {
            ContentView()
                .onChange(of: scenePhase) { _, phase in
                    if phase == .background { thumbnails.relieveMemoryPressure(.warning) }
                }
        }
    }
    // snippet end
}
#endif
