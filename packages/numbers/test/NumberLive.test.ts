/**
 * The number entity on the cluster's in-memory test runner, with an injected clock (its
 * DomainClock) driving its days, warm-up, pauses and suspensions to the millisecond, real
 * PostgreSQL for its state, and the simulated network. The cluster and the database keep real
 * time: a connection pool does not survive the clock jumping days.
 */
import { Sharding } from "@effect/cluster/Sharding"
import type { ShardId } from "@effect/cluster/ShardId"
import * as TestRunner from "@effect/cluster/TestRunner"
import { assert, describe, it } from "@effect/vitest"
import * as Almaty from "@wagate/domain/Almaty"
import { NumberEntity } from "@wagate/entities/NumberEntity"
import { BlobStore } from "@wagate/media/BlobStore"
import { MediaFetcher } from "@wagate/media/MediaFetcher"
import { Accounts } from "@wagate/store/Accounts"
import { Billing } from "@wagate/store/Billing"
import { Conversations } from "@wagate/store/Conversations"
import { MediaFiles } from "@wagate/store/MediaFiles"
import * as Database from "@wagate/store/Database"
import { NumberStates } from "@wagate/store/NumberStates"
import type { SimConfig } from "@wagate/whatsapp/sim/SimConfig"
import { SimNetwork } from "@wagate/whatsapp/sim/SimNetwork"
import { REPLACED } from "@wagate/whatsapp/sim/SimSession"
import * as SimulatorDriver from "@wagate/whatsapp/sim/SimulatorDriver"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { eventually } from "../../../test/support/Fixtures.js"
import * as ManualClock from "../../../test/support/ManualClock.js"
import { AccountLive } from "../src/AccountLive.js"
import { DomainClock } from "@wagate/domain/DomainClock"
import { NumberLive } from "../src/NumberLive.js"
import * as NumberSupervisor from "../src/NumberSupervisor.js"
import { RunningNumbers } from "../src/RunningNumbers.js"

/** 12:00 in Almaty. */
const NOON = Date.parse("2026-11-23T07:00:00.000Z")
const PHONE = "77017770001"

const time = ManualClock.make(NOON)
const clock = {
  setTime: (ms: number) => Effect.sync(() => time.set(ms)),
  adjust: (by: number | string) => Effect.sync(() => time.adjust(by as any)),
  currentTimeMillis: Effect.sync(() => time.now())
}

/** Whether the entities' runner has lost their shards (a runner joining took them over). */
let shardsMoved = false
const MovableShards = Layer.effect(
  Sharding,
  Effect.map(Sharding, (sharding) => ({ ...sharding, hasShardId: (id: ShardId) => !shardsMoved && sharding.hasShardId(id) }))
)

const makeEnv = (sim: Partial<SimConfig> = {}) =>
  Layer.mergeAll(NumberLive, AccountLive).pipe(
    Layer.provideMerge(RunningNumbers.Default),
    Layer.provide(MediaFetcher.layer()),
    Layer.provide(BlobStore.layerMemory({ publicBaseUrl: "http://127.0.0.1", signingSecret: Redacted.make("s".repeat(32)) })),
    Layer.provide(Layer.succeed(DomainClock, time.clock)),
    Layer.provide(MovableShards),
    Layer.provideMerge(SimulatorDriver.layerTest({ scanDelayMs: 0, deliveredDelayMs: 10, readDelayMs: null, ...sim })),
    Layer.provideMerge(TestRunner.layer),
    Layer.provideMerge(Billing.Default),
    Layer.provideMerge(Layer.mergeAll(Accounts.Default, Conversations.Default, NumberStates.Default, MediaFiles.Default)),
    Layer.provideMerge(Database.layerTest)
  )
const Env = makeEnv()

/** A linked number at NOON, with its entity client. */
const linkedNumber = Effect.gen(function*() {
  yield* clock.setTime(NOON)
  const accounts = yield* Accounts
  const account = yield* accounts.create({ email: "shop@example.kz", company: "Shop" })
  const number = yield* accounts.addNumber(account.id, PHONE)
  const client = (yield* NumberEntity.client)(String(number.id))
  yield* Effect.fork(client.Link({ method: "qr" }))
  yield* eventually(client.Connection(), (c) => c.status === "WORKING")
  return { client, numberId: number.id }
})

/** Someone who wrote first (stored as such): messages to them are replies. */
const customer = (phone: string) =>
  Effect.gen(function*() {
    const sim = yield* SimNetwork
    const conversations = yield* Conversations
    yield* sim.inbound({ to: PHONE, from: phone, text: "hello?" })
    const numberId = (yield* (yield* NumberStates).live())[0]
    yield* eventually(conversations.contact(numberId, phone), (c) => c._tag === "Some" && c.value.wroteFirst)
  })

/**
 * A linked number, with `peer` a customer of it, whose connection then drops and stays down: the
 * environment's network (`reconnectDelayMs` of a minute) brings it back only after a minute.
 */
const reconnecting = (peer: string) =>
  Effect.gen(function*() {
    const { client } = yield* linkedNumber
    yield* customer(peer)
    yield* (yield* SimNetwork).disconnect(PHONE, "connection_lost")
    yield* eventually(client.Connection(), (c) => c.status === "STARTING")
    return client
  })

const refusal = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.either(effect), (r) => (Either.isLeft(r) ? String((r.left as any).code ?? (r.left as any)._tag) : "sent"))

describe("number entity", () => {
  it.scopedLive("counters restart at midnight in Almaty", () =>
    Effect.gen(function*() {
      const { client } = yield* linkedNumber
      yield* customer("77770000001")
      yield* client.Send({ to: "77770000001", content: { _tag: "text", text: "hi" }, source: "api" })
      assert.strictEqual((yield* client.Limits()).used.messages, 1)
      yield* clock.setTime(Almaty.nextMidnight(NOON) - 1)
      assert.strictEqual((yield* client.Limits()).used.messages, 1)
      yield* clock.adjust(1)
      assert.strictEqual((yield* client.Limits()).used.messages, 0)
    }).pipe(Effect.provide(Env)), { timeout: 60_000 })

  it.scopedLive("warm-up ends exactly 3 days after the number was first connected", () =>
    Effect.gen(function*() {
      const { client } = yield* linkedNumber
      const connectedAt = yield* clock.currentTimeMillis
      yield* clock.setTime(connectedAt + 3 * 86_400_000 - 1)
      const during = yield* client.Limits()
      assert.deepStrictEqual([during.warmup, during.limits.messages_per_day], [true, 200])
      yield* clock.adjust(1)
      const after = yield* client.Limits()
      assert.deepStrictEqual([after.warmup, after.limits.messages_per_day, after.limits.new_contacts_per_day], [false, 1000, 150])
    }).pipe(Effect.provide(Env)), { timeout: 60_000 })

  it.scopedLive("one message a second, and one first message every 5 seconds, to the millisecond", () =>
    Effect.gen(function*() {
      const { client } = yield* linkedNumber
      yield* customer("77770000002")
      const send = (to: string) => refusal(client.Send({ to, content: { _tag: "text", text: "x" }, source: "api" }))
      assert.strictEqual(yield* send("77770000002"), "sent")
      yield* clock.adjust(999)
      assert.strictEqual(yield* send("77770000002"), "rate_limited")
      yield* clock.adjust(1)
      assert.strictEqual(yield* send("77770000003"), "sent")
      yield* clock.adjust(4999)
      assert.strictEqual(yield* send("77770000004"), "rate_limited")
      yield* clock.adjust(1)
      assert.strictEqual(yield* send("77770000004"), "sent")
    }).pipe(Effect.provide(Env)), { timeout: 60_000 })

  it.scopedLive("a suspension for a mailing lasts exactly 24 hours", () =>
    Effect.gen(function*() {
      const { client } = yield* linkedNumber
      yield* clock.adjust("4 days")
      const send = (to: string, text: string) => refusal(client.Send({ to, content: { _tag: "text", text }, source: "api" }))
      for (let i = 0; i < 24; i++) {
        assert.strictEqual(yield* send(`7778000${String(i).padStart(4, "0")}`, "promo"), "sent")
        yield* clock.adjust("5 seconds")
      }
      assert.strictEqual(yield* send("77781000000", "promo"), "spam_detected")
      const start = yield* clock.currentTimeMillis
      yield* clock.setTime(start + 86_400_000 - 1)
      assert.strictEqual(yield* send("77781000001", "anything"), "cold_blocked")
      yield* clock.adjust(1)
      assert.strictEqual(yield* send("77781000001", "anything"), "sent")
    }).pipe(Effect.provide(Env)), { timeout: 60_000 })

  it.scopedLive("contact checks: one a second, 200 a day", () =>
    Effect.gen(function*() {
      const { client } = yield* linkedNumber
      const check = refusal(client.Check({ phone: "77770000009" }))
      assert.strictEqual(yield* check, "sent")
      assert.strictEqual(yield* check, "rate_limited")
      for (let i = 1; i < 200; i++) {
        yield* clock.adjust("1 second")
        assert.strictEqual(yield* check, "sent")
      }
      yield* clock.adjust("1 second")
      assert.strictEqual(yield* check, "daily_limit")
      yield* clock.setTime(Almaty.nextMidnight(yield* clock.currentTimeMillis))
      assert.strictEqual(yield* check, "sent")
    }).pipe(Effect.provide(Env)), { timeout: 60_000 })

  it.scopedLive("a send waiting for the number to reconnect ends at once when the number's shard moves away", () =>
    Effect.gen(function*() {
      const client = yield* reconnecting("77770000010")
      shardsMoved = true
      yield* Effect.addFinalizer(() => Effect.sync(() => void (shardsMoved = false)))
      // Not not_connected after the 10 s grace: the caller is told to ask again, and the cluster
      // takes the request to the number's new owner (EntityCalls.bounded).
      const send = client.Send({ to: "77770000010", content: { _tag: "text", text: "hi" }, source: "api" })
      assert.strictEqual(yield* refusal(send), "NumberMoved")
      const check = client.Check({ phone: "77770000010" })
      assert.strictEqual(yield* refusal(check), "NumberMoved")
      // Nothing was recorded.
      assert.strictEqual((yield* client.Limits()).used.messages, 0)
    }).pipe(Effect.provide(makeEnv({ reconnectDelayMs: 60_000 }))), { timeout: 60_000 })

  it.scopedLive("a number still connecting after the 10 s grace is temporarily unavailable (capacity), not not_connected", () =>
    Effect.gen(function*() {
      const client = yield* reconnecting("77770000011")
      const [send, check] = yield* Effect.all([
        refusal(client.Send({ to: "77770000011", content: { _tag: "text", text: "hi" }, source: "api" })),
        refusal(client.Check({ phone: "77770000011" }))
      ], { concurrency: 2 })
      assert.deepStrictEqual([send, check], ["capacity", "capacity"])
      assert.strictEqual((yield* client.Limits()).used.messages, 0)
    }).pipe(Effect.provide(makeEnv({ reconnectDelayMs: 60_000 }))), { timeout: 60_000 })
})

describe("number entity whose shard moves while it starts", () => {
  it.scopedLive("leaves the number to the new owner's session, and takes it when woken with the shard back", () =>
    Effect.gen(function*() {
      const accounts = yield* Accounts
      const states = yield* NumberStates
      const sim = yield* SimNetwork
      yield* clock.setTime(NOON)
      const account = yield* accounts.create({ email: "moved@example.kz", company: "Moved" })
      const number = yield* accounts.addNumber(account.id, PHONE)
      // Linked before: the gateway's record says so.
      yield* states.setStatus({
        numberId: number.id,
        accountId: account.id,
        phone: PHONE,
        previous: "STOPPED",
        status: "WORKING",
        reason: null,
        at: new Date(NOON)
      })
      // The number's new owner, another runner, holds its session on the network.
      const owner: Array<string> = []
      yield* sim.connect({ phone: PHONE, linked: true }, (event) =>
        Effect.sync(() => {
          if (event._tag === "Connection") owner.push(event.reason ? `${event.status} (${event.reason})` : event.status)
        }))
      yield* eventually(Effect.sync(() => owner.at(-1)), (last) => last === "WORKING")

      // This runner's entity of the number starts after its shard moved away (the cluster does
      // not stop an entity it is still starting): it opens no session, so the owner's is never
      // replaced, not even for a moment (two sessions of one device at once).
      shardsMoved = true
      yield* Effect.addFinalizer(() => Effect.sync(() => void (shardsMoved = false)))
      const client = (yield* NumberEntity.client)(String(number.id))
      yield* client.Connection()
      const replaced = `STARTING (${REPLACED})`
      assert.notInclude(owner, replaced)
      const network = yield* sim.number(PHONE)
      assert.strictEqual(network.status, "WORKING")
      assert.strictEqual(network.sessions, 1, "the owner's session only")

      // The shard comes back to this runner while the entity still runs: the runner's wake
      // reconnects it at once (not at its next sweep), and it sends.
      shardsMoved = false
      yield* client.Wake()
      yield* eventually(Effect.sync(() => owner.at(-1)), (last) => last === replaced)
      const sent = yield* refusal(client.Send({ to: "77770000012", content: { _tag: "text", text: "back" }, source: "api" }))
      assert.strictEqual(sent, "sent")
      const received = yield* sim.sent({ from: PHONE })
      assert.deepStrictEqual(received.map((m) => m.to), ["77770000012"])
    }).pipe(Effect.provide(Env)), { timeout: 60_000 })

  it.scopedLive("a number whose entity runs is in the runner's registry, which the supervisor's rounds skip", () =>
    Effect.gen(function*() {
      const running = yield* RunningNumbers
      const { numberId } = yield* linkedNumber
      assert.isTrue(running.has(numberId))
      assert.isFalse(running.has(numberId + 1000))
      assert.deepStrictEqual(NumberSupervisor.toWake([numberId, numberId + 1000], () => true, running.has), [numberId + 1000])
    }).pipe(Effect.provide(Env)), { timeout: 60_000 })
})

describe("number entity serving the sends of its own process", () => {
  it.scopedLive("a running number serves sends made in the process, under the same rules, while it owns its shard", () =>
    Effect.gen(function*() {
      const running = yield* RunningNumbers
      const { client, numberId } = yield* linkedNumber
      yield* customer("77770000013")
      const local = running.localSend(numberId)
      assert.isDefined(local)
      const send = (accountId?: number) =>
        refusal(local!({ to: "77770000013", content: { _tag: "text", text: "near" }, source: "api", accountId }))
      assert.strictEqual(yield* send(), "sent")
      assert.strictEqual(yield* send(), "rate_limited", "the number's limits hold for sends made in the process")
      assert.strictEqual(yield* send(numberId + 1000), "number_not_found", "and its account")
      assert.strictEqual((yield* client.Limits()).used.messages, 1)
      assert.deepStrictEqual((yield* (yield* SimNetwork).sent({ from: PHONE })).map((m) => m.text), ["near"])

      shardsMoved = true
      yield* Effect.addFinalizer(() => Effect.sync(() => void (shardsMoved = false)))
      assert.isUndefined(running.localSend(numberId), "its shard moved on: sends go through the cluster")
    }).pipe(Effect.provide(Env)), { timeout: 60_000 })
})
