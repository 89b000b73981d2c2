import PaperboyClient
import Testing

/// The extension's alert, once, with true words: the guide's old snippet could call the content handler twice (from
/// its fetch's task and from serviceExtensionTimeWillExpire) and change the words of an alert already delivered.
@Suite("AlertDelivery: the extension's alert, once")
struct AlertDeliveryTests {
    @Test("the fetch's end delivers ready words only when the edition is there; iOS's time running out first delivers them as sent")
    func once() {
        var ready = AlertDelivery()
        #expect(ready.fetched(ready: true) == .ready)
        #expect(ready.timeWillExpire() == nil, "delivered already")
        var failed = AlertDelivery()
        #expect(failed.fetched(ready: false) == .asSent)
        var late = AlertDelivery()
        #expect(late.timeWillExpire() == .asSent)
        #expect(late.fetched(ready: true) == nil, "too late: the alert went as sent, and stays so")
        #expect(late.delivered == .asSent)
    }
}
