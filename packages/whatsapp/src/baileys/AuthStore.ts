/**
 * Where the Baileys driver keeps each number's credentials and signal keys: PostgreSQL
 * (`PgAuthStore.layer`, the only store a running gateway uses, so a number can start on any
 * runner and nothing touches local disk) or memory (`layerMemory`, for tests).
 *
 * @since 1.0.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as NumberAuth from "./NumberAuth.js"

/** @since 1.0.0 */
export interface AuthStoreService {
  /** The number's auth state for the scope (see `NumberAuth`). */
  readonly open: (numberId: number) => Effect.Effect<NumberAuth.NumberAuth, never, Scope.Scope>
}

/** @since 1.0.0 */
export class AuthStore extends Context.Tag("@wagate/whatsapp/baileys/AuthStore")<AuthStore, AuthStoreService>() {}

/** @since 1.0.0 */
export const fromBackend = (backend: NumberAuth.AuthBackend): AuthStoreService => ({
  open: (numberId) => NumberAuth.make(backend, numberId)
})

/**
 * Rows in memory, as the database would hold them (JSON text), with the same all-or-nothing
 * writes; `rows` lets a test look inside.
 *
 * @since 1.0.0
 */
export const memoryBackend = (): NumberAuth.AuthBackend & {
  readonly rows: Map<number, Map<string, string>>
} => {
  const rows = new Map<number, Map<string, string>>()
  const of = (numberId: number) => {
    let table = rows.get(numberId)
    if (table === undefined) rows.set(numberId, table = new Map())
    return table
  }
  const slot = (kind: string, id: string) => `${kind}/${id}`
  return {
    rows,
    readCreds: (numberId) => Effect.sync(() => of(numberId).get(slot("creds", "")) ?? null),
    readKeys: (numberId, kind, ids) =>
      Effect.sync(() =>
        ids.flatMap((id) => {
          const json = of(numberId).get(slot(kind, id))
          return json === undefined ? [] : [{ id, json }]
        })
      ),
    write: (numberId, ops) =>
      Effect.sync(() => {
        const next = new Map(of(numberId))
        for (const op of ops) {
          if (op._tag === "Reset") next.clear()
          else if (op._tag === "Creds") next.set(slot("creds", ""), op.json)
          else {
            for (const r of op.rows) {
              if (r.json === null) next.delete(slot(r.kind, r.id))
              else next.set(slot(r.kind, r.id), r.json)
            }
          }
        }
        rows.set(numberId, next)
      })
  }
}

/** @since 1.0.0 */
export const layerMemory: Layer.Layer<AuthStore> = Layer.sync(AuthStore, () => fromBackend(memoryBackend()))
