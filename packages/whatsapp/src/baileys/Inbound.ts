/**
 * What reaches a session from WhatsApp besides the connection: messages (`messages.upsert`),
 * delivery reports of the number's own messages, LID mappings and group subjects, handed to the
 * entity as the port's events.
 *
 * @since 1.0.0
 */
import { proto, type WAMessage } from "@whiskeysockets/baileys"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import { DriverUnavailable } from "../WhatsAppDriver.js"
import * as Acks from "./Acks.js"
import * as IncomingMessages from "./IncomingMessages.js"
import { messageOf, now, type SessionContext, timed } from "./SessionContext.js"
import type { SocketSignal } from "./SocketEvents.js"

/**
 * Messages this device could not decrypt (Baileys' `CIPHERTEXT` stubs), each attempt: not stored,
 * as most arrive again with their content under the same id; those that never do are seen here.
 *
 * @since 1.0.0
 */
export const undecryptable = Metric.counter("wagate_undecryptable_messages", {
  description: "Incoming messages this device could not decrypt (each attempt; most arrive again decrypted)",
  incremental: true
})

const notDecrypted = (ctx: SessionContext, m: WAMessage) =>
  Effect.zipRight(
    Metric.increment(undecryptable),
    Effect.logDebug(
      `number ${ctx.number.id}: message ${m.key.id} from ${m.key.remoteJid} could not be decrypted ` +
        `(${m.messageStubParameters?.[0] ?? "no reason given"}); not stored until it arrives decrypted`
    )
  )

/** New messages: each one to store becomes an `Incoming` event, in order. @since 1.0.0 */
export const upsert = (ctx: SessionContext, messages: ReadonlyArray<WAMessage>) =>
  Effect.forEach(messages, (m) =>
    Effect.gen(function*() {
      const { settings, state } = ctx
      const incoming = yield* IncomingMessages.toIncoming(m, {
        lids: ctx.lids,
        groups: ctx.groups,
        fetchGroup: (jid) => state.socket === null ? Promise.reject(new Error("not connected")) : state.socket.groupMetadata(jid),
        download: (message) => {
          const failure = (e: unknown) => new DriverUnavailable({ reason: `media download failed: ${messageOf(e)}` })
          return Effect.gen(function*() {
            const s = state.socket
            if (s === null) return yield* new DriverUnavailable({ reason: "the number is not connected" })
            // The time limit is for WhatsApp to start answering; the bytes then flow at their pace.
            // Waiting for that answer can be interrupted (the entity closing must not wait for it);
            // a stream that arrives after that is closed at once.
            const started = ctx.deps.factory.download(s, message)
            const readable = yield* Effect.acquireRelease(
              Effect.interruptible(timed(() => started, settings.queryTimeoutMs * 3)).pipe(
                Effect.onInterrupt(() => Effect.sync(() => void started.then((f) => f.destroy(), () => {}))),
                Effect.mapError(failure)
              ),
              (file) => Effect.sync(() => file.destroy())
            )
            return { readable, failure }
          })
        },
        now: now(ctx)
      })
      if (incoming !== null) yield* ctx.onEvent({ _tag: "Incoming", message: incoming })
      else if (m.messageStubType === proto.WebMessageInfo.StubType.CIPHERTEXT) yield* notDecrypted(ctx, m)
    }), { discard: true })

/**
 * A send refused with 463 may mean a restricted account, or only a missing trusted-contact
 * token for that contact: WhatsApp is asked (off the event path), and its answer comes back
 * as `reachoutTimeLock` on the connection, which restricts the number only when the lock is
 * active, until the end it gives.
 */
const askTimelock = (ctx: SessionContext) =>
  Effect.suspend(() => {
    const s = ctx.state.socket
    if (s === null) return Effect.void
    return Effect.forkIn(
      timed(() => s.fetchAccountReachoutTimelock(), ctx.settings.queryTimeoutMs).pipe(
        Effect.catchAll((e) =>
          Effect.logWarning(`number ${ctx.number.id}: could not ask WhatsApp for the reach-out time lock: ${messageOf(e)}`)
        )
      ),
      ctx.scope
    )
  })

/** Delivery reports, LID mappings and group changes. @since 1.0.0 */
export const other = (
  ctx: SessionContext,
  s: Extract<SocketSignal, { _tag: "Updates" | "Receipts" | "Lids" | "Groups" }>
): Effect.Effect<void> => {
  switch (s._tag) {
    case "Updates":
      return Effect.zipRight(
        Effect.forEach(Acks.fromUpdates(s.updates), ctx.onEvent, { discard: true }),
        Acks.hasRestrictedFailure(s.updates) ? askTimelock(ctx) : Effect.void
      )
    case "Receipts":
      return Effect.forEach(Acks.fromReceipts(s.receipts), ctx.onEvent, { discard: true })
    case "Lids":
      return ctx.lids.remember(s.pairs)
    case "Groups":
      return ctx.groups.update(s.groups)
  }
}
