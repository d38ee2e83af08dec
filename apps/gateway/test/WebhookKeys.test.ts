/**
 * Where the key that seals webhook secrets comes from: WEBHOOK_SECRET_KEY (with older keys that
 * still open), else a key file generated once in DATA_DIR (0600); a cluster process refuses to
 * start without the shared key.
 */
import { assert, describe, it } from "@effect/vitest"
import * as SecretKeyring from "@wagate/store/SecretKeyring"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type GatewaySettings, settings } from "../src/Config.js"
import * as WebhookKeys from "../src/infra/WebhookKeys.js"

const ring = (overrides: Partial<GatewaySettings>) =>
  Effect.gen(function*() {
    const base = yield* settings
    return yield* Effect.provide(SecretKeyring.SecretKeyring, WebhookKeys.layer({ ...base, ...overrides }))
  })
const id = (text: string) => Either.getOrThrow(SecretKeyring.parseKey(text)).id

describe("the webhook secret key", () => {
  it.effect("is generated once into DATA_DIR/webhook-secret-key, readable by its owner only", () =>
    Effect.gen(function*() {
      const dataDir = join(mkdtempSync(join(tmpdir(), "wagate-keys-")), "data")
      const first = yield* ring({ dataDir, webhookSecretKey: Option.none() })
      const file = join(dataDir, "webhook-secret-key")
      assert.strictEqual(statSync(file).mode & 0o777, 0o600)
      assert.strictEqual(first.current.id, id(readFileSync(file, "utf8")))
      assert.strictEqual((yield* ring({ dataDir, webhookSecretKey: Option.none() })).current.id, first.current.id)
      // A second line only opens: the rotation of a key kept in the file.
      const next = SecretKeyring.generateKey()
      writeFileSync(file, `${next}\n${readFileSync(file, "utf8")}`)
      const rotated = yield* ring({ dataDir, webhookSecretKey: Option.none() })
      assert.deepStrictEqual(rotated.keys.map((k) => k.id), [id(next), first.current.id])
    }))

  it.effect("comes from WEBHOOK_SECRET_KEY, with WEBHOOK_SECRET_KEYS_OLD still opening", () =>
    Effect.gen(function*() {
      const [current, old] = [SecretKeyring.generateKey(), SecretKeyring.generateKey()]
      const keys = yield* ring({
        dataDir: mkdtempSync(join(tmpdir(), "wagate-keys-")),
        webhookSecretKey: Option.some(Redacted.make(current)),
        webhookSecretKeysOld: [Redacted.make(old)]
      })
      assert.deepStrictEqual(keys.keys.map((k) => k.id), [id(current), id(old)])
      const bad = yield* Effect.exit(ring({ webhookSecretKey: Option.some(Redacted.make("too-short")) }))
      assert.isTrue(Exit.isFailure(bad) && /WEBHOOK_SECRET_KEY: a key is 32 bytes/.test(String(bad.cause)))
    }))

  it.effect("is required by api and runner processes, which must share it", () =>
    Effect.gen(function*() {
      for (const role of ["api", "runner"] as const) {
        const exit = yield* Effect.exit(ring({ role, dataDir: mkdtempSync(join(tmpdir(), "wagate-keys-")), webhookSecretKey: Option.none() }))
        assert.isTrue(Exit.isFailure(exit) && /WEBHOOK_SECRET_KEY is required with WAGATE_ROLE/.test(String(exit.cause)), role)
      }
    }))
})
