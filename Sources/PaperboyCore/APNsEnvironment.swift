/// The APNs environment a device token belongs to. A sandbox token sent to production answers
/// `BadDeviceToken`, so every device row and every send names one.
public enum APNsEnvironment: String, Codable, CaseIterable, Sendable {
    case production
    case sandbox
}

/// Which image tier of an edition a device downloads.
public enum ImageTier: String, Codable, CaseIterable, Sendable {
    case small
    case medium
    case large
}
