public import CustodyPolicy
import CustodyStore
import Foundation
import Logging

/// What changes between two kept revisions: each policy document's settings that differ
/// (top-level Graph properties, compared as JSON values), documents added or removed, and
/// every decision that flips for the tenant's accounts (`DecisionDiff`).
public struct BundleDiff: Sendable, Encodable {
    /// One property of one document that differs.
    public struct SettingChange: Sendable, Encodable, Hashable {
        /// The document's file name.
        public var file: String
        /// The document's `id` or `displayName`, when it has one: what matches the two sides.
        @Nullable package var policy: String?
        /// The policy's `displayName` (the newer side's), what people call it; null without one.
        @Nullable package var policyName: String?
        public var setting: String
        /// The values as compact JSON; null when absent on that side.
        @Nullable package var before: String?
        @Nullable package var after: String?
    }

    public var from: String
    public var to: String
    /// Files only the newer revision has, and files only the older one has.
    public var added: [String]
    public var removed: [String]
    public var settings: [SettingChange]
    public var decisions: [DecisionChangeAnswer]

    init(old: StoredBundle, new: StoredBundle, context: EvaluationContext, logger: Logger) throws(CustodyError) {
        try self.init(
            from: Side(revision: old.record.contentHash, files: old.files.map { ($0.name, $0.bytes) }, isKept: true),
            to: Side(revision: new.record.contentHash, files: new.files.map { ($0.name, $0.bytes) }, isKept: true),
            context: context, logger: logger)
    }

    /// One side of a comparison: a revision and its files, kept in the state or offered now.
    struct Side {
        var revision: String
        var files: [(name: String, bytes: [UInt8])]
        /// Kept (it loaded once, so one that no longer loads is the state's problem) or a
        /// candidate (one that does not load is the caller's).
        var isKept: Bool
    }

    init(from old: Side, to new: Side, context: EvaluationContext, logger: Logger) throws(CustodyError) {
        from = old.revision
        to = new.revision
        let before = Dictionary(old.files.map { ($0.name, $0.bytes) }, uniquingKeysWith: { first, _ in first })
        let after = Dictionary(new.files.map { ($0.name, $0.bytes) }, uniquingKeysWith: { first, _ in first })
        added = after.keys.filter { before[$0] == nil }.sorted()
        removed = before.keys.filter { after[$0] == nil }.sorted()
        var settings: [SettingChange] = []
        for name in Set(before.keys).union(after.keys).sorted() where before[name] != after[name] {
            settings += Self.settingChanges(file: name, before: before[name], after: after[name])
        }
        self.settings = settings
        func snapshot(_ side: Side) throws(CustodyError) -> PolicySnapshot {
            guard
                let files = BundleFiles(
                    stored: side.files.map { BundleFiles.Entry(name: $0.name, bytes: $0.bytes) },
                    contentHash: side.revision)
            else { throw CustodyEngine.damagedRevision(side.revision) }
            do {
                return PolicySnapshot(bundle: try files.load(allowingEmpty: true), context: context, logger: logger)
            } catch {
                throw CustodyError(
                    .bundle,
                    side.isKept
                        ? "the kept revision \(side.revision) no longer loads"
                        : "the candidate bundle does not load, so there is nothing to compare: \(error.errors.count) error(s)",
                    diagnostics: error.diagnostics)
            }
        }
        decisions = DecisionDiff(old: try snapshot(old), new: try snapshot(new)).changes.map(
            DecisionChangeAnswer.init)
    }

    /// The top-level properties of each policy of one document that differ, compared as JSON
    /// values. A document is one policy (an object), a list of them (an array, or Graph's
    /// `{"value": [...]}`); policies are matched by `id`, else `displayName`, else place.
    static func settingChanges(file: String, before: [UInt8]?, after: [UInt8]?) -> [SettingChange] {
        func policies(_ bytes: [UInt8]?) -> [(key: String, name: String?, displayName: String?, value: [String: Any])] {
            guard let bytes,
                let root = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
            else { return [] }
            let list: [Any]
            if let object = root as? [String: Any] {
                list =
                    (object["value"] as? [Any]).map {
                        object.count == 1 || object["@odata.context"] != nil ? $0 : [object]
                    }
                    ?? [object]
            } else {
                list = root as? [Any] ?? []
            }
            return list.enumerated().compactMap { index, element in
                guard let object = element as? [String: Any] else { return nil }
                let name = (object["id"] ?? object["displayName"]) as? String
                return (name ?? "#\(index)", name, object["displayName"] as? String, object)
            }
        }
        func text(_ value: Any?) -> String? {
            guard let value else { return nil }
            let data = try? JSONSerialization.data(
                withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes])
            return data.map { String(decoding: $0, as: UTF8.self) }
        }
        let old = Dictionary(policies(before).map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        let new = Dictionary(policies(after).map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        var changes: [SettingChange] = []
        for key in Set(old.keys).union(new.keys).sorted() {
            let was = old[key]?.value ?? [:]
            let now = new[key]?.value ?? [:]
            let name = new[key]?.name ?? old[key]?.name
            let displayName = new[key]?.displayName ?? old[key]?.displayName
            for setting in Set(was.keys).union(now.keys).sorted() {
                let before = text(was[setting])
                let after = text(now[setting])
                guard before != after else { continue }
                changes.append(
                    SettingChange(
                        file: file, policy: name, policyName: displayName, setting: setting, before: before,
                        after: after))
            }
        }
        return changes
    }
}
