/**
 * Which phone a LID identity belongs to, learned from messages that carry both (`remoteJidAlt`,
 * `participantAlt`), from Baileys' `lid-mapping.update` and history mappings, and kept in the
 * number's auth state in Baileys' own format (kind `lid-mapping`: `<phone>` -> `<lid>` and
 * `<lid>_reverse` -> `<phone>`), so Baileys and the driver share one durable mapping that
 * survives restarts and moves.
 *
 * @since 1.0.0
 */
import type { SignalKeyStore } from "@whiskeysockets/baileys"
import * as Effect from "effect/Effect"
import * as Jids from "./Jids.js"

/** @since 1.0.0 */
export interface LidMap {
  /** Records that `lid` is `phone` (JIDs or bare users). */
  readonly remember: (pairs: ReadonlyArray<{ readonly lid: string; readonly phone: string }>) => Effect.Effect<void>
  /** The phone (digits) of a LID, if known. */
  readonly phoneOf: (lid: string) => Effect.Effect<string | null>
  /** The LID (`<lid>@lid`) of a phone, if known. */
  readonly lidOf: (phone: string) => Effect.Effect<string | null>
}

/**
 * `learned` hears of every pair stored (`<lid>@lid`, phone digits), after it is stored: the
 * entity merges a person seen before only by its LID into the phone's chat.
 *
 * @since 1.0.0
 */
export const make = (
  keys: () => SignalKeyStore,
  learned: (pairs: ReadonlyArray<{ readonly lid: string; readonly phone: string }>) => Effect.Effect<void> = () =>
    Effect.void
): LidMap => {
  // A few recent answers; the key store caches the rest.
  const known = new Map<string, string>()
  const note = (key: string, value: string) => {
    if (known.size >= 256) known.delete(known.keys().next().value!)
    known.set(key, value)
  }
  const lookup = (id: string) =>
    Effect.suspend(() => {
      const hit = known.get(id)
      if (hit !== undefined) return Effect.succeed<string | null>(hit)
      return Effect.map(
        Effect.promise(() => Promise.resolve(keys().get("lid-mapping", [id]))),
        (found) => {
          const value = found[id]
          if (typeof value !== "string") return null
          note(id, value)
          return value
        }
      )
    }).pipe(Effect.catchAllDefect(() => Effect.succeed(null)))

  return {
    remember: (pairs) =>
      Effect.gen(function*() {
        const data: Record<string, string> = {}
        const fresh: Array<{ lid: string; phone: string }> = []
        for (const pair of pairs) {
          const lid = Jids.userOf(pair.lid)
          const phone = Jids.userOf(pair.phone)
          if (lid === "" || phone === "" || known.get(`${lid}_reverse`) === phone) continue
          if (data[`${lid}_reverse`] === undefined) fresh.push({ lid: `${lid}@lid`, phone })
          data[phone] = lid
          data[`${lid}_reverse`] = phone
        }
        if (fresh.length === 0) return
        yield* Effect.promise(() => Promise.resolve(keys().set({ "lid-mapping": data })))
        for (const [key, value] of Object.entries(data)) note(key, value)
        yield* learned(fresh)
      }).pipe(Effect.catchAllDefect((defect) => Effect.logWarning("could not store a LID mapping", defect))),
    phoneOf: (lid) => lookup(`${Jids.userOf(lid)}_reverse`),
    lidOf: (phone) => Effect.map(lookup(Jids.userOf(phone)), (lid) => lid === null ? null : `${lid}@lid`)
  }
}
