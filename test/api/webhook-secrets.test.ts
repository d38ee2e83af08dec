/**
 * Webhook secrets at rest: PostgreSQL holds them only encrypted, deliveries are still signed
 * with the clear secret the account was given, and the key can be rotated (the new key seals,
 * the old one still opens, `reseal` moves every secret to the new key) without a delivery
 * failing. A gateway that starts without the key (a database restored onto a new host) sends
 * nothing it cannot sign, says so once, tells the account, and delivers again once the account
 * sets a new secret.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FiberRef from "effect/FiberRef"
import * as HashSet from "effect/HashSet"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { parseKey, generateKey } from "@wagate/store/SecretKeyring"
import { Webhook } from "standardwebhooks"
import { provision, uniquePhone } from "../support/Fixtures.js"
import { freshDatabase, type RunningGateway, simulatedNetwork, sql, stoppable } from "../support/TestGateway.js"
import * as WebhookReceiver from "../support/WebhookReceiver.js"
import { call, emit, eventually, webhookGateway } from "../support/Webhooks.js"

const keyId = (text: string) => Either.getOrThrow(parseKey(text)).id

/** A webhook set by a gateway whose key (`lostKey`) is then lost; its database outlives it. */
const setWithLostKey = Effect.gen(function*() {
  const receiver = yield* WebhookReceiver.start
  const database = yield* freshDatabase
  const network = yield* simulatedNetwork
  const lostKey = generateKey()
  const set = yield* Effect.gen(function*() {
    const first = yield* webhookGateway(database, { sim: network, settings: { webhookSecretKey: Option.some(Redacted.make(lostKey)) } })
    const acme = yield* provision(first.ops)
    const answer = yield* call(first, "PUT", "/api/v1/webhook", acme.accountKey, { url: receiver.url("/acme") })
    assert.strictEqual(answer.status, 200)
    return { acme, secret: answer.body.secret as string }
  }).pipe(Effect.scoped)
  return { ...set, database, lostKey, network, receiver }
})

describe("webhook secrets at rest", () => {
  it.scopedLive("are stored encrypted, sign deliveries in clear, and survive a rotation of the key", () =>
    Effect.gen(function*() {
      const receiver = yield* WebhookReceiver.start
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const [oldKey, newKey] = [generateKey(), generateKey()]
      const stored = sql(database, (sql) =>
        Effect.map(
          sql<{ secret: string; previous_secret: string | null; older_secret: string | null }>`
            SELECT secret, previous_secret, older_secret FROM webhook_endpoints`,
          (rows) => rows[0]!
        ))
      /** A message from a customer reaches the receiver, signed with `secret`. */
      const delivered = (gateway: RunningGateway, phone: string, secret: string, text: string) =>
        Effect.gen(function*() {
          yield* gateway.sim.inbound({ to: phone, from: uniquePhone(), name: "Dana", text })
          const find = () => receiver.received("/acme").find((r) => r.json.event === "message" && r.json.data.text === text)
          const got = yield* eventually(Effect.sync(find), (r) => r !== undefined, 20_000)
          assert.deepStrictEqual(new Webhook(secret).verify(got!.body, got!.headers), got!.json)
        })

      const first = yield* stoppable(webhookGateway(database, {
        sim: network,
        settings: { webhookSecretKey: Option.some(Redacted.make(oldKey)) }
      }))
      const acme = yield* provision(first.ops)
      const phone = acme.numbers[0]!.phone
      const set = yield* call(first, "PUT", "/api/v1/webhook", acme.accountKey, { url: receiver.url("/acme") })
      assert.strictEqual(set.status, 200)
      const secret: string = set.body.secret
      const row = yield* stored
      assert.match(row.secret, new RegExp(`^enc:v1:${keyId(oldKey)}:`))
      assert.notInclude(row.secret, secret.slice("whsec_".length, "whsec_".length + 12))
      yield* delivered(first, phone, secret, "first")
      // Two rotations: the first secret and the one between still sign, all three sealed.
      const rotate = (gateway: RunningGateway) =>
        Effect.map(call(gateway, "POST", "/api/v1/webhook/rotate-secret", acme.accountKey), (r) => r.body.secret as string)
      const between = yield* rotate(first)
      const third = yield* rotate(first)
      const sealed = yield* stored
      for (const value of [sealed.secret, sealed.previous_secret, sealed.older_secret]) {
        assert.match(value!, new RegExp(`^enc:v1:${keyId(oldKey)}:`))
      }
      yield* first.stop

      // The operator rolls in a new key and keeps the old one for reading.
      const second = yield* webhookGateway(database, {
        sim: network,
        settings: {
          webhookSecretKey: Option.some(Redacted.make(newKey)),
          webhookSecretKeysOld: [Redacted.make(oldKey)]
        }
      })
      yield* delivered(second, phone, secret, "second")
      const resealed = yield* second.ops.opsWebhooks.resealSecrets()
      assert.deepStrictEqual(resealed, { resealed: 1, unreadable: 0, key: keyId(newKey) })
      const again = yield* stored
      for (const value of [again.secret, again.previous_secret, again.older_secret]) {
        assert.match(value!, new RegExp(`^enc:v1:${keyId(newKey)}:`))
      }
      for (const [each, text] of [[secret, "second, first secret"], [between, "second, between"], [third, "second, third"]] as const) {
        yield* delivered(second, phone, each, text)
      }
      assert.deepStrictEqual(yield* second.ops.opsWebhooks.resealSecrets(), { resealed: 0, unreadable: 0, key: keyId(newKey) })

      // A rotation of the account's secret keeps the secrets sealed; the newest three still sign.
      const fourth = yield* rotate(second)
      const both = yield* stored
      assert.match(both.secret, /^enc:v1:/)
      assert.match(both.previous_secret!, /^enc:v1:/)
      assert.match(both.older_secret!, /^enc:v1:/)
      yield* delivered(second, phone, between, "third")
      yield* delivered(second, phone, fourth, "fourth")
    }), { timeout: 90_000 })

  it.scopedLive("sealed with a key the gateway does not have: one warning, a notice to the account, and a new secret delivers what waited", () =>
    Effect.gen(function*() {
      const { acme, database, lostKey, network, receiver } = yield* setWithLostKey
      const lost = keyId(lostKey)
      const newKey = generateKey()

      // The database is restored onto a host whose DATA_DIR has a key of its own.
      const logged: Array<{ readonly level: string; readonly message: string }> = []
      yield* Effect.locallyScopedWith(FiberRef.currentLoggers, HashSet.add(Logger.make(({ logLevel, message }) =>
        void logged.push({ level: logLevel.label, message: (Array.isArray(message) ? message : [message]).join(" ") })
      )))
      const second = yield* webhookGateway(database, { sim: network, settings: { webhookSecretKey: Option.some(Redacted.make(newKey)) } })
      yield* emit(database, acme.accountId, 3)
      const show = call(second, "GET", "/api/v1/webhook", acme.accountKey)
      const shown = yield* eventually(show, (a) => a.body.notice !== null && a.body.pending_events === 3, 20_000)
      assert.strictEqual(shown.body.enabled, true)
      assert.include(shown.body.notice, `encrypted with key ${lost}`)
      assert.include(shown.body.notice, "POST /webhook/rotate-secret")

      // Wake-ups keep coming (every 50 ms here) for the waiting events: in 3 s (where a retry every
      // second would have logged three times) none repeats the warning.
      yield* Effect.sleep("3 seconds")
      const about = (pattern: RegExp) => logged.filter((l) => pattern.test(l.message))
      const ofAccount = about(new RegExp(`account ${acme.accountId}\\b`))
      assert.deepStrictEqual(ofAccount.map((l) => l.level), ["WARN"])
      assert.match(ofAccount[0]!.message, new RegExp(`key ${lost}.*webhook-secret-key`))
      const atStart = about(new RegExp(`webhook secrets? (is|are) encrypted with key ${lost}`))
      assert.deepStrictEqual(atStart.map((l) => l.level), ["WARN"])
      assert.match(atStart[0]!.message, /^1 webhook secret is .*WEBHOOK_SECRET_KEY/)
      assert.lengthOf(receiver.received("/acme"), 0)

      // The account sets a new secret: the waiting events go out, in order, signed with it.
      const rotated = yield* call(second, "POST", "/api/v1/webhook/rotate-secret", acme.accountKey)
      assert.strictEqual(rotated.status, 200)
      const got = yield* receiver.waitFor("/acme", 3, 20_000)
      assert.deepStrictEqual(got.map((r) => r.json.data.status), ["e1", "e2", "e3"])
      for (const r of got) assert.deepStrictEqual(new Webhook(rotated.body.secret).verify(r.body, r.headers), r.json)
      const after = yield* eventually(show, (a) => a.body.pending_events === 0)
      assert.deepStrictEqual([after.body.notice, after.body.previous_secret_expires_at], [null, null])
    }), { timeout: 90_000 })

  it.scopedLive("sealed with a key the gateway does not have: once the key is back, what waited is delivered signed with the old secret", () =>
    Effect.gen(function*() {
      const { acme, database, lostKey, network, receiver, secret } = yield* setWithLostKey
      const otherKey = Option.some(Redacted.make(generateKey()))
      const show = (gateway: RunningGateway) => call(gateway, "GET", "/api/v1/webhook", acme.accountKey)
      yield* Effect.gen(function*() {
        const without = yield* webhookGateway(database, { sim: network, settings: { webhookSecretKey: otherKey } })
        yield* emit(database, acme.accountId, 2)
        yield* eventually(show(without), (a) => a.body.notice !== null && a.body.pending_events === 2, 20_000)
      }).pipe(Effect.scoped)

      // The operator restores the key (here beside the new one, as an old key that still opens).
      const restored = yield* webhookGateway(database, {
        sim: network,
        settings: { webhookSecretKey: otherKey, webhookSecretKeysOld: [Redacted.make(lostKey)] }
      })
      const got = yield* receiver.waitFor("/acme", 2, 20_000)
      assert.deepStrictEqual(got.map((r) => r.json.data.status), ["e1", "e2"])
      for (const r of got) assert.deepStrictEqual(new Webhook(secret).verify(r.body, r.headers), r.json)
      const after = yield* eventually(show(restored), (a) => a.body.notice === null && a.body.pending_events === 0)
      assert.strictEqual(after.body.enabled, true)
    }), { timeout: 90_000 })
})
