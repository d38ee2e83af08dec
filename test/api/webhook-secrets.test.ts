/**
 * Webhook secrets at rest: PostgreSQL holds them only encrypted, deliveries are still signed
 * with the clear secret the account was given, and the key can be rotated (the new key seals,
 * the old one still opens, `reseal` moves every secret to the new key) without a delivery
 * failing.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import { parseKey, generateKey } from "@wagate/store/SecretKeyring"
import { Webhook } from "standardwebhooks"
import { provision, uniquePhone } from "../support/Fixtures.js"
import { freshDatabase, type RunningGateway, simulatedNetwork, sql } from "../support/TestGateway.js"
import * as WebhookReceiver from "../support/WebhookReceiver.js"
import { call, eventually, webhookGateway } from "../support/Webhooks.js"

const keyId = (text: string) => Either.getOrThrow(parseKey(text)).id

describe("webhook secrets at rest", () => {
  it.scopedLive("are stored encrypted, sign deliveries in clear, and survive a rotation of the key", () =>
    Effect.gen(function*() {
      const receiver = yield* WebhookReceiver.start
      const database = yield* freshDatabase
      const network = yield* simulatedNetwork
      const [oldKey, newKey] = [generateKey(), generateKey()]
      const stored = sql(database, (sql) =>
        Effect.map(sql<{ secret: string; previous_secret: string | null }>`SELECT secret, previous_secret FROM webhook_endpoints`, (rows) => rows[0]!))
      /** A message from a customer reaches the receiver, signed with `secret`. */
      const delivered = (gateway: RunningGateway, phone: string, secret: string, text: string) =>
        Effect.gen(function*() {
          yield* gateway.sim.inbound({ to: phone, from: uniquePhone(), name: "Dana", text })
          const find = () => receiver.received("/acme").find((r) => r.json.event === "message" && r.json.data.text === text)
          const got = yield* eventually(Effect.sync(find), (r) => r !== undefined, 20_000)
          assert.deepStrictEqual(new Webhook(secret).verify(got!.body, got!.headers), got!.json)
        })

      const firstScope = yield* Scope.make()
      const first = yield* webhookGateway(database, {
        sim: network,
        settings: { webhookSecretKey: Option.some(Redacted.make(oldKey)) }
      }).pipe(Scope.extend(firstScope))
      const acme = yield* provision(first.ops)
      const phone = acme.numbers[0]!.phone
      const set = yield* call(first, "PUT", "/api/v1/webhook", acme.accountKey, { url: receiver.url("/acme") })
      assert.strictEqual(set.status, 200)
      const secret: string = set.body.secret
      const row = yield* stored
      assert.match(row.secret, new RegExp(`^enc:v1:${keyId(oldKey)}:`))
      assert.notInclude(row.secret, secret.slice("whsec_".length, "whsec_".length + 12))
      yield* delivered(first, phone, secret, "first")
      yield* Scope.close(firstScope, Exit.void)

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
      assert.match((yield* stored).secret, new RegExp(`^enc:v1:${keyId(newKey)}:`))
      assert.deepStrictEqual(yield* second.ops.opsWebhooks.resealSecrets(), { resealed: 0, unreadable: 0, key: keyId(newKey) })

      // A rotation of the account's secret keeps both secrets sealed, and both still sign.
      const rotated = yield* call(second, "POST", "/api/v1/webhook/rotate-secret", acme.accountKey)
      assert.strictEqual(rotated.status, 200)
      const both = yield* stored
      assert.match(both.secret, /^enc:v1:/)
      assert.match(both.previous_secret!, /^enc:v1:/)
      yield* delivered(second, phone, secret, "third")
      yield* delivered(second, phone, rotated.body.secret, "fourth")
    }), { timeout: 90_000 })
})
