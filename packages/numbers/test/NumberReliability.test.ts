/**
 * One request never takes a number down, no incoming message vanishes, an Idempotency-Key always
 * resolves, and a slow attachment never stalls its number: the number entity on the cluster's
 * in-memory test runner, real PostgreSQL, the simulated network, and hooks inside the entity that
 * the tests control (a defect at a chosen moment).
 */
import * as TestRunner from "@effect/cluster/TestRunner"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import { NumberEntity } from "@wagate/entities/NumberEntity"
import { BlobStore } from "@wagate/media/BlobStore"
import { MediaFetcher } from "@wagate/media/MediaFetcher"
import { Accounts } from "@wagate/store/Accounts"
import { Billing } from "@wagate/store/Billing"
import { Conversations } from "@wagate/store/Conversations"
import { MediaFiles } from "@wagate/store/MediaFiles"
import * as Database from "@wagate/store/Database"
import { NumberStates } from "@wagate/store/NumberStates"
import { SimNetwork } from "@wagate/whatsapp/sim/SimNetwork"
import * as SimulatorDriver from "@wagate/whatsapp/sim/SimulatorDriver"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Redacted from "effect/Redacted"
import * as FileServer from "../../../test/support/FileServer.js"
import { eventually } from "../../../test/support/Fixtures.js"
import * as ManualClock from "../../../test/support/ManualClock.js"
import { AccountLive } from "../src/AccountLive.js"
import { DomainClock } from "@wagate/domain/DomainClock"
import { IncomingRetrySettings } from "../src/IncomingFailures.js"
import * as IncomingFailures from "../src/IncomingFailures.js"
import { type Hooks, NumberHooks } from "../src/NumberHooks.js"
import { NumberLive } from "../src/NumberLive.js"
import { RunningNumbers } from "../src/RunningNumbers.js"
import * as RequestGuard from "../src/RequestGuard.js"

const NOON = Date.parse("2026-11-23T07:00:00.000Z")
const time = ManualClock.make(NOON)

/** What the entity's hooks do in the running test. */
const hooks: { current: Hooks } = { current: { onSend: () => Effect.void, afterRecord: () => Effect.void } }
const noHooks = () => {
  hooks.current = { onSend: () => Effect.void, afterRecord: () => Effect.void }
}

const Env = Layer.mergeAll(NumberLive, AccountLive).pipe(
  Layer.provide(RunningNumbers.Default),
  Layer.provide(MediaFetcher.layer({ allowPrivateAddresses: true, timeout: "60 seconds" })),
  Layer.provide(BlobStore.layerMemory({ publicBaseUrl: "http://127.0.0.1", signingSecret: Redacted.make("s".repeat(32)) })),
  Layer.provide(Layer.succeed(DomainClock, time.clock)),
  Layer.provide(Layer.succeed(NumberHooks, {
    onSend: (sent) => hooks.current.onSend(sent),
    afterRecord: (sent) => hooks.current.afterRecord(sent),
    afterConnect: (numberId) => hooks.current.afterConnect?.(numberId) ?? Effect.void
  })),
  Layer.provide(Layer.succeed(IncomingRetrySettings, { sweepInterval: Duration.millis(100), baseDelayMs: 0 })),
  Layer.provideMerge(SimulatorDriver.layerTest({ scanDelayMs: 0, deliveredDelayMs: 10, readDelayMs: null })),
  Layer.provideMerge(TestRunner.layer),
  Layer.provideMerge(Billing.Default),
  Layer.provideMerge(Layer.mergeAll(Accounts.Default, Conversations.Default, NumberStates.Default, MediaFiles.Default)),
  Layer.provideMerge(Database.layerTest)
)

let phones = 0
/** A linked number with its entity client; every test gets its own. */
const linkedNumber = Effect.gen(function*() {
  noHooks()
  time.set(NOON)
  const accounts = yield* Accounts
  const account = yield* accounts.create({ email: `shop${++phones}@example.kz`, company: "Shop" })
  const phone = `7701777${String(phones).padStart(4, "0")}`
  const number = yield* accounts.addNumber(account.id, phone)
  const client = (yield* NumberEntity.client)(String(number.id))
  yield* Effect.fork(client.Link({ method: "qr" }))
  yield* eventually(client.Connection(), (c) => c.status === "WORKING")
  return { client, numberId: number.id, accountId: account.id, phone }
})

const text = (value: string) => ({ _tag: "text" as const, text: value })

const counter = (metric: Metric.Metric.Counter<number>) => Effect.map(Metric.value(metric), (s) => s.count)

describe("number entity reliability", () => {
  it.scopedLive("a send whose text PostgreSQL refuses fails alone; the next send goes out at once", () =>
    Effect.gen(function*() {
      const { client } = yield* linkedNumber
      const failed = yield* Effect.either(client.Send({ to: "77770000101", content: text("a\u0000b"), source: "api" }))
      assert.isTrue(Either.isLeft(failed) && failed.left._tag === "InvalidParam")
      // The same millisecond: the refused send took no place in the 1-per-second rule.
      const sent = yield* client.Send({ to: "77770000101", content: text("after"), source: "api" })
      assert.isAbove(sent.messageId, 0)
      assert.strictEqual((yield* client.Limits()).used.messages, 1)
    }).pipe(Effect.provide(Env)), { timeout: 30_000 })

  it.scopedLive("a defect inside a request fails it alone with a clear error; operators see it", () =>
    Effect.gen(function*() {
      const { client, numberId } = yield* linkedNumber
      const before = yield* counter(RequestGuard.requestDefects)
      hooks.current = {
        ...hooks.current,
        onSend: (sent) => sent.text === "poison" ? Effect.die("poison") : Effect.void
      }
      const failed = yield* Effect.either(client.Send({ to: "77770000102", content: text("poison"), source: "api" }))
      assert.isTrue(Either.isLeft(failed) && failed.left._tag === "InternalError")
      assert.strictEqual((yield* counter(RequestGuard.requestDefects)) - before, 1)
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ fault: string | null }>`SELECT fault FROM numbers WHERE id = ${numberId}`
      assert.match(row.fault ?? "", /poison/)
      // The number works at once: the entity stayed up.
      const sent = yield* client.Send({ to: "77770000102", content: text("fine"), source: "api" })
      assert.isAbove(sent.messageId, 0)
    }).pipe(Effect.provide(Env)), { timeout: 30_000 })

  it.scopedLive("a start that fails after the number's session opened closes it before the next try: one session, the status WORKING", () =>
    Effect.gen(function*() {
      noHooks()
      time.set(NOON)
      const accounts = yield* Accounts
      const states = yield* NumberStates
      const sim = yield* SimNetwork
      const account = yield* accounts.create({ email: `restart${++phones}@example.kz`, company: "Shop" })
      const phone = `7701778${String(phones).padStart(4, "0")}`
      const number = yield* accounts.addNumber(account.id, phone)
      // Linked before (another runner's entity, say): the number's start connects at once.
      yield* states.setStatus({
        numberId: number.id, accountId: account.id, phone, previous: "none", status: "WORKING", reason: null, at: new Date(NOON)
      })
      let starts = 0
      hooks.current = {
        ...hooks.current,
        afterConnect: (id) => id === number.id && ++starts === 1 ? Effect.die("the start failed") : Effect.void
      }
      const client = (yield* NumberEntity.client)(String(number.id))
      yield* eventually(client.Connection(), (c) => c.status === "WORKING", 20_000)
      assert.strictEqual(starts, 2)
      // Both starts connected; the first start's session was closed before the second opened, so
      // the network never told it it was replaced, and the number's status stays WORKING.
      assert.strictEqual((yield* sim.number(phone)).sessions, 2)
      const sql = yield* SqlClient.SqlClient
      const status = sql<{ status: string; status_reason: string | null }>`
        SELECT status, status_reason FROM numbers WHERE id = ${number.id}`
      yield* Effect.sleep("500 millis")
      assert.deepStrictEqual(yield* status, [{ status: "WORKING", status_reason: null }])
    }).pipe(Effect.provide(Env)), { timeout: 30_000 })

  it.scopedLive("a send fails between its record and its answer: the retries get the original answer", () =>
    Effect.gen(function*() {
      const { client } = yield* linkedNumber
      let recorded: number | null = null
      hooks.current = {
        ...hooks.current,
        afterRecord: (sent) => recorded === null ? Effect.sync(() => recorded = sent.messageId).pipe(Effect.zipRight(Effect.die("crash"))) : Effect.void
      }
      const idempotency = { key: "order-1", requestHash: "h1" }
      const first = yield* Effect.either(client.Send({ to: "77770000103", content: text("once"), source: "api", idempotency }))
      assert.isTrue(Either.isLeft(first))
      assert.isNotNull(recorded)
      for (let i = 0; i < 3; i++) {
        const retry = yield* client.Send({ to: "77770000103", content: text("once"), source: "api", idempotency })
        assert.deepStrictEqual([retry.messageId, retry.replayed], [recorded, true])
      }
      const sql = yield* SqlClient.SqlClient
      const rows = yield* sql<{ n: string }>`SELECT count(*) AS n FROM messages WHERE text = 'once'`
      assert.strictEqual(Number(rows[0].n), 1)
    }).pipe(Effect.provide(Env)), { timeout: 30_000 })

  it.scopedLive("an Idempotency-Key lives 24 hours; then it is a new request, and the sweep deletes it", () =>
    Effect.gen(function*() {
      const { client, numberId } = yield* linkedNumber
      const idempotency = { key: "daily-1", requestHash: "h3" }
      const first = yield* client.Send({ to: "77770000112", content: text("day one"), source: "api", idempotency })
      time.adjust(24 * 60 * 60 * 1000 - 1)
      const replayed = yield* client.Send({ to: "77770000112", content: text("day one"), source: "api", idempotency })
      assert.deepStrictEqual([replayed.messageId, replayed.replayed], [first.messageId, true])
      time.adjust(1)
      const again = yield* client.Send({ to: "77770000112", content: text("day one"), source: "api", idempotency })
      assert.isAbove(again.messageId, first.messageId)
      assert.isFalse(again.replayed)
      time.adjust(24 * 60 * 60 * 1000)
      const conversations = yield* Conversations
      assert.strictEqual(yield* conversations.expireKeys(new Date(time.now() - 24 * 60 * 60 * 1000), 100), 1)
      const sql = yield* SqlClient.SqlClient
      const keys = yield* sql`SELECT key FROM idempotency_keys WHERE message_id IN (SELECT id FROM messages WHERE number_id = ${numberId})`
      assert.strictEqual(keys.length, 0)
    }).pipe(Effect.provide(Env)), { timeout: 30_000 })

  it.scopedLive("identical concurrent sends with one Idempotency-Key all get the one message, none a 429", () =>
    Effect.gen(function*() {
      const { client } = yield* linkedNumber
      const idempotency = { key: "burst-1", requestHash: "h2" }
      const answers = yield* Effect.forEach(
        Array.from({ length: 20 }),
        () => Effect.either(client.Send({ to: "77770000104", content: text("burst"), source: "api", idempotency })),
        { concurrency: "unbounded" }
      )
      const ids = new Set(answers.map((a) => (Either.isRight(a) ? a.right.messageId : `error ${JSON.stringify(a.left)}`)))
      assert.strictEqual(ids.size, 1)
      assert.isTrue(answers.every(Either.isRight))
    }).pipe(Effect.provide(Env)), { timeout: 30_000 })

  it.scopedLive("incoming text, name and group subject with U+0000 and broken surrogates are stored, cleaned", () =>
    Effect.gen(function*() {
      const { numberId, phone } = yield* linkedNumber
      const sim = yield* SimNetwork
      yield* sim.inbound({ to: phone, from: "77770000105", name: "B\u0000d", text: "in\u0000nul" })
      yield* sim.inbound({ to: phone, from: "77770000106", name: "ok", text: "lone \ud83d" })
      yield* sim.inbound({
        to: phone,
        from: "77770000107",
        text: "\ude00 grp",
        group: { id: "120363000000000001", subject: "S\u0000ub \udbff" }
      })
      const sql = yield* SqlClient.SqlClient
      const rows = yield* eventually(
        sql<{ text: string; name: string | null; group_subject: string | null }>`
          SELECT text, name, group_subject FROM messages WHERE number_id = ${numberId} AND direction = 'in' ORDER BY id`,
        (r) => r.length === 3
      )
      assert.deepStrictEqual(rows.map((r) => [r.text, r.name, r.group_subject]), [
        ["innul", "Bd", null],
        ["lone \ufffd", "ok", null],
        ["\ufffd grp", null, "Sub \ufffd"]
      ])
    }).pipe(Effect.provide(Env)), { timeout: 30_000 })

  it.scopedLive("an incoming message whose storing fails is kept, counted and stored by a retry", () =>
    Effect.gen(function*() {
      const { numberId, phone } = yield* linkedNumber
      const sql = yield* SqlClient.SqlClient
      const before = yield* counter(IncomingFailures.failures)
      // The database refuses this message until the test lifts the refusal.
      yield* sql`
        CREATE OR REPLACE FUNCTION refuse_incoming() RETURNS trigger AS $$
        BEGIN
          IF NEW.text = 'refused for now' THEN RAISE EXCEPTION 'storage is down'; END IF;
          RETURN NEW;
        END $$ LANGUAGE plpgsql`
      yield* sql`CREATE TRIGGER refuse_incoming BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION refuse_incoming()`
      const sim = yield* SimNetwork
      yield* sim.inbound({ to: phone, from: "77770000108", text: "refused for now" })
      const kept = yield* eventually(
        sql<{ event: string }>`SELECT event FROM incoming_failures WHERE number_id = ${numberId}`,
        (r) => r.length === 1
      )
      assert.include(kept[0].event, "refused for now")
      assert.isAtLeast((yield* counter(IncomingFailures.failures)) - before, 1)
      yield* sql`DROP TRIGGER refuse_incoming ON messages`
      yield* eventually(
        sql<{ text: string }>`SELECT text FROM messages WHERE number_id = ${numberId} AND direction = 'in'`,
        (r) => r.length === 1 && r[0].text === "refused for now"
      )
      yield* eventually(
        sql<{ id: string }>`SELECT id FROM incoming_failures WHERE number_id = ${numberId}`,
        (r) => r.length === 0
      )
    }).pipe(Effect.provide(Env)), { timeout: 30_000 })

  it.scopedLive("a slow attachment URL holds up neither a text send nor an incoming message of its number", () =>
    Effect.gen(function*() {
      const { client, numberId, phone } = yield* linkedNumber
      const files = yield* FileServer.start
      const image = yield* Effect.fork(client.Send({
        to: "77770000109",
        content: { _tag: "image", url: files.url("/slow.png") },
        source: "api"
      }))
      yield* eventually(Effect.sync(files.held), (n) => n === 1)
      const sent = yield* client.Send({ to: "77770000110", content: text("not waiting"), source: "api" }).pipe(
        Effect.timeout("10 seconds")
      )
      assert.isAbove(sent.messageId, 0)
      const sim = yield* SimNetwork
      yield* sim.inbound({ to: phone, from: "77770000111", text: "also not waiting" })
      const sql = yield* SqlClient.SqlClient
      yield* eventually(
        sql<{ id: string }>`SELECT id FROM messages WHERE number_id = ${numberId} AND text = 'also not waiting'`,
        (r) => r.length === 1
      )
      // The image is still being fetched all along.
      assert.strictEqual(files.held(), 1)
      // Past the 5 s between first messages to new people, which the text send used.
      time.adjust(5000)
      files.release()
      const imageSent = yield* Fiber.join(image)
      assert.isAbove(imageSent.messageId, sent.messageId)
    }).pipe(Effect.provide(Env)), { timeout: 30_000 })
})
