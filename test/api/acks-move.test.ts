/**
 * Acks across a move of a number to another runner: a runner that stops gracefully stores every
 * ack its session had already received before the session closes, and the network hands what a
 * closed session never stored to the number's next session. Every message reaches `read`, and
 * each ack is announced once.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import * as PgClient from "@effect/sql-pg/PgClient"
import { assert, describe, it } from "@effect/vitest"
import * as Database from "@wagate/store/Database"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { provision, uniquePhone } from "../support/Fixtures.js"
import { simulatedNetwork, stoppable } from "../support/TestGateway.js"
import * as WebhookReceiver from "../support/WebhookReceiver.js"
import { call, eventually, webhookGateway } from "../support/Webhooks.js"

const MESSAGES = 4

describe("acks when a number moves to another runner", () => {
  it.scopedLive("acks in flight when the runner stops are stored: every message reaches read, each ack announced once", () =>
    Effect.gen(function*() {
      const url = yield* Database.scratchDatabase
      const database = yield* Layer.build(Database.layerPostgres({ url: Redacted.make(url), maxConnections: 8 }))
      // A connection of its own, to hold the messages' rows while their read acks arrive.
      const locker = yield* PgClient.make({ url: Redacted.make(url), maxConnections: 1 }).pipe(Effect.provide(Reactivity.layer))
      const network = yield* simulatedNetwork
      const receiver = yield* WebhookReceiver.start

      const first = yield* stoppable(webhookGateway(database, { sim: network }))
      const acme = yield* provision(first.ops)
      const number = acme.numbers[0]!
      yield* call(first, "PUT", "/api/v1/webhook", acme.accountKey, { url: receiver.url("/acks") })
      yield* first.sim.updateConfig({ deliveredDelayMs: 20, readDelayMs: 7_000 })
      const peer = uniquePhone()
      yield* first.sim.inbound({ to: number.phone, from: peer, text: "Hello, do you deliver?" })
      const api = yield* first.client(acme.accountKey)
      const outgoing = Effect.map(
        api.messages.list({ urlParams: { chat: peer } }),
        (page) => page.messages.filter((m) => m.direction === "out")
      )
      yield* eventually(api.messages.list({ urlParams: { chat: peer } }), (p) => p.messages.length === 1)
      for (let i = 0; i < MESSAGES; i++) {
        // One message a second per number.
        if (i > 0) yield* Effect.sleep("1100 millis")
        yield* api.messages.send({ payload: { to: peer, text: `Yes, we do (${i})` } })
      }
      yield* eventually(outgoing, (ms) => ms.length === MESSAGES && ms.every((m) => m.status === "delivered"))

      // The read acks reach the session while their rows are held: the first waits in the ack
      // writer, the others behind it, when the runner stops.
      const locked = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const holder = yield* locker.withTransaction(Effect.gen(function*() {
        yield* locker`SELECT id FROM messages WHERE number_id = ${number.id} AND direction = 'out' FOR UPDATE`
        yield* Deferred.succeed(locked, undefined)
        yield* Deferred.await(release)
      })).pipe(Effect.orDie, Effect.fork)
      yield* Deferred.await(locked)
      yield* eventually(first.sim.sent({ from: number.phone }), (sent) => sent.length === MESSAGES && sent.every((m) => m.ack === "read"), 20_000)

      const stopping = yield* Effect.fork(first.stop)
      yield* eventually(first.sim.number(number.phone), (state) => !state.sessionOpen, 20_000)
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      yield* Fiber.join(stopping)

      // The number moves to the runner that starts next.
      const second = yield* webhookGateway(database, { sim: network })
      const api2 = yield* second.client(acme.accountKey)
      const statuses = Effect.map(
        api2.messages.list({ urlParams: { chat: peer } }),
        (page) => page.messages.filter((m) => m.direction === "out").map((m) => m.status)
      )
      const read = yield* eventually(statuses, (all) => all.every((s) => s === "read"), 30_000).pipe(
        // Failed at the deadline: what the messages got to instead.
        Effect.catchAllDefect(() => statuses)
      )
      assert.deepStrictEqual(read, Array(MESSAGES).fill("read"), "every message reaches read")

      const isAck = (r: WebhookReceiver.Received) => r.json?.event === "message.ack"
      yield* eventually(
        Effect.sync(() => receiver.received("/acks").filter((r) => isAck(r) && r.json.data.ack === "read").length),
        (n) => n === MESSAGES,
        20_000
      )
      // A moment for any second announcement to arrive.
      yield* Effect.sleep("1 second")
      const announced = new Map<string, Set<string>>()
      for (const r of receiver.received("/acks").filter(isAck)) {
        const key = `${r.json.data.id} ${r.json.data.ack}`
        announced.set(key, (announced.get(key) ?? new Set()).add(r.headers["webhook-id"]!))
      }
      assert.deepStrictEqual(
        [...announced].filter(([, ids]) => ids.size > 1).map(([key]) => key),
        [],
        "no ack is announced twice"
      )
      assert.strictEqual([...announced.keys()].filter((k) => k.endsWith(" read")).length, MESSAGES)
    }), { timeout: 120_000 })
})
