/**
 * Where the Baileys driver keeps each number's credentials and signal keys, the messages it sent
 * (WhatsApp asks for them again when a recipient could not decrypt one) and its own few settings
 * (the WhatsApp Web version last fetched): PostgreSQL (`PgAuthStore.layer`, the only store a
 * running gateway uses, so a number can start on any runner and nothing touches local disk) or
 * memory (`layerMemory`, for tests).
 *
 * @since 1.0.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as NumberAuth from "./NumberAuth.js"

/** The driver's own rows besides the auth state. @since 1.0.0 */
export interface DriverRows {
  readonly getValue: (key: string) => Effect.Effect<string | null>
  readonly setValue: (key: string, value: string) => Effect.Effect<void>
  /** Keeps the message Baileys built for a send (protobuf bytes), under the id it went out with. */
  readonly saveSent: (numberId: number, waMessageId: string, proto: Uint8Array) => Effect.Effect<void>
  readonly findSent: (numberId: number, waMessageId: string) => Effect.Effect<Uint8Array | null>
  /** Forgets sent messages kept since before `before`; how many. */
  readonly pruneSent: (before: Date) => Effect.Effect<number>
}

/** @since 1.0.0 */
export interface AuthStoreService extends DriverRows {
  /** The number's auth state for the scope (see `NumberAuth`). */
  readonly open: (numberId: number) => Effect.Effect<NumberAuth.NumberAuth, never, Scope.Scope>
}

/** @since 1.0.0 */
export class AuthStore extends Context.Tag("@wagate/whatsapp/baileys/AuthStore")<AuthStore, AuthStoreService>() {}

/** @since 1.0.0 */
export const fromBackend = (backend: NumberAuth.AuthBackend & DriverRows): AuthStoreService => ({
  open: (numberId) => NumberAuth.make(backend, numberId),
  getValue: backend.getValue,
  setValue: backend.setValue,
  saveSent: backend.saveSent,
  findSent: backend.findSent,
  pruneSent: backend.pruneSent
})

/**
 * Rows in memory, as the database would hold them (JSON text), with the same all-or-nothing
 * writes; `rows` lets a test look inside.
 *
 * @since 1.0.0
 */
export const memoryBackend = (): NumberAuth.AuthBackend & DriverRows & {
  readonly rows: Map<number, Map<string, string>>
  readonly values: Map<string, string>
  readonly sent: Map<string, { readonly proto: Uint8Array; readonly at: number }>
} => {
  const rows = new Map<number, Map<string, string>>()
  const values = new Map<string, string>()
  const sent = new Map<string, { readonly proto: Uint8Array; readonly at: number }>()
  const of = (numberId: number) => {
    let table = rows.get(numberId)
    if (table === undefined) rows.set(numberId, table = new Map())
    return table
  }
  const slot = (kind: string, id: string) => `${kind}/${id}`
  return {
    rows,
    values,
    sent,
    getValue: (key) => Effect.sync(() => values.get(key) ?? null),
    setValue: (key, value) => Effect.sync(() => void values.set(key, value)),
    saveSent: (numberId, id, proto) => Effect.sync(() => void sent.set(`${numberId}/${id}`, { proto, at: Date.now() })),
    findSent: (numberId, id) => Effect.sync(() => sent.get(`${numberId}/${id}`)?.proto ?? null),
    pruneSent: (before) =>
      Effect.sync(() => {
        let n = 0
        for (const [k, v] of sent) if (v.at < before.getTime()) n += Number(sent.delete(k))
        return n
      }),
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
