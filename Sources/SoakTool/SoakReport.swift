import Foundation

/// Counts of outcomes while the loads run.
struct SoakTally: Sendable {
    var network = 0
    var memory = 0
    var disk = 0
    var cancelled = 0
    var expectedFailures = 0
    var unexpected = 0
    var hung = 0
    /// Final completions beyond the first for one load (must stay 0).
    var extraCompletions = 0
    /// The first few unexpected or hung outcomes, to show.
    var examples: [String] = []
    var peakDescriptors = 0
    var peakDiskBytes = 0

    var completed: Int { network + memory + disk + cancelled + expectedFailures + unexpected + hung }

    mutating func record(_ outcome: SoakOutcome) {
        switch outcome {
        case .network: network += 1
        case .memory: memory += 1
        case .disk: disk += 1
        case .cancelled: cancelled += 1
        case .expectedFailure: expectedFailures += 1
        case .unexpected(let message):
            unexpected += 1
            if examples.count < 10 { examples.append(message) }
        case .hung(let message):
            hung += 1
            if examples.count < 10 { examples.append(message) }
        }
    }
}

/// The soak run's figures and verdict.
struct SoakReport: Sendable {
    let settings: SoakSettings
    var tally = SoakTally()
    var seconds = 0.0
    var originRequests = 0
    var memoryCost = 0
    var diskBytesAfterTrim = 0
    var peakRSS = 0
    var rssAtEnd = 0
    var descriptorsAtStart = 0
    var descriptorsAtEnd = 0
    /// Descriptors open at the end that were not at the start, by target kind.
    var descriptorsAdded: [String: Int] = [:]
    var socketsWhileIdle = 0
    var leakedSockets = 0
    var openCacheFiles = 0
    /// The cache files still open at the end (named in ``problems``).
    var openCacheFilePaths: [String] = []
    var liveDownloadOperations = 0
    var liveLoadOperations = 0
    var liveHTTPTasks = 0

    /// The process's state at the end against `before`: descriptors added by kind
    /// (`anon_inode:[eventpoll]`, a path…), sockets leaked, cache files left open, peak and final RSS.
    mutating func record(descriptorsBefore before: [String], after: [String], cacheFolder: URL) {
        descriptorsAtEnd = after.count
        var remaining = before
        for target in after {
            if let index = remaining.firstIndex(of: target) {
                remaining.remove(at: index)
            } else {
                descriptorsAdded[target.replacing(/\[\d+\]$/, with: ""), default: 0] += 1
            }
        }
        let sockets = { (list: [String]) in list.filter { $0.hasPrefix("socket:") }.count }
        leakedSockets = sockets(after) - sockets(before)
        openCacheFilePaths = after.filter { $0.hasPrefix(cacheFolder.path) }
        openCacheFiles = openCacheFilePaths.count
        peakRSS = ProcessStats.statusBytes("VmHWM")
        rssAtEnd = ProcessStats.statusBytes("VmRSS")
    }

    /// Why the run failed; empty when it passed.
    var problems: [String] {
        var problems: [String] = []
        if tally.completed != settings.loads {
            problems.append("\(tally.completed) of \(settings.loads) loads completed")
        }
        if tally.unexpected > 0 { problems.append("\(tally.unexpected) unexpected outcomes") }
        if tally.hung > 0 { problems.append("\(tally.hung) loads without a completion") }
        if tally.extraCompletions > 0 { problems.append("\(tally.extraCompletions) extra final completions") }
        if liveDownloadOperations + liveLoadOperations + liveHTTPTasks > 0 {
            problems.append(
                "leaked \(liveDownloadOperations) download operations, \(liveLoadOperations) load operations, "
                    + "\(liveHTTPTasks) HTTP tasks"
            )
        }
        if leakedSockets > 0 { problems.append("\(leakedSockets) sockets open after shutdown") }
        if openCacheFiles > 0 {
            problems.append(
                "\(openCacheFiles) cache files open at the end: \(openCacheFilePaths.joined(separator: ", "))"
            )
        }
        if memoryCost > settings.memoryLimit { problems.append("memory cache at \(memoryCost) bytes, over its limit") }
        if diskBytesAfterTrim > settings.diskLimit {
            problems.append("disk cache at \(diskBytesAfterTrim) bytes after trim")
        }
        return problems
    }

    var passed: Bool { problems.isEmpty }

    private var fields: [(String, Any)] {
        [
            ("passed", passed), ("loads", settings.loads), ("seconds", (seconds * 100).rounded() / 100),
            ("loadsPerSecond", Int((Double(settings.loads) / max(seconds, 1e-9)).rounded())),
            ("network", tally.network), ("memoryHits", tally.memory), ("diskHits", tally.disk),
            ("cancelled", tally.cancelled), ("expectedFailures", tally.expectedFailures),
            ("unexpected", tally.unexpected), ("hung", tally.hung), ("extraCompletions", tally.extraCompletions),
            ("originRequests", originRequests), ("peakRSSMiB", Self.mebibytes(peakRSS)),
            ("rssAtEndMiB", Self.mebibytes(rssAtEnd)), ("memoryLimitMiB", Self.mebibytes(settings.memoryLimit)),
            ("memoryCostAtEnd", memoryCost), ("diskLimitMiB", Self.mebibytes(settings.diskLimit)),
            ("peakDiskMiB", Self.mebibytes(tally.peakDiskBytes)),
            ("diskAfterTrimMiB", Self.mebibytes(diskBytesAfterTrim)),
            ("fdsAtStart", descriptorsAtStart), ("fdsPeak", tally.peakDescriptors), ("fdsAtEnd", descriptorsAtEnd),
            ("fdsAdded", descriptorsAdded.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }),
            ("socketsWhileIdle", socketsWhileIdle), ("leakedSockets", leakedSockets),
            ("openCacheFiles", openCacheFiles), ("liveDownloadOperations", liveDownloadOperations),
            ("liveLoadOperations", liveLoadOperations), ("liveHTTPTasks", liveHTTPTasks),
            ("problems", problems), ("examples", tally.examples),
        ]
    }

    /// One JSON object, keys in a fixed order.
    var json: String {
        let parts = fields.map { key, value -> String in
            let encoded =
                (try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed]))
                .map { String(decoding: $0, as: UTF8.self) } ?? "null"
            return "\"\(key)\":\(encoded)"
        }
        return "{" + parts.joined(separator: ",") + "}"
    }

    /// One `key: value` line each.
    var text: String {
        fields.map { key, value in
            let shown = (value as? [String]).map { $0.isEmpty ? "none" : $0.joined(separator: "; ") } ?? "\(value)"
            return "\(key): \(shown)"
        }.joined(separator: "\n")
    }

    private static func mebibytes(_ bytes: Int) -> Double { (Double(bytes) / 1_048_576 * 10).rounded() / 10 }
}
