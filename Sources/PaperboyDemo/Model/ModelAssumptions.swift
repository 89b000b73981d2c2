import Foundation

/// The fleet model's parameters as a report states them: assumptions, not measurements.
public struct ModelAssumptions: Sendable, Codable, Equatable {
    /// What the parameters are and how to try others.
    public var note: String
    public var parameters: FleetParameters

    public init(parameters: FleetParameters) {
        self.note = Self.note
        self.parameters = parameters
    }

    /// The same words in every report.
    public static let note =
        "The fleet model's parameters are assumptions, not measurements: no push service publishes how often iOS runs background "
        + "pushes or how many Android devices doze at 05:00. Every figure here follows from them. Try others with --fleet FILE.json "
        + "(any FleetParameters fields; docs/fleets/ has a fleet with more cellular and older devices and one with more charging and "
        + "newer devices)."
}
