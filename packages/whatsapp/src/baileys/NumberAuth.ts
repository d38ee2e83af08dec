/**
 * One number's Baileys auth state over a storage backend: the credentials and a signal key store
 * whose writes are durable before they are acknowledged.
 *
 * - Writes go through one writer per number, in the order they were made, so a later value of a
 *   key always wins; writes waiting together are committed in one transaction (group commit).
 *   `keys.set` resolves only after its transaction committed; if it fails, the promise rejects
 *   (Baileys then does not acknowledge the message to WhatsApp, which delivers it again).
 * - Reads see every write already made, committed or not (a value being written is served from
 *   memory), then a bounded cache of committed values, then the database.
 * - `reset` removes everything of the number (logged out, or linking again) in the same order.
 * - WhatsApp's refusal of the credentials (a 401, a 411) or of the account (a 402 with its end,
 *   a 403, a 406) is stored beside them, so a session opened later (another runner, a restart)
 *   knows it too; `reset` forgets it with them.
 *
 * @since 1.0.0
 */
import type { AuthenticationCreds, AuthenticationState, SignalDataSet, SignalDataTypeMap, SignalKeyStore } from "@whiskeysockets/baileys"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Queue from "effect/Queue"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import * as AuthCodec from "./AuthCodec.js"

/** One change, applied in order within its transaction. @since 1.0.0 */
export type WriteOp =
  | { readonly _tag: "Keys"; readonly rows: ReadonlyArray<KeyRow> }
  | { readonly _tag: "Creds"; readonly json: string }
  | { readonly _tag: "Reset" }

/** A key's new JSON value, or null to delete it. @since 1.0.0 */
export interface KeyRow {
  readonly kind: string
  readonly id: string
  readonly json: string | null
}

/** Where a number's state lives (PostgreSQL, or memory for tests). @since 1.0.0 */
export interface AuthBackend {
  readonly readCreds: (numberId: number) => Effect.Effect<string | null, unknown>
  readonly readKeys: (
    numberId: number,
    kind: string,
    ids: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<{ readonly id: string; readonly json: string }>, unknown>
  /** Applies the ops in order, all or none. */
  readonly write: (numberId: number, ops: ReadonlyArray<WriteOp>) => Effect.Effect<void, unknown>
}

/**
 * WhatsApp refused these credentials: logged out from the phone (401, one more try left until a
 * second one) or a multi-device mismatch (411, only a new link helps); or the account: refused
 * or banned (403, 406), or banned until `until` (402).
 *
 * @since 1.0.0
 */
export interface Refusal {
  readonly code: number
  readonly reason: string
  /** When (epoch ms). */
  readonly at: number
  /** A temporary ban's end (epoch ms): no connection before it; one by itself after it. */
  readonly until?: number
}

/** @since 1.0.0 */
export interface NumberAuth {
  /** What a socket is made with; `creds` is replaced by `reset`. */
  readonly state: AuthenticationState
  /** The phone linked this device (the credentials carry its signature). */
  readonly isLinked: () => boolean
  /** Persists the credentials as they are now, after every write made before. */
  readonly saveCreds: Effect.Effect<void>
  /**
   * The same, synchronously: the credentials as they are at this instant are queued behind every
   * write made before (for `creds.update`, which Baileys emits inside its key transactions, so
   * the credentials commit with or before the keys and before they are uploaded to WhatsApp).
   */
  readonly saveCredsNow: () => void
  /** Forgets the number's credentials and keys (stored and cached); fresh credentials in memory. */
  readonly reset: Effect.Effect<void>
  /** WhatsApp's last refusal of these credentials, if any (forgotten by `reset` and `refuse(null)`). */
  readonly refusal: () => Refusal | null
  /** Stores WhatsApp's refusal of these credentials (null: they were taken after all). */
  readonly refuse: (refusal: Refusal | null) => Effect.Effect<void>
}

/** Committed values kept per number; older ones are read again from storage. */
const CACHE_LIMIT = 500
/** Most ops committed in one transaction. */
const BATCH_LIMIT = 64

interface Pending {
  readonly op: WriteOp
  readonly done: Deferred.Deferred<void, unknown>
}

const slot = (kind: string, id: string) => `${kind}\u0000${id}`

/**
 * The auth state of `numberId` for the scope; when the scope closes, writes already made are
 * finished first and later ones are refused.
 *
 * @since 1.0.0
 */
export const make = (backend: AuthBackend, numberId: number): Effect.Effect<NumberAuth, never, Scope.Scope> =>
  Effect.gen(function*() {
    const runtime = yield* Effect.runtime<never>()
    const runPromise = Runtime.runPromise(runtime)
    const runFork = Runtime.runFork(runtime)
    const stored = yield* backend.readCreds(numberId).pipe(Effect.orDie)
    const refused = yield* backend.readKeys(numberId, AuthCodec.REFUSED, [""]).pipe(Effect.orDie)
    let refusal: Refusal | null = refused.length === 0 ? null : JSON.parse(refused[0]!.json) as Refusal
    // Values written but not committed yet (with the write that set them), and committed ones.
    let version = 0
    const inFlight = new Map<string, { readonly version: number; readonly json: string | null }>()
    const cache = new Map<string, string | null>()
    /** Resets made and not yet committed: until then, nothing stored before them may be read. */
    let resetting = 0
    let resets = 0
    const remember = (key: string, json: string | null) => {
      cache.delete(key)
      cache.set(key, json)
      if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value!)
    }

    const queue = yield* Queue.unbounded<Pending>()
    let closed = false

    const commit = (batch: ReadonlyArray<Pending>) =>
      Effect.gen(function*() {
        const all = yield* Effect.exit(backend.write(numberId, batch.map((p) => p.op)))
        if (Exit.isSuccess(all) || batch.length === 1) {
          for (const p of batch) yield* Deferred.done(p.done, all)
          return
        }
        // One bad op must not fail the others it was batched with: apply them one by one.
        for (const p of batch) yield* Deferred.done(p.done, yield* Effect.exit(backend.write(numberId, [p.op])))
      }).pipe(Effect.uninterruptible)

    const writer = Effect.forever(
      Effect.flatMap(Queue.take(queue), (first) =>
        Effect.flatMap(Queue.takeUpTo(queue, BATCH_LIMIT - 1), (rest) => commit([first, ...rest])))
    )
    const fiber = yield* Effect.forkDaemon(writer)
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        closed = true
        // The batch being committed finishes first (it is uninterruptible).
        yield* Fiber.interrupt(fiber)
        const left = yield* Queue.takeAll(queue)
        if (left.length > 0) yield* commit([...left])
        yield* Queue.shutdown(queue)
      })
    )

    const submit = (op: WriteOp): Effect.Effect<void, unknown> =>
      Effect.suspend(() => {
        if (closed) return Effect.fail(new Error(`auth state of number ${numberId} is closed`))
        return Effect.flatMap(Deferred.make<void, unknown>(), (done) =>
          Effect.zipRight(Queue.offer(queue, { op, done }), Deferred.await(done)))
      })

    const keys: SignalKeyStore = {
      get: <T extends keyof SignalDataTypeMap>(kind: T, ids: Array<string>) =>
        runPromise(Effect.gen(function*() {
          const found: { [id: string]: SignalDataTypeMap[T] } = {}
          const missing: Array<string> = []
          for (const id of ids) {
            const key = slot(kind, id)
            const json = inFlight.has(key) ? inFlight.get(key)!.json : cache.get(key)
            if (json === undefined) missing.push(id)
            else if (json !== null) found[id] = AuthCodec.decodeKey(kind, json)
          }
          if (missing.length === 0 || resetting > 0) return found
          const before = resets
          const rows = yield* backend.readKeys(numberId, kind, missing).pipe(Effect.orDie)
          // Read across a reset: what was read is gone.
          if (resets !== before) return found
          const byId = new Map(rows.map((r) => [r.id, r.json]))
          for (const id of missing) {
            const key = slot(kind, id)
            // A write made while we read wins over what we read.
            if (inFlight.has(key)) {
              const json = inFlight.get(key)!.json
              if (json !== null) found[id] = AuthCodec.decodeKey(kind, json)
              continue
            }
            const json = byId.get(id) ?? null
            remember(key, json)
            if (json !== null) found[id] = AuthCodec.decodeKey(kind, json)
          }
          return found
        })),
      set: (data: SignalDataSet) => {
        const rows: Array<KeyRow> = []
        for (const kind of Object.keys(data) as Array<keyof SignalDataSet>) {
          const values = data[kind] ?? {}
          for (const id of Object.keys(values)) {
            const value = values[id]
            rows.push({ kind, id, json: value === null || value === undefined ? null : AuthCodec.encode(value) })
          }
        }
        if (rows.length === 0) return Promise.resolve()
        const mine = ++version
        for (const r of rows) inFlight.set(slot(r.kind, r.id), { version: mine, json: r.json })
        const settle = (ok: boolean) =>
          Effect.sync(() => {
            for (const r of rows) {
              const key = slot(r.kind, r.id)
              if (inFlight.get(key)?.version !== mine) continue
              inFlight.delete(key)
              if (ok) remember(key, r.json)
              else cache.delete(key)
            }
          })
        return runPromise(submit({ _tag: "Keys", rows }).pipe(
          Effect.tapBoth({ onFailure: () => settle(false), onSuccess: () => settle(true) })
        ))
      }
    }
    const state: { creds: AuthenticationCreds; keys: SignalKeyStore } = { creds: AuthCodec.decodeCreds(stored), keys }

    return {
      state,
      isLinked: () => AuthCodec.isLinked(state.creds),
      saveCreds: Effect.suspend(() => submit({ _tag: "Creds", json: AuthCodec.encode(state.creds) })).pipe(Effect.orDie),
      saveCredsNow: () => {
        if (closed) return
        const done = Deferred.unsafeMake<void, unknown>(FiberId.none)
        Queue.unsafeOffer(queue, { op: { _tag: "Creds", json: AuthCodec.encode(state.creds) }, done })
        runFork(Deferred.await(done).pipe(
          Effect.catchAll((error) => Effect.logError(`number ${numberId}: could not save the credentials`, error))
        ))
      },
      reset: Effect.suspend(() => {
        inFlight.clear()
        cache.clear()
        resetting++
        resets++
        state.creds = AuthCodec.decodeCreds(null)
        refusal = null
        return submit({ _tag: "Reset" }).pipe(Effect.ensuring(Effect.sync(() => resetting--)))
      }).pipe(Effect.orDie),
      refusal: () => refusal,
      refuse: (next) =>
        Effect.suspend(() => {
          if (next === refusal) return Effect.void
          refusal = next
          const json = next === null ? null : JSON.stringify(next)
          return submit({ _tag: "Keys", rows: [{ kind: AuthCodec.REFUSED, id: "", json }] })
        }).pipe(Effect.orDie)
    }
  })
