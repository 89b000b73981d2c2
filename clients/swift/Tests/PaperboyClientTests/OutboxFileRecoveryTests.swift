import Foundation
import PaperboyClient
import Testing

/// An outbox file that cannot be read (cut short, or written by a version that no longer reads) is set aside as
/// `<name>.unreadable`, the outbox starts empty and the hook is told, rather than every receipt failing from then on.
@Suite("ReceiptOutboxFile: an unreadable file")
struct OutboxFileRecoveryTests {
    @Test("set aside, said through the hook, and the next receipt is kept and sent")
    func unreadableSetAside() async throws {
        let newsroom = try Newsroom()
        let url = newsroom.outbox.url
        try Data(#"{"outbox": {"entries": [{"receipt": "#.utf8).write(to: url)
        let told = Guarded<[URL]>([])
        let file = ReceiptOutboxFile(url: url, onUnreadable: { setAside, _ in told { $0.append(setAside) } })
        let contents = try file.read()
        #expect(contents == ReceiptOutboxFile.Contents())
        let aside = url.appendingPathExtension("unreadable")
        #expect(told { $0 } == [aside])
        #expect(String(decoding: try Data(contentsOf: aside), as: UTF8.self).hasPrefix(#"{"outbox""#))
        // New receipts are kept from now on (and sent once a token is registered again).
        let receipt = ReceiptReport(editionID: Newsroom.editionID, result: .newData, bytes: 64, wave: 1, secondsFromPush: 2)
        _ = try file.update { $0.outbox.add(receipt, at: Newsroom.t0) }
        #expect(try file.read().outbox.entries.map(\.receipt) == [receipt])
    }

    @Test("the courier is not stuck behind an unreadable file: a receipt posted after it is kept")
    func courierGoesOn() async throws {
        let newsroom = try Newsroom()
        try Data("not json at all".utf8).write(to: newsroom.outbox.url)
        let receipt = ReceiptReport(editionID: Newsroom.editionID, result: .newData, bytes: 64, wave: 1, secondsFromPush: 2)
        _ = try await newsroom.courier.post(receipt)
        #expect(try await newsroom.courier.pending == [receipt], "no token any more: it waits for the next registration")
        _ = try await newsroom.courier.registered(Newsroom.token)
        #expect(newsroom.server.receipts == [receipt])
    }
}
