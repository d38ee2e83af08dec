/**
 * Subjects of the groups the number is in: all of them primed in one query when the connection
 * opens (`groupFetchAllParticipating`), kept up to date from WhatsApp's `groups.update` and
 * `groups.upsert`, and only the subject is kept (never the member lists, which can be large).
 * A message of a group not known yet fetches its subject once; a subject older than the time to
 * trust it is served as it is and refreshed in the background, never on the event path.
 *
 * @since 1.0.0
 */
import type { GroupMetadata } from "@whiskeysockets/baileys"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

/** @since 1.0.0 */
export interface GroupSubjects {
  /** The subject, fetched with `fetch` when unknown (refreshed in the background when stale); null when it cannot be had. */
  readonly subjectOf: (
    jid: string,
    fetch: (jid: string) => Promise<GroupMetadata>
  ) => Effect.Effect<string | null>
  /** What WhatsApp reported (`groups.upsert`, `groups.update`). */
  readonly update: (groups: ReadonlyArray<Partial<GroupMetadata>>) => Effect.Effect<void>
  /** Every group's subject at once, from `groupFetchAllParticipating` (one query), in the background. */
  readonly prime: (fetchAll: () => Promise<{ readonly [jid: string]: GroupMetadata }>) => Effect.Effect<void>
}

/** Group subjects remembered per number at most. */
const LIMIT = 2000

/** @since 1.0.0 */
export const make = (
  options: { readonly ttlMs: number; readonly timeoutMs: number; readonly scope: Scope.Scope }
): GroupSubjects => {
  const entries = new Map<string, { readonly subject: string | null; readonly at: number }>()
  const refreshing = new Set<string>()
  const put = (jid: string, subject: string | null, at: number) => {
    entries.delete(jid)
    entries.set(jid, { subject, at })
    if (entries.size > LIMIT) entries.delete(entries.keys().next().value!)
  }
  const fetchOne = (jid: string, fetch: (jid: string) => Promise<GroupMetadata>) =>
    Effect.tryPromise(() => fetch(jid)).pipe(
      Effect.timeout(Duration.millis(options.timeoutMs)),
      Effect.option
    )
  const upsert = (groups: Iterable<Partial<GroupMetadata>>, now: number) => {
    for (const g of groups) {
      if (typeof g.id === "string" && typeof g.subject === "string") put(g.id, g.subject, now)
    }
  }
  return {
    subjectOf: (jid, fetch) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const hit = entries.get(jid)
        if (hit !== undefined) {
          if (now - hit.at >= options.ttlMs && !refreshing.has(jid)) {
            refreshing.add(jid)
            yield* Effect.forkIn(
              Effect.flatMap(fetchOne(jid, fetch), (fetched) =>
                Effect.sync(() => {
                  if (fetched._tag === "Some") put(jid, fetched.value.subject ?? null, now)
                  else put(jid, hit.subject, now)
                })).pipe(Effect.ensuring(Effect.sync(() => refreshing.delete(jid)))),
              options.scope
            )
          }
          return hit.subject
        }
        const fetched = yield* fetchOne(jid, fetch)
        if (fetched._tag === "None") return null
        put(jid, fetched.value.subject ?? null, now)
        return fetched.value.subject ?? null
      }),
    update: (groups) => Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => upsert(groups, now))),
    prime: (fetchAll) =>
      Effect.forkIn(
        Effect.gen(function*() {
          const all = yield* Effect.tryPromise(fetchAll).pipe(Effect.timeout(Duration.millis(options.timeoutMs)))
          upsert(Object.values(all), yield* Clock.currentTimeMillis)
        }).pipe(Effect.catchAll((e) => Effect.logDebug("could not prime group subjects", e))),
        options.scope
      ).pipe(Effect.asVoid)
  }
}
