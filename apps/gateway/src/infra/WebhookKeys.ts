/**
 * The key ring that seals webhook secrets at rest: WEBHOOK_SECRET_KEY (and the older keys still
 * accepted, WEBHOOK_SECRET_KEYS_OLD), or a key generated at first start and kept in
 * `<DATA_DIR>/webhook-secret-key` (mode 0600). That file holds one key per line: the first
 * seals, the others only open. Processes of one cluster share the key through the environment:
 * an api or runner process refuses to start without it, since a key of its own would leave the
 * other processes unable to read what it sealed.
 */
import * as SecretKeyring from "@wagate/store/SecretKeyring"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import type { GatewaySettings } from "../Config.js"

export const keyFile = (dataDir: string) => join(dataDir, "webhook-secret-key")

const parse = (text: string, origin: string) =>
  Either.match(SecretKeyring.parseKey(text), {
    onLeft: (e) => Effect.dieMessage(`${origin}: ${e.message}`),
    onRight: Effect.succeed
  })

/** The texts of the keys, the sealing one first, and where they came from. */
const sources = (settings: GatewaySettings) =>
  Effect.gen(function*() {
    const old = settings.webhookSecretKeysOld.map((k) => ({ text: Redacted.value(k), origin: "WEBHOOK_SECRET_KEYS_OLD" }))
    if (Option.isSome(settings.webhookSecretKey)) {
      return [{ text: Redacted.value(settings.webhookSecretKey.value), origin: "WEBHOOK_SECRET_KEY" }, ...old]
    }
    if (settings.role !== "all") {
      return yield* Effect.dieMessage(
        `WEBHOOK_SECRET_KEY is required with WAGATE_ROLE=${settings.role}: every process of a cluster must seal and read webhook secrets with the same key (openssl rand -base64 32)`
      )
    }
    const file = keyFile(settings.dataDir)
    const lines = yield* Effect.sync(() => {
      if (!existsSync(file)) {
        mkdirSync(settings.dataDir, { recursive: true, mode: 0o700 })
        try {
          writeFileSync(file, `${SecretKeyring.generateKey()}\n`, { mode: 0o600, flag: "wx" })
        } catch (e) {
          // Another process of the same DATA_DIR wrote it first: use that one.
          if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e
        }
      }
      chmodSync(file, 0o600)
      return readFileSync(file, "utf8").split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"))
    })
    return [...lines.map((text) => ({ text, origin: file })), ...old]
  })

export const layer = (settings: GatewaySettings) =>
  Layer.effect(
    SecretKeyring.SecretKeyring,
    Effect.gen(function*() {
      const texts = yield* sources(settings)
      const keys = yield* Effect.forEach(texts, (t) => parse(t.text, t.origin))
      if (keys.length === 0) return yield* Effect.dieMessage(`${keyFile(settings.dataDir)} holds no key`)
      return SecretKeyring.make([keys[0]!, ...keys.slice(1)])
    })
  )
