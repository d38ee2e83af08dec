/**
 * Which WhatsApp Web version the driver announces. WhatsApp refuses logins (405) from versions
 * that fall too far behind, all numbers at once, so the current version is fetched at start and
 * then daily (with a short time limit), and the last one fetched is kept in the database for
 * the next start. `WA_VERSION` overrides it; Baileys' built-in version is the last fallback.
 *
 * @since 1.0.0
 */
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { AuthStoreService } from "./AuthStore.js"
import type { BaileysSettings } from "./BaileysSettings.js"
import type { LatestVersion } from "./BaileysSocket.js"

/** @since 1.0.0 */
export type Version = readonly [number, number, number]

/** @since 1.0.0 */
export interface WaVersion {
  /** The version to announce now; null: Baileys' built-in one. */
  readonly current: () => Version | null
  /** Fetches the current version now (keeps the last good one when that fails). */
  readonly refresh: Effect.Effect<void>
  /** Done when the first fetch at start has answered or given up. */
  readonly ready: Effect.Effect<void>
}

/** The key under which the last fetched version is kept. @since 1.0.0 */
export const STORE_KEY = "wa_web_version"

const parse = (text: string | null): Version | null => {
  if (text === null) return null
  const parts = text.split(".").map(Number)
  return parts.length === 3 && parts.every((p) => Number.isInteger(p) && p >= 0) ? [parts[0]!, parts[1]!, parts[2]!] : null
}

/**
 * The version source for the driver's scope: loads the stored version, then fetches the
 * current one in the background at once and every `versionRefreshMs`.
 *
 * @since 1.0.0
 */
export const make = (
  settings: Pick<BaileysSettings, "version" | "versionRefreshMs" | "versionFetchTimeoutMs">,
  latest: LatestVersion,
  store: AuthStoreService
): Effect.Effect<WaVersion, never, Scope.Scope> =>
  Effect.gen(function*() {
    const override = settings.version
    if (override !== null) return { current: () => override, refresh: Effect.void, ready: Effect.void }
    let known = parse(yield* store.getValue(STORE_KEY))
    const refresh = Effect.gen(function*() {
      const found = yield* Effect.tryPromise(() => latest(AbortSignal.timeout(settings.versionFetchTimeoutMs))).pipe(
        Effect.timeout(Duration.millis(settings.versionFetchTimeoutMs + 1_000)),
        Effect.option
      )
      if (found._tag === "None" || !found.value.isLatest) {
        const why = found._tag === "None" ? "no answer" : found.value.error ?? "not found"
        // The reason without its class name: an unreachable network is expected here, not a fault.
        const reason = why instanceof Error ? why.message : String(why)
        return yield* Effect.logWarning(
          `could not fetch the current WhatsApp Web version (${reason}); announcing ${known?.join(".") ?? "Baileys' own"}`
        )
      }
      const version = found.value.version
      if (known !== null && known.join(".") === version.join(".")) return
      known = version
      yield* store.setValue(STORE_KEY, version.join("."))
      yield* Effect.logInfo(`announcing WhatsApp Web version ${version.join(".")}`)
    }).pipe(Effect.withSpan("WaVersion.refresh"))
    const first = yield* Deferred.make<void>()
    yield* Effect.forkScoped(
      Effect.zipRight(
        Effect.ensuring(refresh, Deferred.succeed(first, undefined)),
        Effect.forever(Effect.zipRight(Effect.sleep(Duration.millis(settings.versionRefreshMs)), refresh))
      )
    )
    return { current: () => known, refresh, ready: Deferred.await(first) }
  })
