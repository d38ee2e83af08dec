/**
 * GET /export through HTTP: the CSV read back with a real parser (columns, order, quoting,
 * formula escaping, the 100 000 cap), JSON, filters and scope, the download name, and the
 * per-account limit of 10 in 10 minutes driven by the clock.
 */
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, layer } from "@effect/vitest"
import { parse } from "csv-parse/sync"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Http from "node:http"
import { eventually, provision, seedMessages } from "../support/Fixtures.js"
import * as ManualClock from "../support/ManualClock.js"
import { TestGateway } from "../support/TestGateway.js"

const clock = ManualClock.make(Date.parse("2026-11-23T10:00:00Z"))
const at = (s: string) => new Date(s)

const COLUMNS = [
  "id", "created_at", "number_id", "number_phone", "direction", "source", "peer_phone", "chat_id", "type", "text",
  "status", "wa_message_id", "error"
]

const download = (key: string, query: string) =>
  Effect.gen(function*() {
    const gateway = yield* TestGateway
    const response = yield* gateway.http.execute(
      HttpClientRequest.get(`/api/v1/export${query}`).pipe(HttpClientRequest.bearerToken(key))
    )
    const body = yield* response.text
    return { status: response.status, headers: response.headers, body }
  }).pipe(Effect.scoped)

const world = Effect.gen(function*() {
  const gateway = yield* TestGateway
  const acme = yield* provision(gateway.ops, { numbers: 2, credit: 19_800 })
  const [n1, n2] = acme.numbers
  const ids = yield* seedMessages(gateway.database, acme.accountId, [
    { numberId: n1.id, peer: "77770000001", direction: "in", text: "plain", createdAt: at("2026-11-01T08:00:00Z") },
    { numberId: n1.id, peer: "77770000001", direction: "out", text: "a, b and \"c\"", createdAt: at("2026-11-02T08:00:00Z") },
    { numberId: n1.id, peer: "77770000002", direction: "in", text: "line one\nline two\r\nthree", createdAt: at("2026-11-03T08:00:00Z") },
    { numberId: n2.id, peer: "77770000003", direction: "out", text: "=HYPERLINK(\"x\")", createdAt: at("2026-11-04T08:00:00Z") },
    { numberId: n2.id, peer: "77770000003", direction: "in", text: "+7 701", createdAt: at("2026-11-05T08:00:00Z") },
    { numberId: n2.id, peer: "77770000003", direction: "in", text: "-1", createdAt: at("2026-11-06T08:00:00Z") },
    { numberId: n2.id, peer: "77770000003", direction: "in", text: "@sum", createdAt: at("2026-11-07T08:00:00Z") },
    { numberId: n2.id, peer: "77770000003", direction: "in", text: "Привет 👋", createdAt: at("2026-11-08T08:00:00Z") }
  ])
  return { gateway, acme, ids, n1, n2 }
})

layer(TestGateway.layer({ domainClock: clock.clock }), { excludeTestServices: true })("GET /export", (it) => {
  it.effect("CSV: the spec's columns in order, oldest first, RFC 4180 quoting, formulas escaped", () =>
    Effect.gen(function*() {
      const { acme, ids, n1, n2 } = yield* world
      const { status, headers, body } = yield* download(acme.accountKey, "")
      assert.strictEqual(status, 200)
      assert.strictEqual(headers["content-type"], "text/csv; charset=utf-8")
      assert.match(headers["content-disposition"], /^attachment; filename="wagate-history-\d{8}-\d{6}\.csv"$/)
      // Quoted fields with line breaks kept as they are; a line feed ends each record.
      assert.include(body, "\"line one\nline two\r\nthree\"")
      assert.include(body, "\"a, b and \"\"c\"\"\"")
      assert.isTrue(body.startsWith(COLUMNS.join(",") + "\n"))
      assert.isTrue(body.endsWith("\n"))
      const records: Array<Array<string>> = parse(body, { relax_column_count: false })
      assert.deepStrictEqual(records[0], COLUMNS)
      const rows = records.slice(1)
      assert.deepStrictEqual(rows.map((r) => Number(r[0])), ids)
      assert.deepStrictEqual(rows.map((r) => r[9]), [
        "plain",
        "a, b and \"c\"",
        "line one\nline two\r\nthree",
        "'=HYPERLINK(\"x\")",
        "'+7 701",
        "'-1",
        "'@sum",
        "Привет 👋"
      ])
      const first = rows[0]
      assert.strictEqual(first[1], "2026-11-01T08:00:00.000Z")
      assert.strictEqual(first[2], String(n1.id))
      assert.strictEqual(first[3], n1.phone)
      assert.strictEqual(first[4], "in")
      assert.strictEqual(first[5], "network")
      assert.strictEqual(first[6], "77770000001")
      assert.strictEqual(first[7], "77770000001@c.us")
      assert.strictEqual(first[8], "text")
      assert.strictEqual(first[10], "received")
      assert.match(first[11], /^WA/)
      assert.strictEqual(first[12], "")
      assert.strictEqual(rows[3][3], n2.phone)
    }))

  it.effect("filters from, since, until as GET /messages takes them; a number key sees its number only", () =>
    Effect.gen(function*() {
      const { acme, ids, n1, n2 } = yield* world
      const idsOf = (body: string) => (parse(body) as Array<Array<string>>).slice(1).map((r) => Number(r[0]))
      assert.deepStrictEqual(idsOf((yield* download(acme.accountKey, `?from=${n1.id}`)).body), ids.slice(0, 3))
      assert.deepStrictEqual(idsOf((yield* download(acme.accountKey, `?from=%2B${n2.phone}`)).body), ids.slice(3))
      assert.deepStrictEqual(
        idsOf((yield* download(acme.accountKey, "?since=2026-11-02T08:00:00Z&until=2026-11-04")).body),
        ids.slice(1, 3)
      )
      const unix = Date.parse("2026-11-07T08:00:00Z") / 1000
      assert.deepStrictEqual(idsOf((yield* download(acme.accountKey, `?since=${unix}`)).body), ids.slice(6))
      assert.deepStrictEqual(idsOf((yield* download(acme.numberKeys[1], "")).body), ids.slice(3))
      const foreign = yield* download(acme.numberKeys[1], `?from=${n1.id}`)
      assert.strictEqual(foreign.status, 404)
      assert.strictEqual(JSON.parse(foreign.body).code, "number_not_found")
    }))

  it.effect("JSON: {messages, count} with from_phone on each message", () =>
    Effect.gen(function*() {
      const { acme, ids, n1 } = yield* world
      const { status, headers, body } = yield* download(acme.accountKey, `?format=json&from=${n1.id}`)
      assert.strictEqual(status, 200)
      assert.strictEqual(headers["content-type"], "application/json")
      assert.match(headers["content-disposition"], new RegExp(`filename="wagate-history-${n1.phone}-.*\\.json"`))
      const parsed = JSON.parse(body)
      assert.strictEqual(parsed.count, 3)
      assert.deepStrictEqual(parsed.messages.map((m: any) => m.id), ids.slice(0, 3))
      assert.strictEqual(parsed.messages[0].from_phone, n1.phone)
      assert.strictEqual(parsed.messages[0].from, n1.id)
      assert.strictEqual(parsed.messages[2].text, "line one\nline two\r\nthree")
    }))

  it.effect("bad parameters: 400 invalid_param / invalid_from, never a file", () =>
    Effect.gen(function*() {
      const { acme } = yield* world
      for (const [query, code] of [
        ["?format=xml", "invalid_param"],
        ["?since=yesterday", "invalid_param"],
        ["?since=2026-11-05&until=2026-11-01", "invalid_param"],
        ["?from=abc", "invalid_from"]
      ]) {
        const { status, body } = yield* download(acme.accountKey, query)
        assert.strictEqual(status, 400, query)
        assert.strictEqual(JSON.parse(body).code, code, query)
      }
    }))

  it.effect("more than 10 in 10 minutes: 429 rate_limited, Retry-After 60, the sentence saying when one is allowed", () =>
    Effect.gen(function*() {
      const { acme } = yield* world
      clock.set(Date.parse("2026-11-23T10:00:00Z"))
      for (let i = 0; i < 10; i++) {
        assert.strictEqual((yield* download(acme.accountKey, "?format=json")).status, 200)
        clock.adjust("30 seconds")
      }
      // Now 10:05:00; the first download (10:00:00) leaves the window at 10:10:00.
      const refused = yield* download(acme.accountKey, "")
      assert.strictEqual(refused.status, 429)
      // Retry-After 60 on every endpoint but the send (the spec); the sentence says the real wait.
      assert.deepStrictEqual(JSON.parse(refused.body), {
        error: "At most 10 history exports in 10 minutes per account; the next is allowed in 300 s",
        code: "rate_limited"
      })
      assert.strictEqual(refused.headers["retry-after"], "60")
      clock.adjust("299 seconds")
      assert.strictEqual((yield* download(acme.accountKey, "")).status, 429)
      clock.adjust("1 second")
      assert.strictEqual((yield* download(acme.accountKey, "")).status, 200)
      // Refusals are not counted: the next one frees when the second download leaves.
      const again = yield* download(acme.accountKey, "")
      assert.strictEqual(again.status, 429)
      assert.include(JSON.parse(again.body).error, "the next is allowed in 30 s")
      // The limit is the account's: another account is not affected.
      const other = yield* provision((yield* TestGateway).ops, { numbers: 1 })
      assert.strictEqual((yield* download(other.accountKey, "")).status, 200)
      clock.adjust("1 hour")
    }))

  it.effect("a client that disconnects stops the database query", () =>
    Effect.gen(function*() {
      const { acme, gateway } = yield* world
      const sql = yield* Effect.provide(SqlClient.SqlClient, gateway.database)
      // Another session holds the messages table, so the export's first batch waits on the lock
      // in PostgreSQL, where it can be seen, for as long as the test wants.
      const locked = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const holder = yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`LOCK TABLE messages IN ACCESS EXCLUSIVE MODE`
        yield* Deferred.succeed(locked, undefined)
        yield* Deferred.await(release)
      })).pipe(Effect.fork)
      yield* Deferred.await(locked)
      const exportQueries = sql<{ pid: number }>`
        SELECT pid FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
          AND query LIKE '%FROM messages m%'`
      // The client stays until the query is seen (the header record may reach it before), then
      // leaves: its connection is closed. (fetch's abort left undici's connection open for about a
      // minute, and the gateway's HTTP server, stopping, waited for it.)
      const client = Http.get(`${gateway.url}/api/v1/export`, { headers: { authorization: `Bearer ${acme.accountKey}` } })
      client.on("error", () => {})
      const [running] = yield* eventually(exportQueries, (rows) => rows.length === 1)
      client.destroy()
      // The query is cancelled while the lock is still held: not left to finish after the client left.
      yield* eventually(exportQueries, (rows) => rows.length === 0)
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      assert.isAbove(running!.pid, 0)
      // Its transaction ended too: no session is left holding a snapshot for a download nobody reads.
      yield* eventually(
        sql<{ pid: number }>`
          SELECT pid FROM pg_stat_activity
          WHERE datname = current_database() AND state LIKE 'idle in transaction%'`,
        (rows) => rows.length === 0
      )
    }))

  it.effect("downloads at once get the same file", () =>
    Effect.gen(function*() {
      const gateway = yield* TestGateway
      const other = yield* provision(gateway.ops, { numbers: 1 })
      const numberId = other.numbers[0].id
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`
          INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, wa_message_id, type, text,
                                status, created_at, updated_at)
          SELECT ${other.accountId}, ${numberId}, 'in', 'network', '77770000008@c.us', '77770000008', 'PAR' || g,
                 'text', CASE WHEN g % 3 = 0 THEN '=x' || g ELSE 'a, "b"' || chr(10) || g END, 'received',
                 now() - interval '1 day' + g * interval '1 ms', now() - interval '1 day' + g * interval '1 ms'
          FROM generate_series(1, 12000) g`
      }).pipe(Effect.provide(gateway.database), Effect.orDie)
      const files = yield* Effect.all([1, 2, 3].map(() => download(other.accountKey, "")), { concurrency: "unbounded" })
      for (const file of files) assert.strictEqual(file.status, 200)
      assert.strictEqual(files[1].body, files[0].body)
      assert.strictEqual(files[2].body, files[0].body)
      const records: Array<Array<string>> = parse(files[0].body)
      assert.strictEqual(records.length, 12_001)
      assert.strictEqual(records[3][9], "'=x3")
      assert.strictEqual(records[1][9], "a, \"b\"\n1")
    }), { timeout: 60_000 })

  it.effect("at most 100 000 messages, the oldest", () =>
    Effect.gen(function*() {
      const gateway = yield* TestGateway
      const big = yield* provision(gateway.ops, { numbers: 1 })
      const numberId = big.numbers[0].id
      yield* Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`
          INSERT INTO messages (account_id, number_id, direction, source, chat_id, peer, wa_message_id, type, text,
                                status, created_at, updated_at)
          SELECT ${big.accountId}, ${numberId}, 'in', 'network', '77770000009@c.us', '77770000009', 'BIG' || g,
                 'text', 'message ' || g, 'received', now() - interval '1 day' + g * interval '1 ms',
                 now() - interval '1 day' + g * interval '1 ms'
          FROM generate_series(1, 100005) g`
      }).pipe(Effect.provide(gateway.database), Effect.orDie)
      const { status, body } = yield* download(big.accountKey, "")
      assert.strictEqual(status, 200)
      const records: Array<Array<string>> = parse(body)
      assert.strictEqual(records.length, 100_001)
      assert.strictEqual(records[1][9], "message 1")
      assert.strictEqual(records[100_000][9], "message 100000")
    }), { timeout: 120_000 })
})

