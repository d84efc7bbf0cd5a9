import Foundation

/// An SVG chart of `strata-bench hitrate` results: one panel per trace, hit ratio against cache
/// size with one line per policy, Caffeine 2.6.2's measured hit ratio dotted on a real trace, and
/// Belady's optimum dashed as the ceiling. Hand-written SVG, so the bench needs no plotting
/// dependency.
struct HitRatePlot {
    var results: [HitRateResult]

    private static let panelWidth = 340.0
    private static let panelHeight = 250.0
    private static let margin = (left: 52.0, right: 16.0, top: 34.0, bottom: 44.0)
    private static let legendHeight = 40.0
    private static let colors = ["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]
    /// Caffeine's line, in none of the policies' colours.
    private static let caffeineColor = "#7f7f7f"

    /// Writes the chart to `path`.
    func write(to path: String) throws(HitRateError) {
        do {
            try Data(svg().utf8).write(to: URL(fileURLWithPath: path))
        } catch {
            throw HitRateError("cannot write the plot to '\(path)': \(error)")
        }
    }

    /// The chart as an SVG document.
    func svg() -> String {
        var traces: [String] = []
        for result in results where !traces.contains(result.trace) {
            traces.append(result.trace)
        }
        let policies = results.first.map { $0.hitRatios.map(\.policy) } ?? []
        let columns = min(3, max(traces.count, 1))
        let rows = (traces.count + columns - 1) / columns
        let width = Double(columns) * Self.panelWidth
        let height = Self.legendHeight + Double(max(rows, 1)) * Self.panelHeight
        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="11">
            <rect width="100%" height="100%" fill="white"/>

            """
        svg += legend(policies: policies, showsCaffeine: results.contains { $0.caffeine != nil })
        for (index, trace) in traces.enumerated() {
            let x = Double(index % columns) * Self.panelWidth
            let y = Self.legendHeight + Double(index / columns) * Self.panelHeight
            svg += panel(trace: trace, results: results.filter { $0.trace == trace }, x: x, y: y)
        }
        svg += "</svg>\n"
        return svg
    }

    private func legend(policies: [String], showsCaffeine: Bool) -> String {
        var entries = policies.enumerated().map { index, policy in
            (name: policy, color: Self.colors[index % Self.colors.count], dash: "")
        }
        if showsCaffeine { entries.append(("caffeine 2.6.2", Self.caffeineColor, " stroke-dasharray=\"2,2\"")) }
        entries.append(("belady", "black", " stroke-dasharray=\"5,3\""))
        var svg = ""
        var x = 16.0
        for entry in entries {
            svg += "<line x1=\"\(x)\" y1=\"20\" x2=\"\(x + 24)\" y2=\"20\" "
            svg += "stroke=\"\(entry.color)\" stroke-width=\"2\"\(entry.dash)/>\n"
            svg += "<text x=\"\(x + 30)\" y=\"24\">\(escaped(entry.name))</text>\n"
            x += 40 + Double(entry.name.count) * 7
        }
        return svg
    }

    private func panel(trace: String, results: [HitRateResult], x: Double, y: Double) -> String {
        let margin = Self.margin
        let left = x + margin.left
        let right = x + Self.panelWidth - margin.right
        let top = y + margin.top
        let bottom = y + Self.panelHeight - margin.bottom
        // The vertical scale: 0 to the first tick above Belady's best, ticks every 10 or 20 points.
        let best = results.map(\.belady).max() ?? 1
        let tick = best <= 0.5 ? 0.1 : 0.2
        let ticks = max(1, Int((best / tick).rounded(.up)))
        let ceiling = Double(ticks) * tick
        // Sizes are spread evenly (they grow tenfold), inset so that their labels stay in the panel.
        func xPosition(_ index: Int) -> Double {
            let inset = 34.0
            guard results.count > 1 else { return (left + right) / 2 }
            return left + inset + (right - left - 2 * inset) * Double(index) / Double(results.count - 1)
        }
        func yPosition(_ ratio: Double) -> Double {
            bottom - (bottom - top) * ratio / ceiling
        }
        func format(_ value: Double) -> String {
            String(format: "%.1f", value)
        }
        var svg = "<g>\n"
        svg += "<text x=\"\(format((left + right) / 2))\" y=\"\(format(y + 20))\" text-anchor=\"middle\" "
        svg += "font-size=\"13\" font-weight=\"bold\">\(escaped(trace))</text>\n"
        // Horizontal grid lines and the vertical axis's labels.
        for step in 0...ticks {
            let ratio = tick * Double(step)
            let lineY = format(yPosition(ratio))
            svg += "<line x1=\"\(format(left))\" y1=\"\(lineY)\" x2=\"\(format(right))\" y2=\"\(lineY)\" "
            svg += "stroke=\"#e0e0e0\"/>\n"
            svg += "<text x=\"\(format(left - 6))\" y=\"\(format(yPosition(ratio) + 4))\" text-anchor=\"end\">"
            svg += "\(Int((ratio * 100).rounded()))%</text>\n"
        }
        svg += "<line x1=\"\(format(left))\" y1=\"\(format(bottom))\" x2=\"\(format(right))\" y2=\"\(format(bottom))\" "
        svg += "stroke=\"black\"/>\n"
        for (index, result) in results.enumerated() {
            svg += "<text x=\"\(format(xPosition(index)))\" y=\"\(format(bottom + 16))\" text-anchor=\"middle\">"
            svg += "\(escaped(result.size)) (\(result.capacity))</text>\n"
        }
        svg += "<text x=\"\(format((left + right) / 2))\" y=\"\(format(bottom + 34))\" text-anchor=\"middle\" "
        svg += "fill=\"#555\">cache size (entries)</text>\n"
        // One line per policy, then Belady's ceiling, dashed.
        let policyCount = results.first?.hitRatios.count ?? 0
        for policy in 0...policyCount {
            let isBelady = policy == policyCount
            let color = isBelady ? "black" : Self.colors[policy % Self.colors.count]
            let points = results.enumerated().map { index, result in
                let ratio = isBelady ? result.belady : result.hitRatios[policy].hitRatio
                return (x: format(xPosition(index)), y: format(yPosition(ratio)))
            }
            let dash = isBelady ? " stroke-dasharray=\"5,3\"" : ""
            let path = points.map { "\($0.x),\($0.y)" }.joined(separator: " ")
            svg += "<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\"\(dash)/>\n"
            for point in points {
                svg += "<circle cx=\"\(point.x)\" cy=\"\(point.y)\" r=\"2.5\" fill=\"\(color)\"/>\n"
            }
        }
        // Caffeine's measured hit ratio (in %), dotted, where the trace has one at every size.
        let caffeine = results.compactMap { $0.caffeine.map { $0 / 100 } }
        if caffeine.count == results.count, !caffeine.isEmpty {
            let points = caffeine.enumerated().map { index, ratio in
                (x: format(xPosition(index)), y: format(yPosition(ratio)))
            }
            let path = points.map { "\($0.x),\($0.y)" }.joined(separator: " ")
            svg += "<polyline points=\"\(path)\" fill=\"none\" stroke=\"\(Self.caffeineColor)\" stroke-width=\"2\" "
            svg += "stroke-dasharray=\"2,2\"/>\n"
        }
        svg += "</g>\n"
        return svg
    }

    private func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
