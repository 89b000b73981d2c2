import Foundation
import PaperboyDispatch

extension ReceiptTallyPolicy {
    /// The policy for workers configured as `configuration`; for the default configuration, 6 minutes.
    ///
    /// A batch held at the broadcast's end learns of it within a third of a lease (its renewal) and has its written
    /// requests answered within the push client's request timeout (10 s): within a lease, ``Dispatcher/Configuration/leaseDuration``.
    /// Its outcomes are then recorded, the record retried for ``Dispatcher/Configuration/recordPatience`` while the
    /// database fails, its last attempt given up after ``Dispatcher/Configuration/databasePatience`` (at least a
    /// lease). A batch held longer than that was given up by its worker and is left to its lease.
    public init(dispatcher configuration: Dispatcher.Configuration = Dispatcher.Configuration(owner: "")) {
        let lastAttempt = max(configuration.databasePatience, configuration.leaseDuration)
        self.init(settle: (configuration.leaseDuration + configuration.recordPatience + lastAttempt).seconds)
    }
}
