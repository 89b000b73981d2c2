import Foundation
import Logging
import PaperboyCore
import PaperboyTesting
import PostgresNIO
import Testing

@testable import PaperboyStore

/// Receipts that arrive together share a statement (``ReceiptBatcher``, ``RecordReceipts``); each is answered as it
/// would have been alone.
@Suite("Receipts recorded together")
struct ReceiptBatcherTests {
    static func token(_ i: Int) -> DeviceToken { DeviceToken(bytes: [0xcd, UInt8(i / 256), UInt8(i % 256)] + Array(repeating: 0x11, count: 29)) }

    /// An app with `devices` registered devices and an edition.
    static func prepare(_ db: TestDatabase, devices: Int) async throws -> (appID: Int, editionID: UUID) {
        let (appID, editionID) = try await ReceiptContextTests.prepare(db)
        for i in 0..<devices {
            _ = try await DeviceRepository(client: db.client).register(
                appID: appID,
                token: Self.token(i),
                ReceiptContextTests.registration,
                logger: db.logger
            )
        }
        return (appID, editionID)
    }

    enum Answer: Equatable {
        case recorded(ReceiptResult, created: Bool, wave: Int?, network: WakeContext.Network?, charging: Bool?)
        case refused(String?)
    }

    static func answer(_ work: () async throws -> (receipt: Receipt, created: Bool)) async -> Answer {
        do {
            let (receipt, created) = try await work()
            return .recorded(
                receipt.result,
                created: created,
                wave: receipt.context.wave,
                network: receipt.context.network,
                charging: receipt.context.charging
            )
        } catch let error as StoreError {
            return .refused(error.field)
        } catch {
            return .refused("\(type(of: error))")
        }
    }

    @Test(
        "sixty receipts at once: fewer statements than receipts, and each answered as alone (created, kept, upgraded, unknown device, unknown edition), its context stored"
    )
    func together() async throws {
        try await TestDatabase.with { db in
            let (appID, editionID) = try await Self.prepare(db, devices: 40)
            let receipts = ReceiptRepository(client: db.client)
            // Device 39 reported a failure before: a success now upgrades it (not created).
            _ = try await receipts.record(
                appID: appID,
                token: Self.token(39),
                ReceiptReport(editionID: editionID, result: .failed),
                logger: db.logger
            )
            let before = await (receipts.batcher.statements, receipts.batcher.recorded)

            enum Kind: Sendable {
                case first(Int)
                case again
                case unknownDevice(Int)
                case unknownEdition(Int)
                case upgrade
            }
            var kinds: [Kind] = (0..<39).map { .first($0) }
            kinds += Array(repeating: .again, count: 10)
            kinds += (0..<5).map { .unknownDevice($0) } + (0..<5).map { .unknownEdition($0) } + [.upgrade]
            let context = WakeContext(network: .cellular, charging: false, wave: 1, secondsFromPush: 12)
            let answers = await withTaskGroup(of: (Int, Answer).self) { group in
                for (index, kind) in kinds.enumerated() {
                    group.addTask {
                        let answer = await Self.answer {
                            switch kind {
                            case .first(let i):
                                try await receipts.record(
                                    appID: appID,
                                    token: Self.token(i),
                                    ReceiptReport(editionID: editionID, result: .newData, bytes: 100, context: context),
                                    logger: db.logger
                                )
                            case .again:
                                try await receipts.record(
                                    appID: appID,
                                    token: Self.token(38),
                                    ReceiptReport(editionID: editionID, result: .noData),
                                    logger: db.logger
                                )
                            case .unknownDevice(let i):
                                try await receipts.record(
                                    appID: appID,
                                    token: Self.token(1000 + i),
                                    ReceiptReport(editionID: editionID, result: .newData),
                                    logger: db.logger
                                )
                            case .unknownEdition(let i):
                                try await receipts.record(
                                    appID: appID,
                                    token: Self.token(i),
                                    ReceiptReport(editionID: UUID(), result: .newData),
                                    logger: db.logger
                                )
                            case .upgrade:
                                try await receipts.record(
                                    appID: appID,
                                    token: Self.token(39),
                                    ReceiptReport(editionID: editionID, result: .newData),
                                    logger: db.logger
                                )
                            }
                        }
                        return (index, answer)
                    }
                }
                var answers: [Int: Answer] = [:]
                for await (index, answer) in group { answers[index] = answer }
                return answers
            }
            let (statements, recorded) = await (receipts.batcher.statements - before.0, receipts.batcher.recorded - before.1)
            #expect(recorded == kinds.count)
            #expect(statements < recorded, "\(statements) statements for \(recorded) receipts: none went together")

            for (index, kind) in kinds.enumerated() {
                let answer = answers[index]
                switch kind {
                case .first(let i) where i == 38:
                    // Device 38 also reported noData ten times at once: whichever came first is stored, once (below).
                    break
                case .first:
                    #expect(
                        answer == .recorded(.newData, created: true, wave: 1, network: .cellular, charging: false),
                        "\(index): \(String(describing: answer))"
                    )
                case .again:
                    guard case .recorded(_, _, _, _, _) = answer else {
                        Issue.record("a repeated receipt was refused: \(String(describing: answer))")
                        continue
                    }
                case .unknownDevice:
                    #expect(answer == .refused("token"))
                case .unknownEdition:
                    #expect(answer == .refused("editionId"))
                case .upgrade:
                    #expect(answer == .recorded(.newData, created: false, wave: nil, network: nil, charging: nil), "\(String(describing: answer))")
                }
            }
            // Device 38: eleven reports at once, one created, the rest answered with what is stored.
            let device38 = kinds.indices.filter {
                switch kinds[$0] {
                case .again: true
                case .first(let i): i == 38
                default: false
                }
            }
            let created = device38.filter {
                if case .recorded(_, let created, _, _, _) = answers[$0] { created } else { false }
            }
            #expect(created.count == 1, "one of device 38's eleven receipts is created: \(device38.map { answers[$0] })")
            let stored = Set(
                device38.compactMap { index -> ReceiptResult? in
                    if case .recorded(let result, _, _, _, _) = answers[index] { result } else { nil }
                }
            )
            #expect(stored.count == 1, "all of device 38's answers name the one stored: \(stored)")

            let rows = try await db.client.query(
                "SELECT count(*)::int, count(*) FILTER (WHERE result = 'failed')::int FROM receipts",
                logger: db.logger
            )
            for try await (count, failed) in rows.decode((Int, Int).self) {
                #expect(count == 40)
                #expect(failed == 0)
            }
        }
    }

    @Test("a batch the database refuses is recorded one receipt at a time: the refused one fails alone")
    func oneRefused() async throws {
        try await TestDatabase.with { db in
            let (appID, editionID) = try await Self.prepare(db, devices: 30)
            // A rule only this test has: 777 bytes are refused.
            try await db.client.query("ALTER TABLE receipts ADD CONSTRAINT refuse_777 CHECK (bytes <> 777)", logger: db.logger)
            let receipts = ReceiptRepository(client: db.client)
            let answers = await withTaskGroup(of: (Int, Answer).self) { group in
                for i in 0..<30 {
                    group.addTask {
                        let report = ReceiptReport(editionID: editionID, result: .newData, bytes: i == 17 ? 777 : 1)
                        return (i, await Self.answer { try await receipts.record(appID: appID, token: Self.token(i), report, logger: db.logger) })
                    }
                }
                var answers: [Int: Answer] = [:]
                for await (i, answer) in group { answers[i] = answer }
                return answers
            }
            #expect(answers[17] == .refused("PSQLError"))
            for i in 0..<30 where i != 17 {
                #expect(answers[i] == .recorded(.newData, created: true, wave: nil, network: nil, charging: nil), "\(i)")
            }
            let rows = try await db.client.query("SELECT count(*)::int FROM receipts", logger: db.logger)
            for try await count in rows.decode(Int.self) { #expect(count == 29) }
        }
    }
}
