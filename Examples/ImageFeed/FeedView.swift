#if canImport(SwiftUI)
public import SwiftUI

/// The feed screen of the example, on Apple platforms: a list of posts whose images load as
/// their rows appear.
public struct FeedView: View {
    @State private var model: FeedModel
    @Environment(\.scenePhase) private var scenePhase

    /// Creates the screen of `model`.
    public init(model: FeedModel) {
        _model = State(initialValue: model)
    }

    // snippet: image-feed-view
    /// The list, refreshed on pull and when it first appears.
    public var body: some View {
        List(model.posts) { post in
            HStack {
                if let thumbnail = model.thumbnails[post.id] {
                    Text("\(thumbnail.width)×\(thumbnail.height)")
                }
                Text(post.caption)
            }
            .task { await model.loadThumbnail(for: post) }
        }
        .refreshable { await model.refresh() }
        .task { await model.refresh() }
        .onChange(of: scenePhase) { _, phase in
            if phase == .background { model.enteredBackground() }
        }
    }
    // snippet end
}
#endif
