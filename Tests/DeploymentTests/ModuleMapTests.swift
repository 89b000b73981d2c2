import Foundation
import PaperboyTesting
import Testing

/// docs/architecture.md tells a newcomer which module may use which; it must say what `Package.swift` does.
@Suite("The module map in docs/architecture.md")
struct ModuleMapTests {
    static let root = PaperboyBinary.repositoryRoot

    @Test("lists every library and executable target of Package.swift with exactly its dependencies on our modules")
    func mapMatchesPackage() throws {
        let package = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let doc = try String(contentsOf: Self.root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let declared = Self.targets(inPackage: package)
        let mapped = Self.map(inDoc: doc)
        #expect(!declared.isEmpty && !mapped.isEmpty)
        #expect(Set(mapped.keys) == Set(declared.keys), "modules in the map but not the package, or the other way round")
        for (module, dependencies) in declared {
            #expect(
                mapped[module] == dependencies,
                "\(module): the map says \(mapped[module]?.sorted() ?? []), Package.swift \(dependencies.sorted())"
            )
        }
    }

    /// Library and executable targets (not tests) with the names of our own targets they depend on.
    static func targets(inPackage package: String) -> [String: Set<String>] {
        var targets: [String: Set<String>] = [:]
        let blocks = package.components(separatedBy: "\n        .")
        for block in blocks where block.hasPrefix("target(") || block.hasPrefix("executableTarget(") {
            guard let name = firstQuoted(after: "name: \"", in: block) else { continue }
            var dependencies = Set<String>()
            if let list = block.range(of: "dependencies: [") {
                // Up to the list's closing bracket: our targets are bare string literals, products are `.product(…)`.
                var depth = 1
                var index = list.upperBound
                var text = ""
                while index < block.endIndex, depth > 0 {
                    let character = block[index]
                    if character == "[" { depth += 1 }
                    if character == "]" { depth -= 1 }
                    if depth > 0 { text.append(character) }
                    index = block.index(after: index)
                }
                for line in text.components(separatedBy: CharacterSet(charactersIn: ",\n")) {
                    let item = line.trimmingCharacters(in: .whitespaces)
                    if item.hasPrefix("\""), item.hasSuffix("\""), item.count > 2 { dependencies.insert(String(item.dropFirst().dropLast())) }
                }
            }
            targets[name] = dependencies
        }
        return targets
    }

    /// The map's lines, in the code block after the modules heading: `Module ──► A, B` or
    /// `Module ──► (none of ours)`.
    static func map(inDoc doc: String) -> [String: Set<String>] {
        var map: [String: Set<String>] = [:]
        guard let heading = doc.range(of: "## Modules") else { return map }
        let section = doc[heading.upperBound...].components(separatedBy: "```")
        guard section.count > 1 else { return map }
        for line in section[1].components(separatedBy: "\n") {
            let parts = line.components(separatedBy: "──►")
            guard parts.count == 2 else { continue }
            let module = parts[0].trimmingCharacters(in: .whitespaces)
            let rest = parts[1].trimmingCharacters(in: .whitespaces)
            map[module] = rest.hasPrefix("(") ? [] : Set(rest.components(separatedBy: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        }
        return map
    }

    private static func firstQuoted(after marker: String, in text: String) -> String? {
        guard let start = text.range(of: marker) else { return nil }
        guard let end = text[start.upperBound...].firstIndex(of: "\"") else { return nil }
        return String(text[start.upperBound..<end])
    }
}
