// A stand-in for Network.framework's path monitor (see UIKit.swift): signatures only.
import Dispatch

public final class NWPath: @unchecked Sendable {
    public enum Status: Sendable { case satisfied, unsatisfied, requiresConnection }
    public var status: Status { .satisfied }
    public func usesInterfaceType(_ type: NWInterface.InterfaceType) -> Bool { false }
}

public enum NWInterface {
    public enum InterfaceType: Sendable { case other, wifi, cellular, wiredEthernet, loopback }
}

public final class NWPathMonitor: @unchecked Sendable {
    public init() {}
    public var pathUpdateHandler: (@Sendable (NWPath) -> Void)?
    public func start(queue: DispatchQueue) {}
    public func cancel() {}
}
