/**
 * The history's CSV as PostgreSQL writes it, on both kinds of database the gateway runs on (a
 * PostgreSQL server and the embedded PGlite), read back with a real parser. The messages are
 * stored through the store code the number entity uses.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, layer } from "@effect/vitest"
import { Accounts } from "@wagate/store/Accounts"
import { Conversations } from "@wagate/store/Conversations"
import * as Database from "@wagate/store/Database"
import { parse } from "csv-parse/sync"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { eventually } from "../../../test/support/Fixtures.js"
import * as HistoryCsv from "../src/HistoryCsv.js"
import * as HistoryFile from "../src/HistoryFile.js"
import { BATCH_SIZE, type HistoryFilter, HistoryRows } from "../src/HistoryRows.js"

const TEXTS = [
  "=1+1",
  "+77011234567",
  "-5",
  "@SUM(A1)",
  "a=b",
  " =1",
  "'quoted",
  "a,b",
  "say \"hi\"",
  "one\ntwo",
  "one\rtwo",
  "one\r\ntwo",
  "plain",
  "ünïcödé 👋",
  ""
]

const services = (database: Layer.Layer<Database.Database, unknown>) =>
  Layer.mergeAll(Accounts.Default, Conversations.Default, HistoryRows.Default).pipe(Layer.provideMerge(database))

const decoder = new TextDecoder()

const csvOf = (filter: HistoryFilter, max?: number) =>
  Effect.flatMap(HistoryRows, (history) =>
    Stream.runFold(HistoryFile.csv(history.csv(filter, max)), "", (text, bytes) => text + decoder.decode(bytes)))

const suite = (kind: "postgres" | "embedded", database: Layer.Layer<Database.Database, unknown>) =>
  layer(services(database), { excludeTestServices: true, timeout: 120_000 })(`the history's CSV (${kind})`, (it) => {
    const world = Effect.gen(function*() {
      const accounts = yield* Accounts
      const conversations = yield* Conversations
      const account = yield* accounts.create({ email: `csv-${kind}-${Math.random()}@example.kz`, company: "CSV" })
      const number = yield* accounts.addNumber(account.id, `7701${String(Math.floor(Math.random() * 1e7)).padStart(7, "0")}`)
      const store = (text: string, i: number, peer = "77010000002") =>
        Effect.map(
          conversations.recordIncoming({
            accountId: account.id,
            numberId: number.id,
            waMessageId: `WA${kind}${i}-${Math.random()}`,
            fromMe: false,
            chatId: `${peer}@c.us`,
            peer,
            peerLid: null,
            name: null,
            isGroup: false,
            groupSubject: null,
            author: null,
            type: "text",
            text,
            at: new Date(Date.UTC(2026, 10, 21, 10, 0, 0, i)),
            media: null,
            mediaPending: false,
            mediaSkipped: false,
            mediaSkipReason: null
          }),
          Option.getOrThrow
        )
      return { account, number, store }
    })

    it.effect("header, columns in order, quoting, formulas behind an apostrophe; reads back unchanged", () =>
      Effect.gen(function*() {
        const { account, number, store } = yield* world
        const ids = yield* Effect.forEach(TEXTS, (text, i) => store(text, i))
        const csv = yield* csvOf({ accountId: account.id, numberId: null })
        assert.isTrue(csv.startsWith(HistoryCsv.header))
        const records: Array<Array<string>> = parse(csv)
        assert.deepStrictEqual(records[0], [...HistoryCsv.COLUMNS])
        assert.deepStrictEqual(records.slice(1).map((r) => Number(r[0])), ids)
        assert.deepStrictEqual(records.slice(1).map((r) => r[9]), [
          "'=1+1",
          "'+77011234567",
          "'-5",
          "'@SUM(A1)",
          ...TEXTS.slice(4)
        ])
        // Every field with a comma, a quote or a line break is quoted, its quotes doubled.
        for (const quoted of ["\"a,b\"", "\"say \"\"hi\"\"\"", "\"one\ntwo\"", "\"one\rtwo\"", "\"one\r\ntwo\""]) {
          assert.include(csv, quoted)
        }
        assert.isTrue(csv.endsWith("\n"))
        // Nulls are empty fields, times ISO 8601 UTC with milliseconds.
        assert.deepStrictEqual(records[1], [
          String(ids[0]), "2026-11-21T10:00:00.000Z", String(number.id), number.phone, "in", "network",
          "77010000002", "77010000002@c.us", "text", "'=1+1", "received", records[1][11], ""
        ])
        assert.match(records[1][11], /^WA/)
      }))

    it.effect("batch after batch, oldest first, up to the cap; a filter is applied to every batch", () =>
      Effect.gen(function*() {
        const { account, number, store } = yield* world
        const total = BATCH_SIZE + 7
        // Two chats interleaved: the chat filter must hold across the batch boundary.
        const ids = yield* Effect.forEach(
          Array.from({ length: total }, (_, i) => i),
          (i) => store(`m${i}`, i, i % 2 === 0 ? "77010000002" : "77010000003"),
          { concurrency: 8 }
        )
        const idsOf = (csv: string) => (parse(csv) as Array<Array<string>>).slice(1).map((r) => Number(r[0]))
        const sorted = [...ids].sort((a, b) => a - b)
        assert.deepStrictEqual(idsOf(yield* csvOf({ accountId: account.id, numberId: number.id })), sorted)
        assert.deepStrictEqual(idsOf(yield* csvOf({ accountId: account.id, numberId: null }, BATCH_SIZE + 2)), sorted.slice(0, BATCH_SIZE + 2))
        const chat = yield* csvOf({ accountId: account.id, numberId: null, chatId: "77010000003@c.us" })
        assert.deepStrictEqual(idsOf(chat), ids.filter((_, i) => i % 2 === 1).sort((a, b) => a - b))
        // A chat id is a value, never SQL.
        const odd = yield* csvOf({ accountId: account.id, numberId: null, chatId: "x' OR '1'='1" })
        assert.strictEqual(odd, HistoryCsv.header)
      }))

    if (kind === "postgres") {
      it.effect("stopped while PostgreSQL copies a batch, the COPY is cancelled and its connection reused", () =>
        Effect.gen(function*() {
          const { account, store } = yield* world
          yield* store("hello", 0)
          const sql = yield* SqlClient.SqlClient
          // Another session holds the numbers table, which only the COPY reads (a batch's last id
          // is read from messages alone): the COPY waits on the lock, where it can be seen.
          const locked = yield* Deferred.make<void>()
          const release = yield* Deferred.make<void>()
          const holder = yield* sql.withTransaction(Effect.gen(function*() {
            yield* sql`LOCK TABLE numbers IN ACCESS EXCLUSIVE MODE`
            yield* Deferred.succeed(locked, undefined)
            yield* Deferred.await(release)
          })).pipe(Effect.fork)
          yield* Deferred.await(locked)
          const copies = sql<{ pid: number }>`
            SELECT pid FROM pg_stat_activity
            WHERE datname = current_database() AND state = 'active' AND query LIKE 'COPY (%'`
          const reading = yield* Effect.fork(csvOf({ accountId: account.id, numberId: null }))
          yield* eventually(copies, (rows) => rows.length === 1, 20_000)
          yield* Fiber.interrupt(reading)
          // Gone while the lock is still held: cancelled, not left to finish.
          assert.deepStrictEqual(yield* copies, [])
          yield* Deferred.succeed(release, undefined)
          yield* Fiber.join(holder)
          // The pool's connections all work after it.
          const again = yield* Effect.all(Array.from({ length: 6 }, () => csvOf({ accountId: account.id, numberId: null })), {
            concurrency: "unbounded"
          })
          for (const csv of again) assert.strictEqual((parse(csv) as Array<Array<string>>).length, 2)
        }))
    }
  })

suite("postgres", Database.layerTest)
suite("embedded", Database.layerEmbeddedTest)
