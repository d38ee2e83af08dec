/**
 * Webhook secrets at rest: sealed values open with any key of the ring and only for their row,
 * and migration 0011 seals the clear secrets a database holds from before, after which a clear
 * secret can no longer be written.
 */
import { assert, describe, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import { randomBytes } from "node:crypto"
import * as Migrations from "../src/Migrations.js"
import * as SecretKeyring from "../src/SecretKeyring.js"
import { emptyDatabase, migrateUpTo } from "./support/EmptyDatabase.js"

const key = (text = SecretKeyring.generateKey()) => Either.getOrThrow(SecretKeyring.parseKey(text))

describe("SecretKeyring", () => {
  it("seals with the current key and opens with any key of the ring, only for the same row", () => {
    const [a, b] = [key(), key()]
    const sealed = SecretKeyring.seal(SecretKeyring.make([a]), "whsec_abc", "webhook_endpoints:1")
    assert.match(sealed, new RegExp(`^enc:v1:${a.id}:[A-Za-z0-9_-]+$`))
    assert.notInclude(sealed, "whsec_abc")
    assert.strictEqual(SecretKeyring.keyIdOf(sealed), a.id)
    // After a rotation (b seals, a still opens) the old value is read.
    assert.deepStrictEqual(SecretKeyring.open(SecretKeyring.make([b, a]), sealed, "webhook_endpoints:1"), Either.right("whsec_abc"))
    // Without the key, for another row, or altered: refused, never garbage.
    const withoutKey = SecretKeyring.open(SecretKeyring.make([b]), sealed, "webhook_endpoints:1")
    assert.isTrue(Either.isLeft(withoutKey) && /does not have/.test(withoutKey.left.message))
    assert.isTrue(Either.isLeft(SecretKeyring.open(SecretKeyring.make([a]), sealed, "webhook_endpoints:2")))
    const flipped = sealed.slice(0, -2) + (sealed.at(-2) === "A" ? "B" : "A") + sealed.at(-1)
    assert.isTrue(Either.isLeft(SecretKeyring.open(SecretKeyring.make([a]), flipped, "webhook_endpoints:1")))
    assert.isTrue(Either.isLeft(SecretKeyring.open(SecretKeyring.make([a]), "whsec_abc", "webhook_endpoints:1")))
    // Two seals of one value differ (a fresh IV each time).
    assert.notStrictEqual(SecretKeyring.seal(SecretKeyring.make([a]), "x", "c"), SecretKeyring.seal(SecretKeyring.make([a]), "x", "c"))
  })

  it("reads keys as base64, base64url or hex of 32 bytes, and nothing else", () => {
    const bytes = randomBytes(32)
    const ids = [bytes.toString("base64"), bytes.toString("base64url"), bytes.toString("hex")].map((t) => key(t).id)
    assert.strictEqual(new Set(ids).size, 1)
    for (const bad of ["", "short", randomBytes(16).toString("base64"), randomBytes(33).toString("hex")]) {
      assert.isTrue(Either.isLeft(SecretKeyring.parseKey(bad)), bad)
    }
  })
})

describe("migration 0011", () => {
  it.scoped("seals the clear webhook secrets written before it, and refuses clear ones after", () =>
    Effect.gen(function*() {
      const database = yield* emptyDatabase
      const sql = yield* Effect.provide(SqlClient.SqlClient, database)
      yield* Effect.provide(migrateUpTo(10), database)
      const [account] = yield* sql<{ id: string }>`
        INSERT INTO accounts (email, company) VALUES ('old@shop.kz', 'Old') RETURNING id`
      yield* sql`
        INSERT INTO webhook_endpoints (account_id, url, secret, previous_secret, enabled, created_at, updated_at)
        VALUES (${account!.id}, 'https://example.com/hook', 'whsec_current', 'whsec_previous', true, now(), now())`

      // Without the key the migration cannot seal them and stops rather than leave them clear.
      const withoutKey = yield* Effect.exit(Effect.provide(Migrations.run, database))
      assert.isTrue(Exit.isFailure(withoutKey))
      const [still] = yield* sql<{ secret: string }>`SELECT secret FROM webhook_endpoints`
      assert.strictEqual(still!.secret, "whsec_current")

      const ring = SecretKeyring.make([key()])
      yield* Migrations.run.pipe(Effect.provide(database), Effect.provideService(SecretKeyring.SecretKeyring, ring))
      const [row] = yield* sql<{ secret: string; previous_secret: string }>`
        SELECT secret, previous_secret FROM webhook_endpoints`
      const context = SecretKeyring.webhookContext(account!.id)
      for (const [stored, clear] of [[row!.secret, "whsec_current"], [row!.previous_secret, "whsec_previous"]] as const) {
        assert.isTrue(stored.startsWith(`enc:v1:${ring.current.id}:`), stored)
        assert.notInclude(stored, clear)
        assert.deepStrictEqual(SecretKeyring.open(ring, stored, context), Either.right(clear))
      }
      const clearAgain = yield* Effect.exit(sql`UPDATE webhook_endpoints SET secret = 'whsec_clear'`)
      assert.isTrue(Exit.isFailure(clearAgain))
    }), 60_000)
})
