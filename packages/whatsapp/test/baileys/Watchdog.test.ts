/**
 * The zombie watchdog on fake sockets and the TestClock: a connection that says WORKING but
 * receives nothing, or whose socket died without a close event, or whose events are held back,
 * is detected, restarted, reported (a STARTING event with the reason, which the entity publishes
 * as `session.status`) and counted in `wagate_zombie_restarts`. A live connection is left alone.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Watchdog from "../../src/baileys/Watchdog.js"
import * as Harness from "./support/Harness.js"

const { advance, flush, working } = Harness

/** Defaults: looks every 15 s, pings after 45 s of silence, expects an answer within 10 s. */
const restarts = Effect.map(Metric.value(Watchdog.zombieRestarts), (state) => state.count)

describe("Baileys driver: zombie watchdog", () => {
  it.scoped("a connection that receives frames is never pinged nor restarted", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      const socket = h.fake.latest()
      for (let i = 0; i < 60; i++) {
        yield* advance(10_000)
        socket.frame()
      }
      assert.deepStrictEqual(socket.queries, [])
      assert.deepStrictEqual(rec.take(), [])
      assert.strictEqual(h.fake.sockets.length, 1)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("45 s of silence: a ping; answered, the connection stays and the silence counts from the answer", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      const socket = h.fake.latest()
      yield* advance(44_999)
      assert.strictEqual(socket.queries.length, 0)
      yield* advance(1)
      assert.strictEqual(socket.queries.length, 1)
      const ping = socket.queries[0]!
      assert.deepStrictEqual([ping.tag, ping.attrs.xmlns, ping.attrs.type], ["iq", "w:p", "get"])
      // The next ping only after another 45 s without traffic.
      yield* advance(30_000)
      assert.strictEqual(socket.queries.length, 1)
      yield* advance(15_000)
      assert.strictEqual(socket.queries.length, 2)
      assert.deepStrictEqual(rec.take(), [])
      assert.strictEqual(h.fake.sockets.length, 1)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("a ping without an answer: restarted and reported with the reason, counted, WORKING again on a new socket", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const before = yield* restarts
      const { rec, session } = yield* working(h)
      const first = h.fake.latest()
      first.queryOutcome = { _tag: "hang" }
      yield* advance(45_000)
      assert.strictEqual(first.queries.length, 1)
      yield* advance(9_999)
      assert.deepStrictEqual(rec.take(), [])
      yield* advance(1)
      assert.deepStrictEqual(rec.take(), [
        "55000 STARTING (zombie connection restarted: no answer to a ping within 10 s after 45 s without traffic)"
      ])
      assert.strictEqual((yield* restarts) - before, 1)
      assert.strictEqual(first.ended, 1)
      assert.strictEqual(h.fake.sockets.length, 2)
      // Sends wait for the new connection rather than going into the dead one.
      const early = yield* Effect.flip(session.send({ waMessageId: "3EB0Z", to: "77017654321", content: { kind: "text", text: "x" } }))
      assert.strictEqual(early._tag, "DriverUnavailable")
      h.fake.latest().open()
      yield* flush
      assert.deepStrictEqual(rec.take(), ["55000 WORKING"])
      // The dead socket's late events change nothing.
      first.close(428)
      yield* advance(60_000)
      assert.deepStrictEqual(rec.take(), [])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("a WebSocket that closed without a close event: restarted at the next look", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const before = yield* restarts
      const { rec } = yield* working(h)
      h.fake.latest().wire.isOpen = false
      yield* advance(15_000)
      assert.deepStrictEqual(rec.take(), ["15000 STARTING (zombie connection restarted: the websocket is no longer open)"])
      assert.strictEqual((yield* restarts) - before, 1)
      assert.strictEqual(h.fake.sockets.length, 2)
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("events held back by Baileys for a minute while frames still arrive: restarted", () => {
    const h = Harness.make()
    return Effect.gen(function*() {
      const { rec } = yield* working(h)
      const socket = h.fake.latest()
      socket.buffering = true
      for (let i = 0; i < 7; i++) {
        yield* advance(10_000)
        socket.frame()
      }
      assert.deepStrictEqual(rec.take(), [])
      yield* advance(5_000)
      assert.deepStrictEqual(rec.take(), ["75000 STARTING (zombie connection restarted: events held back for 60 s)"])
      assert.deepStrictEqual(socket.queries, [])
    }).pipe(Effect.provide(h.layer))
  })

  it.scoped("thresholds come from the settings; a connection that is not WORKING is not watched", () => {
    const h = Harness.make({ watchdogIntervalMs: 1_000, idleMs: 5_000, pingTimeoutMs: 2_000 })
    return Effect.gen(function*() {
      Harness.storeLinked(h, 1)
      const { rec } = yield* Harness.open({ id: 1, linked: true })
      // Still in the handshake: nothing to watch however long it is silent.
      yield* advance(60_000)
      assert.deepStrictEqual(h.fake.latest().queries, [])
      h.fake.latest().open()
      h.fake.latest().queryOutcome = { _tag: "fail", error: new Error("Connection Closed") }
      yield* flush
      yield* advance(5_000)
      assert.deepStrictEqual(rec.take().slice(1), [
        "60000 WORKING",
        "65000 STARTING (zombie connection restarted: no answer to a ping within 2 s after 5 s without traffic)"
      ])
    }).pipe(Effect.provide(h.layer))
  })
})
