/**
 * Subjects of the groups the number is in, fetched once and trusted for a while (and updated
 * when WhatsApp reports a change), so a busy group does not cost a query per message.
 *
 * @since 1.0.0
 */
import type { GroupMetadata } from "@whiskeysockets/baileys"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

/** @since 1.0.0 */
export interface GroupSubjects {
  /** The subject, fetched with `fetch` when unknown or stale; null when it cannot be had. */
  readonly subjectOf: (
    jid: string,
    fetch: (jid: string) => Promise<GroupMetadata>
  ) => Effect.Effect<string | null>
  /** What WhatsApp reported (`groups.upsert`, `groups.update`). */
  readonly update: (groups: ReadonlyArray<Partial<GroupMetadata>>) => Effect.Effect<void>
  /** The metadata already known, for Baileys' `cachedGroupMetadata`. */
  readonly cached: (jid: string) => GroupMetadata | undefined
}

/** Groups remembered per number at most. */
const LIMIT = 200

/** @since 1.0.0 */
export const make = (options: { readonly ttlMs: number; readonly timeoutMs: number }): GroupSubjects => {
  const entries = new Map<string, { readonly meta: GroupMetadata | null; readonly subject: string | null; readonly at: number }>()
  const put = (jid: string, entry: { readonly meta: GroupMetadata | null; readonly subject: string | null; readonly at: number }) => {
    entries.delete(jid)
    entries.set(jid, entry)
    if (entries.size > LIMIT) entries.delete(entries.keys().next().value!)
  }
  return {
    subjectOf: (jid, fetch) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const hit = entries.get(jid)
        if (hit !== undefined && now - hit.at < options.ttlMs) return hit.subject
        const fetched = yield* Effect.tryPromise(() => fetch(jid)).pipe(
          Effect.timeout(Duration.millis(options.timeoutMs)),
          Effect.option
        )
        if (fetched._tag === "None") return hit?.subject ?? null
        put(jid, { meta: fetched.value, subject: fetched.value.subject ?? null, at: now })
        return fetched.value.subject ?? null
      }),
    update: (groups) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.sync(() => {
          for (const g of groups) {
            if (typeof g.id !== "string" || typeof g.subject !== "string") continue
            const meta = entries.get(g.id)?.meta ?? null
            put(g.id, { meta: meta === null ? null : { ...meta, subject: g.subject }, subject: g.subject, at: now })
          }
        })),
    cached: (jid) => entries.get(jid)?.meta ?? undefined
  }
}
