/**
 * What the gateway depends on going away and coming back, as a gateway in production meets it,
 * through a TCP proxy in front of it: PostgreSQL with every connection reset at once (a restart
 * or a failover of the server) or not answering for a while with its connections left open (a
 * network partition, a stalled server); the S3 store stalling the same way. (Redis stalling:
 * `auth.test.ts`.)
 */
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3"
import { assert, describe, it } from "@effect/vitest"
import { BlobStore } from "@wagate/media/BlobStore"
import type { Hooks } from "@wagate/numbers/NumberHooks"
import * as Database from "@wagate/store/Database"
import { SimNetwork } from "@wagate/whatsapp/sim/SimNetwork"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as HashSet from "effect/HashSet"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { randomBytes } from "node:crypto"
import { seedFile } from "../support/Archives.js"
import * as FileServer from "../support/FileServer.js"
import { eventually, provision, type Provisioned, uniquePhone } from "../support/Fixtures.js"
import * as ManualClock from "../support/ManualClock.js"
import * as MediaStores from "../support/MediaStores.js"
import * as TcpProxy from "../support/TcpProxy.js"
import {
  freshDatabase,
  type GatewayOptions,
  OPERATOR_TOKEN,
  type RunningGateway,
  simulatedNetwork,
  sql,
  startGateway,
  stoppable
} from "../support/TestGateway.js"
import * as WebhookReceiver from "../support/WebhookReceiver.js"
import { call, emit, outbox } from "../support/Webhooks.js"

/**
 * Moves the domain clock an hour at a time until the media upkeep has removed the blobs `heads`
 * looks at and has nothing of them left to do (`leftovers` empty): its first delete after a stall can still fail
 * (a connection the store held), and a delete the store did but answered too late (the client's
 * time limit, on a loaded machine) is recorded again; the upkeep tries either an hour later by
 * that clock.
 */
const removedByUpkeep = <E1, E2>(
  time: ManualClock.ManualClock,
  heads: Effect.Effect<ReadonlyArray<Option.Option<unknown>>, E1>,
  leftovers: Effect.Effect<ReadonlyArray<unknown>, E2>
) =>
  Effect.gen(function*() {
    const left = Effect.orDie(Effect.all({ heads, leftovers }))
    const gone = (l: Effect.Effect.Success<typeof left>) => l.heads.every(Option.isNone) && l.leftovers.length === 0
    const deadline = Date.now() + 40_000
    for (;;) {
      time.adjust("61 minutes")
      const tried = Date.now()
      while (Date.now() - tried < 3_000) {
        if (gone(yield* left)) return
        yield* Effect.sleep("50 millis")
      }
      if (Date.now() > deadline) return assert.fail(`the upkeep never removed them: ${JSON.stringify(yield* left)}`)
    }
  })

/** A gateway whose every statement goes through the proxy (the cluster's included). */
const behindProxy = (options: Pick<GatewayOptions, "domainClock" | "settings"> & { readonly statementTimeoutMs?: number } = {}) =>
  Effect.gen(function*() {
    const direct = yield* freshDatabase
    const [{ name }] = yield* sql(direct, (sql) => sql<{ name: string }>`SELECT current_database() AS name`)
    const proxy = yield* TcpProxy.start({ host: "127.0.0.1", port: 5432 })
    const database = yield* Layer.build(Database.layerPostgres({
      url: Redacted.make(`postgres://postgres@127.0.0.1:${proxy.port}/${name}`),
      maxConnections: 4,
      statementTimeoutMs: options.statementTimeoutMs
    }))
    const gateway = yield* startGateway(database, {
      domainClock: options.domainClock,
      settings: { webhookAllowPrivateUrls: true, ...options.settings }
    })
    return { proxy, gateway, direct }
  })

/**
 * An S3 store (s3rver) behind a TCP proxy, and the gateway's blob store on it through the proxy
 * with a given idle limit (how long a request the store does not answer waits).
 */
const s3BehindProxy = Effect.gen(function*() {
  const store = yield* MediaStores.s3
  const proxy = yield* TcpProxy.start({ host: "127.0.0.1", port: Number(new URL(store.endpoint).port) })
  const blobStore = (idleTimeoutMs: number) => () =>
    BlobStore.layerS3({ ...MediaStores.s3Options(`http://127.0.0.1:${proxy.port}`), idleTimeoutMs })
  return { store, proxy, blobStore }
})

/** The log lines of the gateways started in the scope, as they come. */
/**
 * A peer sends the gateway's first number an image: the message as GET /messages lists it once
 * its file is no longer pending (stored, or skipped with its reason).
 */
const incomingImage = (gateway: RunningGateway, account: Provisioned, peer: string, text = "") =>
  Effect.gen(function*() {
    const arrived = yield* gateway.sim.inbound({
      to: account.numbers[0]!.phone,
      from: peer,
      text,
      type: "image",
      media: { mimeType: "image/png", bytes: new Uint8Array(FileServer.PNG) }
    })
    const mine = (a: { body: any }) => a.body.messages?.find((m: any) => m.wa_message_id === arrived.message.waMessageId)
    const listed = yield* eventually(
      call(gateway, "GET", `/api/v1/messages?chat=${peer}`, account.accountKey),
      (a) => mine(a)?.media_pending === false,
      20_000
    )
    return mine(listed)
  })

const logLines = Effect.gen(function*() {
  const logged: Array<{ readonly level: string; readonly message: string }> = []
  yield* Effect.locallyScopedWith(FiberRef.currentLoggers, HashSet.add(Logger.make(({ logLevel, message }) =>
    void logged.push({ level: logLevel.label, message: (Array.isArray(message) ? message : [message]).join(" ") })
  )))
  return logged
})

/** Moves the domain clock a step at a time (the backoffs' waits end) until `check` holds. */
const stepUntil = <A, E>(time: ManualClock.ManualClock, step: Duration.DurationInput, effect: Effect.Effect<A, E>, check: (a: A) => boolean) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 30_000
    for (;;) {
      time.adjust(step)
      const tried = Date.now()
      while (Date.now() - tried < 1_000) {
        const value = yield* Effect.orDie(effect)
        if (check(value)) return value
        yield* Effect.sleep("20 millis")
      }
      if (Date.now() > deadline) return yield* Effect.dieMessage(`condition never held; last value: ${JSON.stringify(yield* Effect.orDie(effect))}`)
    }
  })

describe("PostgreSQL going away", () => {
  it.scopedLive("every connection reset: requests answer 200 or 503 capacity, never 500 or a hang; then sends, incoming messages and webhooks go on", () =>
    Effect.gen(function*() {
      const receiver = yield* WebhookReceiver.start
      const { gateway, proxy } = yield* behindProxy()
      const acme = yield* provision(gateway.ops)
      const number = acme.numbers[0]!
      const set = yield* call(gateway, "PUT", "/api/v1/webhook", acme.accountKey, { url: receiver.url("/acme"), events: ["message"] })
      assert.strictEqual(set.status, 200)
      const texts = () => receiver.received("/acme").map((r) => r.json?.data?.text)
      yield* gateway.sim.inbound({ to: number.phone, from: uniquePhone(), text: "before the reset" })
      yield* eventually(Effect.sync(texts), (t) => t.includes("before the reset"), 20_000)

      yield* proxy.cut
      // Right after it, a request finds its connection gone or a fresh one: either way no 500.
      for (const path of ["/api/v1/status", "/api/v1/messages?limit=5", "/api/v1/balance"]) {
        const answer = yield* call(gateway, "GET", path, acme.accountKey)
        assert.include([200, 503], answer.status, `${path}: ${JSON.stringify(answer.body)}`)
        if (answer.status === 503) assert.deepStrictEqual([answer.body.code, answer.headers["retry-after"]], ["capacity", "5"], path)
      }
      const status = yield* eventually(call(gateway, "GET", "/api/v1/status", acme.accountKey), (a) => a.status === 200, 20_000)
      assert.strictEqual(status.body.numbers[0].status, "WORKING")

      // The number sends, and what reaches it is stored and announced, as before the reset.
      const to = uniquePhone()
      const sent = yield* eventually(
        call(gateway, "POST", "/api/v1/messages/send", acme.numberKeys[0]!, { to, text: "after the reset" }),
        (a) => a.status === 200,
        20_000
      )
      assert.deepStrictEqual((yield* gateway.sim.sent({ to })).map((m) => [m.text, m.waMessageId]), [["after the reset", sent.body.wa_message_id]])
      yield* gateway.sim.inbound({ to: number.phone, from: uniquePhone(), text: "incoming after the reset" })
      yield* eventually(Effect.sync(texts), (t) => t.includes("incoming after the reset"), 20_000)
      const link = yield* call(gateway, "GET", `/ops/v1/numbers/${number.id}/link`, OPERATOR_TOKEN)
      assert.deepStrictEqual([link.body.status, link.body.fault], ["WORKING", null])
    }), { timeout: 90_000 })

  it.scopedLive("a database that stops answering for a while: requests wait for it, then complete; a keyed send is sent once", () =>
    Effect.gen(function*() {
      const { direct, gateway, proxy } = yield* behindProxy()
      const acme = yield* provision(gateway.ops)
      const to = uniquePhone()
      const send = call(gateway, "POST", "/api/v1/messages/send", acme.numberKeys[0]!, { to, text: "through the stall" }, {
        "idempotency-key": "stall-1"
      })
      yield* proxy.freeze
      const during = yield* Effect.fork(Effect.all([send, call(gateway, "GET", "/api/v1/status", acme.accountKey)], { concurrency: 2 }))
      // The health check does not wait with them: it says the database is down (its check has a
      // time limit), so a probe on it does not restart a gateway whose database stalls.
      const health = yield* call(gateway, "GET", "/api/status", "")
      assert.deepStrictEqual([health.status, health.body.status, health.body.checks.database.status], [200, "degraded", "down"])
      yield* Effect.sleep("1 second")
      yield* proxy.thaw
      const [sent, status] = yield* Fiber.join(during)
      // The send waited within its number's time limit; if it was cut short, it said to try again.
      assert.include([200, 503], sent.status, JSON.stringify(sent.body))
      assert.strictEqual(status.status, 200)
      // Tried again with its key, it is answered once and sent once.
      const again = yield* eventually(send, (a) => a.status === 200, 20_000)
      if (sent.status === 200) assert.strictEqual(again.body.id, sent.body.id)
      assert.deepStrictEqual((yield* gateway.sim.sent({ to })).map((m) => m.text), ["through the stall"])
      const [stored] = yield* sql(direct, (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM messages WHERE text = 'through the stall'`)
      assert.strictEqual(stored.n, 1)
    }), { timeout: 90_000 })

  it.scopedLive("the webhook queue unreadable: the account's loop backs off by the clock, logs once when it stops and once when it resumes, and delivers every waiting event once", () =>
    Effect.gen(function*() {
      const logged: Array<{ readonly level: string; readonly message: string }> = []
      yield* Effect.locallyScopedWith(FiberRef.currentLoggers, HashSet.add(Logger.make(({ logLevel, message }) =>
        void logged.push({ level: logLevel.label, message: (Array.isArray(message) ? message : [message]).join(" ") })
      )))
      const receiver = yield* WebhookReceiver.start
      const time = ManualClock.stepped(Date.parse("2026-11-28T07:00:00.000Z"))
      const { direct, gateway, proxy } = yield* behindProxy({ domainClock: time.clock })
      const acme = yield* provision(gateway.ops)
      const set = yield* call(gateway, "PUT", "/api/v1/webhook", acme.accountKey, { url: receiver.url("/acme") })
      assert.strictEqual(set.status, 200)
      yield* emit(direct, acme.accountId, 1, "before")
      yield* receiver.waitFor("/acme", 1, 20_000)

      // Every read of the account's queue loses its connection, as in an outage; the dispatcher's
      // statements still go through, so its poll wakes the account every second.
      const queueReads = "AS event_id, payload, attempts, next_attempt_at"
      yield* proxy.dropOnSend(queueReads)
      yield* emit(direct, acme.accountId, 3)
      const dropped = (n: number) => eventually(Effect.sync(proxy.droppedOnSend), (d) => d >= n, 20_000)
      // The first failure waits; a wake-up ends that wait, but not the next: that one waits for
      // the clock. Before, the pass was tried again every second (three more in these 3 s).
      yield* dropped(2)
      yield* Effect.sleep("3 seconds")
      assert.strictEqual(proxy.droppedOnSend(), 2)
      time.adjust("1 minute")
      yield* dropped(4)
      yield* Effect.sleep("2 seconds")
      assert.strictEqual(proxy.droppedOnSend(), 4)
      assert.lengthOf(receiver.received("/acme"), 1)

      // The database answers again: the next try (by the clock) delivers what waited, in order, once.
      yield* proxy.dropOnSend(undefined)
      time.adjust("1 minute")
      const got = yield* receiver.waitFor("/acme", 4, 20_000)
      yield* Effect.sleep("1 second")
      assert.deepStrictEqual(receiver.received("/acme").map((r) => r.json.data.status), ["before1", "e1", "e2", "e3"])
      assert.strictEqual(got.length, 4)
      // No attempt was counted for the failures: each event was delivered on its first.
      const rows = yield* eventually(outbox(direct, acme.accountId), (rows) => rows.every((r) => r.delivered_at !== null), 20_000)
      assert.deepStrictEqual(rows.map((r) => r.attempts), [1, 1, 1, 1])

      // One warning when it stopped, one line when it went on; none for each retry.
      const ofAccount = logged.filter((l) => new RegExp(`account ${acme.accountId}\\b`).test(l.message))
      assert.deepStrictEqual(ofAccount.map((l) => l.level), ["WARN", "INFO"], JSON.stringify(ofAccount))
      assert.match(ofAccount[0]!.message, /is waiting for the database \(.+\); its events wait, and the loop tries again with backoff \(up to 30 s\)$/)
      assert.strictEqual(ofAccount[1]!.message, `webhook delivery of account ${acme.accountId} resumed after 120 s and 4 retries`)
    }), { timeout: 90_000 })

  it.scopedLive("the webhook dispatcher's poll failing: one warning when it starts, one line when it works again, not one a poll", () =>
    Effect.gen(function*() {
      const logged: Array<{ readonly level: string; readonly message: string }> = []
      yield* Effect.locallyScopedWith(FiberRef.currentLoggers, HashSet.add(Logger.make(({ logLevel, message }) =>
        void logged.push({ level: logLevel.label, message: (Array.isArray(message) ? message : [message]).join(" ") })
      )))
      const receiver = yield* WebhookReceiver.start
      const { direct, gateway, proxy } = yield* behindProxy()
      const acme = yield* provision(gateway.ops)
      const set = yield* call(gateway, "PUT", "/api/v1/webhook", acme.accountKey, { url: receiver.url("/acme") })
      assert.strictEqual(set.status, 200)

      // The poll (every second) loses its connection each time, as in an outage.
      yield* proxy.dropOnSend("WHERE e.enabled AND (head.next_attempt_at")
      yield* eventually(Effect.sync(proxy.droppedOnSend), (n) => n >= 4, 20_000)
      const ofPoll = () => logged.filter((l) => /^looking for due webhook events/.test(l.message))
      assert.deepStrictEqual(ofPoll().map((l) => l.level), ["WARN"])
      assert.strictEqual(ofPoll()[0]!.message, "looking for due webhook events failed; the poll goes on and says when it works again")

      yield* proxy.dropOnSend(undefined)
      yield* eventually(Effect.sync(ofPoll), (ls) => ls.length >= 2, 20_000)
      assert.deepStrictEqual(ofPoll().map((l) => l.level), ["WARN", "INFO"])
      assert.match(ofPoll()[1]!.message, /^looking for due webhook events works again after \d+ s$/)
      // Deliveries go on.
      yield* emit(direct, acme.accountId, 1)
      assert.strictEqual((yield* receiver.waitFor("/acme", 1, 20_000))[0]!.json.data.status, "e1")
    }), { timeout: 90_000 })
})

describe("the webhook notifications' connection", () => {
  // The poll (hourly here) wakes nothing in these tests: a delivery comes from a notification.
  const listenOnly = { webhookPollIntervalMs: Option.some(3_600_000) }
  const ofListening = (logged: ReadonlyArray<{ readonly level: string; readonly message: string }>) =>
    logged.filter((l) => /^listening for webhook notifications/.test(l.message))

  /**
   * A gateway behind the proxy that delivers only on notifications, with acme's webhook set and a
   * first event ("before1") delivered; `statementTimeoutMs` bounds its pool's statements.
   */
  const listening = (statementTimeoutMs?: number) =>
    Effect.gen(function*() {
      const logged = yield* logLines
      const receiver = yield* WebhookReceiver.start
      const time = ManualClock.stepped(Date.parse("2026-11-28T07:00:00.000Z"))
      const { direct, gateway, proxy } = yield* behindProxy({
        domainClock: time.clock,
        settings: listenOnly,
        ...(statementTimeoutMs === undefined ? {} : { statementTimeoutMs })
      })
      const acme = yield* provision(gateway.ops)
      const set = yield* call(gateway, "PUT", "/api/v1/webhook", acme.accountKey, { url: receiver.url("/acme") })
      assert.strictEqual(set.status, 200)
      yield* emit(direct, acme.accountId, 1, "before")
      yield* receiver.waitFor("/acme", 1, 20_000)
      return { acme, direct, logged, proxy, receiver, time }
    })

  it.scopedLive("the database wholly away: listening is tried again with backoff by the clock, logs once when it stops and once when it works again, and wakes deliveries once the database is back", () =>
    Effect.gen(function*() {
      const { acme, direct, logged, proxy, receiver, time } = yield* listening()
      // Recorded as delivered before the outage, so that it is not delivered again after it.
      yield* eventually(outbox(direct, acme.accountId), (rows) => rows.every((r) => r.delivered_at !== null), 20_000)

      // Every connection reset, and each new one refused, for ten minutes by the clock.
      yield* proxy.down
      // Back before the gateway stops, should the test end early.
      yield* Effect.addFinalizer(() => proxy.up)
      yield* eventually(Effect.sync(() => ofListening(logged)), (ls) => ls.length > 0, 20_000)
      for (let minute = 0; minute < 10; minute++) {
        const refused = proxy.refused()
        time.adjust("1 minute")
        yield* eventually(Effect.sync(proxy.refused), (n) => n > refused, 20_000)
      }
      // Before, the listening connection's loss went unseen: nothing was said, and nothing listened again.
      assert.deepStrictEqual(ofListening(logged).map((l) => l.level), ["WARN"])
      assert.strictEqual(
        ofListening(logged)[0]!.message,
        "listening for webhook notifications failed; the poll wakes deliveries meanwhile, and listening is tried again with backoff (up to 30 s)"
      )

      yield* proxy.up
      const back = yield* stepUntil(time, "1 minute", Effect.sync(() => ofListening(logged)), (ls) => ls.length > 1)
      assert.deepStrictEqual(back.map((l) => l.level), ["WARN", "INFO"])
      const [, seconds, retries] = back[1]!.message.match(/^listening for webhook notifications works again after (\d+) s and (\d+) retries$/) ?? []
      assert.isAtLeast(Number(seconds), 600, back[1]!.message)
      // One try per wait: the waits grew to 30 s (between 15 and 30), so a minute holds one or two, not sixty.
      assert.isAtLeast(Number(retries), 5, back[1]!.message)
      assert.isAtMost(Number(retries), 25, back[1]!.message)

      // A notification wakes the delivery again (the poll is hourly).
      yield* emit(direct, acme.accountId, 1, "after")
      yield* stepUntil(time, "1 minute", Effect.sync(() => receiver.received("/acme").length), (n) => n >= 2)
      assert.deepStrictEqual(receiver.received("/acme").map((r) => r.json.data.status), ["before1", "after1"])
    }), { timeout: 120_000 })

  it.scopedLive("an event queued while nothing listened is delivered once listening works again, not at the next poll", () =>
    Effect.gen(function*() {
      const { acme, direct, logged, proxy, receiver, time } = yield* listening()
      yield* eventually(outbox(direct, acme.accountId), (rows) => rows.every((r) => r.delivered_at !== null), 20_000)

      yield* proxy.down
      yield* Effect.addFinalizer(() => proxy.up)
      yield* eventually(Effect.sync(() => ofListening(logged)), (ls) => ls.length > 0, 20_000)
      // Queued (and notified) while the listening connection is away: nobody hears it.
      yield* emit(direct, acme.accountId, 1, "missed")

      yield* proxy.up
      const back = yield* stepUntil(time, "10 seconds", Effect.sync(() => ofListening(logged)), (ls) => ls.length > 1)
      assert.deepStrictEqual(back.map((l) => l.level), ["WARN", "INFO"])
      // Listening again, the dispatcher looks for due events at once. Before, the event waited for
      // the poll, an hour away here; no further notification and no move of the clock comes.
      yield* receiver.waitFor("/acme", 2, 30_000)
      assert.deepStrictEqual(receiver.received("/acme").map((r) => r.json.data.status), ["before1", "missed1"])
    }), { timeout: 120_000 })

  it.scopedLive("the listening connection stops answering while the others go on: its check finds it within the pool's bound, and listening starts again on a new connection, which wakes deliveries", () =>
    Effect.gen(function*() {
      const { acme, direct, logged, proxy, receiver, time } = yield* listening(1_000)

      // Nothing goes through the listening connection any more, either way, and nothing closes it.
      assert.strictEqual(yield* proxy.stallSent('LISTEN "wagate_webhooks"'), 1)
      yield* emit(direct, acme.accountId, 1, "lost")
      // Its check is due: unanswered, the connection is closed 6 s later (the 1 s bound and 5 s).
      // Before, it was never checked: the listener waited on it for good, and only the poll woke deliveries.
      time.adjust("30 seconds")
      const [failed] = yield* eventually(Effect.sync(() => ofListening(logged)), (ls) => ls.length > 0, 30_000)
      assert.strictEqual(failed!.level, "WARN")
      const back = yield* stepUntil(time, "1 second", Effect.sync(() => ofListening(logged)), (ls) => ls.length > 1)
      assert.deepStrictEqual(back.map((l) => l.level), ["WARN", "INFO"])
      assert.match(back[1]!.message, /^listening for webhook notifications works again after \d+ s and 1 retry$/)

      // The one missed is delivered as listening starts again (it looks for due events), and the
      // next notification wakes the account again, in order.
      yield* receiver.waitFor("/acme", 2, 20_000)
      yield* emit(direct, acme.accountId, 1, "after")
      yield* receiver.waitFor("/acme", 3, 20_000)
      assert.deepStrictEqual(receiver.received("/acme").map((r) => r.json.data.status), ["before1", "lost1", "after1"])
    }), { timeout: 90_000 })
})

describe("the S3 store stalling", () => {
  it.scopedLive("an incoming file is skipped with its reason and a sent one answers 503 storage_unavailable, instead of waiting on it; the number keeps sending; files go up again once it answers", () =>
    Effect.gen(function*() {
      const { proxy, blobStore } = yield* s3BehindProxy
      const files = yield* FileServer.start
      const time = ManualClock.make(Date.parse("2026-11-23T07:00:00.000Z"))
      const gateway = yield* startGateway(yield* freshDatabase, {
        domainClock: time.clock,
        // Without the store's own limit a stalled upload held the send until this (six times it for
        // an attachment) ran out, and answered capacity.
        settings: { entityTimeoutMs: 10_000 },
        // Long enough for s3rver on a busy machine, short enough for the test.
        blobs: blobStore(4_000)
      })
      const acme = yield* provision(gateway.ops)
      const key = acme.numberKeys[0]!
      const send = (body: Record<string, unknown>) =>
        Effect.zipRight(Effect.sync(() => time.adjust("10 seconds")), call(gateway, "POST", "/api/v1/messages/send", key, { to: uniquePhone(), ...body }))

      const peer = uniquePhone()
      const incoming = (text: string) =>
        Effect.gen(function*() {
          const m = yield* incomingImage(gateway, acme, peer, text)
          return [m.media_skipped, m.media_skip_reason, m.media.size]
        })

      yield* proxy.freeze
      // Before the store had limits of its own, the file stayed pending for as long as it stalled,
      // holding one of the gateway's download slots.
      assert.deepStrictEqual(yield* incoming("while it stalls"), [true, "the file could not be stored: the blob store is unavailable", null])
      const stalled = yield* send({ document: { url: files.url("/report.pdf") } })
      assert.deepStrictEqual([stalled.status, stalled.body.code, stalled.headers["retry-after"]], [503, "storage_unavailable", "30"])
      // Text needs no store: the number is not held by the stalled upload.
      assert.strictEqual((yield* send({ text: "text goes on" })).status, 200)

      yield* proxy.thaw
      const sent = yield* eventually(send({ document: { url: files.url("/report.pdf") } }), (a) => a.status === 200, 20_000)
      const file = yield* call(gateway, "GET", "/api/v1/messages?limit=1", acme.accountKey)
      assert.deepStrictEqual([file.body.messages[0].id, file.body.messages[0].media.size], [sent.body.id, FileServer.PDF.length])
      assert.deepStrictEqual(yield* incoming("once it answers"), [false, null, FileServer.PNG.length])
    }), { timeout: 90_000 })

  it.scopedLive("an archive export whose file cannot be read from the store ends failed, leaves nothing, and the gateway stays up; tried again, it is done", () =>
    Effect.gen(function*() {
      const { proxy, blobStore } = yield* s3BehindProxy
      const gateway = yield* startGateway(yield* freshDatabase, {
        blobs: blobStore(1_000),
        settings: { exportJanitorIntervalMs: 500 }
      })
      const acme = yield* provision(gateway.ops)
      for (const name of ["a.pdf", "b.pdf"]) {
        yield* seedFile(gateway.database, gateway.blobs, {
          accountId: acme.accountId, numberId: acme.numbers[0]!.id, peer: "77770000001", filename: name, bytes: randomBytes(200_000)
        })
      }
      const storage = () => Effect.map(call(gateway, "GET", "/api/v1/storage", acme.accountKey), (a) => a.body)
      const before = yield* storage()

      // Every read of a stored file stalls (its answer never comes): the archive's upload goes on.
      yield* proxy.freezeOnSend("GET /wagate-media-test/media/")
      const created = yield* call(gateway, "POST", "/api/v1/exports", acme.accountKey, {})
      assert.strictEqual(created.status, 202)
      // Before, the stream of the file failed with nobody listening, and the process died of it.
      const failed = yield* eventually(
        call(gateway, "GET", `/api/v1/exports/${created.body.id}`, acme.accountKey),
        (a) => a.body.status === "failed" || a.body.status === "done",
        30_000
      )
      assert.strictEqual(failed.body.status, "failed", JSON.stringify(failed.body))
      assert.match(failed.body.error, /^The archive could not be written: writing media\//)
      assert.isNull(failed.body.url)
      assert.isTrue(Option.isNone(yield* gateway.blobs.head(`exports/${acme.accountId}/${created.body.id}.zip`)))
      assert.deepStrictEqual(yield* storage(), before)

      // An export whose runner died while it ran is handed over again by the janitor: meeting the
      // same unreadable file, it ends failed too, and is not started over again and again (`failed` is final).
      const [left] = yield* sql(gateway.database, (sql) => sql<{ id: string }>`
        INSERT INTO exports (account_id, status, created_at, started_at, progress)
        VALUES (${acme.accountId}, 'running', now(), now(), 20) RETURNING id`)
      const handedOver = yield* eventually(
        call(gateway, "GET", `/api/v1/exports/${left.id}`, acme.accountKey),
        (a) => a.body.status !== "running",
        30_000
      )
      assert.strictEqual(handedOver.body.status, "failed")
      assert.match(handedOver.body.error, /^The archive could not be written: writing media\//)

      yield* proxy.freezeOnSend(undefined)
      yield* proxy.thaw
      const again = yield* call(gateway, "POST", "/api/v1/exports", acme.accountKey, {})
      assert.strictEqual(again.status, 202)
      const done = yield* eventually(
        call(gateway, "GET", `/api/v1/exports/${again.body.id}`, acme.accountKey),
        (a) => a.body.status === "failed" || a.body.status === "done",
        30_000
      )
      assert.deepStrictEqual([done.body.status, done.body.files, done.body.missing_files], ["done", 2, 0], JSON.stringify(done.body))
    }), { timeout: 90_000 })

  it.scopedLive("GET /media/{id} answers 503 storage_unavailable once the store's idle limit passes, not three times over", () =>
    Effect.gen(function*() {
      const { proxy, blobStore } = yield* s3BehindProxy
      const gateway = yield* startGateway(yield* freshDatabase, { blobs: blobStore(2_000) })
      const acme = yield* provision(gateway.ops)
      const file = yield* seedFile(gateway.database, gateway.blobs, {
        accountId: acme.accountId, numberId: acme.numbers[0]!.id, peer: "77770000001", filename: "a.pdf", bytes: randomBytes(10)
      })
      const link = Effect.promise(async () => {
        const response = await fetch(`${gateway.url}/api/v1/media/${file.messageId}`, {
          redirect: "manual",
          headers: { authorization: `Bearer ${acme.accountKey}` }
        })
        return [response.status, response.status === 302 ? null : ((await response.json()) as { code: string }).code]
      })
      assert.deepStrictEqual(yield* link, [302, null])

      yield* proxy.freeze
      const [elapsed, answer] = yield* Effect.timed(link)
      assert.deepStrictEqual(answer, [503, "storage_unavailable"])
      // One attempt: about the 2 s limit. The SDK's default of three attempts took over 6 s.
      assert.isBelow(Duration.toMillis(elapsed), 4_000)
    }), { timeout: 120_000 })

  it.scopedLive("an attachment whose upload times out, as the store takes it whole and stalls before answering, is not left in the bucket", () =>
    Effect.gen(function*() {
      const { proxy, blobStore, store } = yield* s3BehindProxy
      const files = yield* FileServer.start
      const gateway = yield* startGateway(yield* freshDatabase, {
        settings: { entityTimeoutMs: 10_000 },
        blobs: blobStore(1_500)
      })
      const acme = yield* provision(gateway.ops)
      const s3 = new S3Client({
        endpoint: store.endpoint,
        region: "us-east-1",
        forcePathStyle: true,
        credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" }
      })
      yield* Effect.addFinalizer(() => Effect.sync(() => s3.destroy()))
      const stored = Effect.map(
        Effect.promise(() => s3.send(new ListObjectsV2Command({ Bucket: MediaStores.s3Options(store.endpoint).bucket, Prefix: `media/${acme.accountId}/` }))),
        (listed) => (listed.Contents ?? []).map((o) => o.Key)
      )

      yield* proxy.holdAnswersOnSend("PUT /wagate-media-test/media/")
      const sent = yield* call(gateway, "POST", "/api/v1/messages/send", acme.numberKeys[0]!, {
        to: uniquePhone(),
        document: { url: files.url("/report.pdf") }
      })
      assert.deepStrictEqual([sent.status, sent.body.code], [503, "storage_unavailable"])
      // The store wrote the file it had taken; before, it stayed there, counted and removed by nothing.
      const left = yield* eventually(stored, (keys) => keys.length === 0, 10_000)
      assert.deepStrictEqual(left, [])
      const [record] = yield* sql(gateway.database, (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM blob_leftovers`)
      assert.strictEqual(record.n, 1)
    }), { timeout: 120_000 })

  it.scopedLive("an attachment's upload that lands after its send gave up, while the store refuses to delete it, is removed by the media upkeep an hour later", () =>
    Effect.gen(function*() {
      const { proxy, blobStore } = yield* s3BehindProxy
      const files = yield* FileServer.start
      const time = ManualClock.make(Date.parse("2026-11-23T07:00:00.000Z"))
      const gateway = yield* startGateway(yield* freshDatabase, {
        domainClock: time.clock,
        settings: { entityTimeoutMs: 10_000, mediaUpkeepIntervalMs: 100 },
        blobs: blobStore(1_500)
      })
      const acme = yield* provision(gateway.ops)
      const leftovers = sql(gateway.database, (sql) => sql<{ key: string }>`SELECT blob_key AS key FROM blob_leftovers`)

      yield* proxy.holdAnswersOnSend("PUT /wagate-media-test/media/")
      yield* proxy.dropOnSend("DELETE /wagate-media-test/media/")
      const sent = yield* call(gateway, "POST", "/api/v1/messages/send", acme.numberKeys[0]!, {
        to: uniquePhone(),
        document: { url: files.url("/report.pdf") }
      })
      assert.deepStrictEqual([sent.status, sent.body.code], [503, "storage_unavailable"])
      const [left] = yield* leftovers
      assert.match(left!.key, new RegExp(`^media/${acme.accountId}/${acme.numbers[0]!.id}/sent-`))
      // The delete tried at once fails; the file the store wrote stays until the upkeep's turn.
      assert.isTrue(Option.isSome(yield* gateway.blobs.head(left!.key)))

      yield* proxy.dropOnSend(undefined)
      yield* proxy.holdAnswersOnSend(undefined)
      yield* removedByUpkeep(time, Effect.all([gateway.blobs.head(left!.key)]), leftovers)
    }), { timeout: 120_000 })

  it.scopedLive("an incoming file whose upload lands after the download gave up, while the store refuses to delete it, is removed by the media upkeep an hour later", () =>
    Effect.gen(function*() {
      const { proxy, blobStore } = yield* s3BehindProxy
      const time = ManualClock.make(Date.parse("2026-11-23T07:00:00.000Z"))
      const gateway = yield* startGateway(yield* freshDatabase, {
        domainClock: time.clock,
        settings: { mediaUpkeepIntervalMs: 100 },
        blobs: blobStore(1_500)
      })
      const acme = yield* provision(gateway.ops)
      const leftovers = sql(gateway.database, (sql) => sql<{ key: string }>`SELECT blob_key AS key FROM blob_leftovers`)

      yield* proxy.holdAnswersOnSend("PUT /wagate-media-test/media/")
      yield* proxy.dropOnSend("DELETE /wagate-media-test/media/")
      const m = yield* incomingImage(gateway, acme, uniquePhone())
      assert.deepStrictEqual([m.media_skipped, m.media_skip_reason], [true, "the file could not be stored: the blob store is unavailable"])
      // The store wrote the file it had taken, and the delete tried at once fails: before, it
      // stayed there for ever, counted and removed by nothing.
      const key = `media/${acme.accountId}/${acme.numbers[0]!.id}/${m.id}`
      assert.deepStrictEqual((yield* leftovers).map((r) => r.key), [key])
      yield* eventually(gateway.blobs.head(key), Option.isSome, 10_000)

      yield* proxy.dropOnSend(undefined)
      yield* proxy.holdAnswersOnSend(undefined)
      yield* removedByUpkeep(time, Effect.all([gateway.blobs.head(key)]), leftovers)
    }), { timeout: 120_000 })

  it.scopedLive("incoming files stored but refused as they are counted, while the store refuses to delete them, are removed by the media upkeep an hour later", () =>
    Effect.gen(function*() {
      const { proxy, blobStore } = yield* s3BehindProxy
      const time = ManualClock.make(Date.parse("2026-11-23T07:00:00.000Z"))
      const gateway = yield* startGateway(yield* freshDatabase, {
        domainClock: time.clock,
        settings: { mediaUpkeepIntervalMs: 100, incomingMediaConcurrency: 4 },
        blobs: blobStore(1_500)
      })
      const acme = yield* provision(gateway.ops)
      yield* gateway.ops.opsStorage.setPolicy({ path: { id: acme.accountId }, payload: { chat_daily_mb: 1 } })
      const leftovers = Effect.map(
        sql(gateway.database, (sql) => sql<{ key: string }>`SELECT blob_key AS key FROM blob_leftovers`),
        (rows) => rows.map((r) => r.key).sort()
      )

      // Four files of 400,000 bytes at once from one person, downloaded together: two fit in the
      // chat's 1 MB, the others are stored and then refused as they are counted.
      yield* proxy.dropOnSend("DELETE /wagate-media-test/media/")
      const peer = uniquePhone()
      const arrived = yield* Effect.forEach([0, 1, 2, 3], () =>
        gateway.sim.inbound({
          to: acme.numbers[0]!.phone,
          from: peer,
          text: "",
          type: "image",
          media: { mimeType: "image/jpeg", bytes: randomBytes(400_000) }
        }), { concurrency: "unbounded" })
      const ids = new Set(arrived.map((a) => a.message.waMessageId))
      const listed = yield* eventually(
        call(gateway, "GET", `/api/v1/messages?chat=${peer}`, acme.accountKey),
        (a) => a.body.messages?.filter((m: any) => ids.has(m.wa_message_id) && m.media_pending === false).length === 4,
        20_000
      )
      const keyOf = (m: any) => `media/${acme.accountId}/${acme.numbers[0]!.id}/${m.id}`
      const refused = listed.body.messages.filter((m: any) => ids.has(m.wa_message_id) && m.media_skipped).map(keyOf)
      assert.strictEqual(refused.length, 2)
      // The delete tried at once fails; before, the files stayed in the bucket for ever, counted
      // and removed by nothing.
      const left = yield* leftovers
      assert.isAbove(left.length, 0)
      for (const key of left) {
        assert.include(refused, key)
        assert.isTrue(Option.isSome(yield* gateway.blobs.head(key)), key)
      }

      yield* proxy.dropOnSend(undefined)
      yield* removedByUpkeep(time, Effect.forEach(refused as ReadonlyArray<string>, (key) => gateway.blobs.head(key)), leftovers)
    }), { timeout: 120_000 })

  it.scopedLive("sent attachments not kept (refused by the network, over the ceiling), while the store refuses to delete them, are removed by the media upkeep an hour later", () =>
    Effect.gen(function*() {
      const { proxy, blobStore } = yield* s3BehindProxy
      const files = yield* FileServer.start
      const time = ManualClock.make(Date.parse("2026-11-23T07:00:00.000Z"))
      const gateway = yield* startGateway(yield* freshDatabase, {
        domainClock: time.clock,
        settings: { entityTimeoutMs: 10_000, mediaUpkeepIntervalMs: 100 },
        blobs: blobStore(1_500)
      })
      const acme = yield* provision(gateway.ops)
      yield* gateway.ops.opsStorage.setPolicy({ path: { id: acme.accountId }, payload: { ceiling_bytes: 1 } })
      const leftovers = Effect.map(
        sql(gateway.database, (sql) => sql<{ key: string }>`SELECT blob_key AS key FROM blob_leftovers`),
        (rows) => rows.map((r) => r.key).sort()
      )
      const send = (to: string) =>
        Effect.zipRight(
          Effect.sync(() => time.adjust("10 seconds")),
          call(gateway, "POST", "/api/v1/messages/send", acme.numberKeys[0]!, { to, document: { url: files.url("/report.pdf") } })
        )

      yield* proxy.dropOnSend("DELETE /wagate-media-test/media/")
      const refusing = uniquePhone()
      yield* gateway.sim.failures(refusing, { mode: "reject", times: 1 })
      assert.strictEqual((yield* send(refusing)).status, 502)
      const over = yield* send(uniquePhone())
      assert.strictEqual(over.status, 200)
      const listed = yield* eventually(
        call(gateway, "GET", "/api/v1/messages?limit=2", acme.accountKey),
        (a) => a.body.messages?.length === 2 && a.body.messages.every((m: any) => m.media_skipped),
        20_000
      )
      const keys = listed.body.messages.map((m: any) => `media/${acme.accountId}/${acme.numbers[0]!.id}/sent-${m.wa_message_id}`).sort()
      // The deletes tried at once fail; before, both files stayed in the bucket for ever, counted
      // and removed by nothing.
      assert.deepStrictEqual(yield* leftovers, keys)
      for (const key of keys) assert.isTrue(Option.isSome(yield* gateway.blobs.head(key)), key)

      yield* proxy.dropOnSend(undefined)
      yield* removedByUpkeep(time, Effect.forEach(keys as ReadonlyArray<string>, (key) => gateway.blobs.head(key)), leftovers)
    }), { timeout: 120_000 })

  it.scopedLive("a pending send's file that the sweep after a restart cannot delete, as the store refuses it, is removed by the media upkeep an hour later", () =>
    Effect.gen(function*() {
      const { proxy, blobStore } = yield* s3BehindProxy
      const files = yield* FileServer.start
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const sim = Context.get(network, SimNetwork)
      // A number whose connection is lost stays offline until the restart.
      yield* sim.updateConfig({ reconnectDelayMs: 86_400_000 })
      const time = ManualClock.make(Date.parse("2026-11-23T07:00:00.000Z"))
      // Once the send is recorded the network loses the number: the send is answered, its file
      // kept and counted, and the message stays pending until the restart's sweep fails it.
      let losing: string | undefined
      const numberHooks: Hooks = {
        onSend: () => Effect.void,
        afterRecord: () => losing === undefined ? Effect.void : Effect.orDie(sim.disconnect(losing, "connection_lost"))
      }
      const options = {
        sim: network,
        domainClock: time.clock,
        numberHooks,
        settings: { mediaUpkeepIntervalMs: 100 },
        blobs: blobStore(1_500)
      }
      const first = yield* stoppable(startGateway(database, options))
      const acme = yield* provision(first.ops)
      losing = acme.numbers[0]!.phone
      time.adjust("10 seconds")
      const sent = yield* call(first, "POST", "/api/v1/messages/send", acme.numberKeys[0]!, {
        to: uniquePhone(),
        document: { url: files.url("/report.pdf") }
      })
      assert.strictEqual(sent.status, 200)
      const message = yield* call(first, "GET", `/api/v1/messages/${sent.body.id}`, acme.accountKey)
      assert.strictEqual(message.body.status, "pending")
      const key = `media/${acme.accountId}/${acme.numbers[0]!.id}/sent-${message.body.wa_message_id}`
      assert.isTrue(Option.isSome(yield* first.blobs.head(key)))
      yield* first.stop

      yield* proxy.dropOnSend("DELETE /wagate-media-test/media/")
      const second = yield* startGateway(database, options)
      const failed = yield* eventually(
        call(second, "GET", `/api/v1/messages/${sent.body.id}`, acme.accountKey),
        (a) => a.body.status === "failed",
        20_000
      )
      assert.deepStrictEqual([failed.body.media.size, failed.body.media_skipped], [null, true])
      const leftovers = sql(second.database, (sql) => sql<{ key: string }>`SELECT blob_key AS key FROM blob_leftovers`)
      // The sweep's delete fails; before, the file stayed in the bucket for ever, uncounted.
      assert.deepStrictEqual((yield* eventually(leftovers, (rows) => rows.length > 0, 10_000)).map((r) => r.key), [key])
      assert.isTrue(Option.isSome(yield* second.blobs.head(key)))

      yield* proxy.dropOnSend(undefined)
      yield* removedByUpkeep(time, Effect.all([second.blobs.head(key)]), leftovers)
    }), { timeout: 90_000 })

  it.scopedLive("a deleted file's backup whose purge a stopped gateway left in the middle is purged by the next one", () =>
    Effect.gen(function*() {
      const { proxy, blobStore } = yield* s3BehindProxy
      const database = yield* freshDatabase
      // Days before the wall clock's today: a deletion is dated by the domain clock, as its purge is.
      const time = ManualClock.make(Date.parse("2026-03-02T07:00:00.000Z"))
      const options = {
        domainClock: time.clock,
        settings: { mediaUpkeepIntervalMs: 100 },
        blobs: blobStore(60_000)
      }
      const first = yield* stoppable(startGateway(database, options))
      const acme = yield* provision(first.ops)
      const m = yield* incomingImage(first, acme, uniquePhone())
      const key = `media/${acme.accountId}/${acme.numbers[0]!.id}/${m.id}`
      assert.isTrue(Option.isSome(yield* first.blobs.head(key)))
      const deleted = yield* call(first, "POST", "/api/v1/media/delete", acme.accountKey, { until: "2100-01-01T00:00:00Z" })
      assert.deepStrictEqual([deleted.status, deleted.body.deleted], [200, 1])

      // The backup is due; the upkeep claims it and its delete never reaches the store. The
      // gateway stops meanwhile: before, the claim had marked the file purged, and the blob
      // stayed in the bucket for ever.
      yield* proxy.stallOnSend("DELETE /wagate-media-test/media/")
      time.adjust("31 days")
      yield* eventually(Effect.sync(() => proxy.stalledOnSend()), (n) => n > 0, 10_000)
      yield* first.stop
      assert.isTrue(Option.isSome(yield* first.blobs.head(key)))

      yield* proxy.stallOnSend(undefined)
      const second = yield* startGateway(database, options)
      // Until the file is marked purged, with no purge due.
      const unpurged = sql(second.database, (sql) =>
        sql<{ id: string }>`
          SELECT id FROM media_files WHERE message_id = ${m.id} AND (purged_at IS NULL OR purge_after IS NOT NULL)`)
      yield* removedByUpkeep(time, Effect.all([second.blobs.head(key)]), unpurged)
    }), { timeout: 90_000 })
})
