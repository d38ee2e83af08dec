/**
 * What reaches a session from WhatsApp besides the connection: messages (`messages.upsert`),
 * delivery reports of the number's own messages, LID mappings and group subjects, handed to the
 * entity as the port's events.
 *
 * @since 1.0.0
 */
import type { WAMessage } from "@whiskeysockets/baileys"
import * as Effect from "effect/Effect"
import { DriverUnavailable } from "../WhatsAppDriver.js"
import * as Acks from "./Acks.js"
import * as IncomingMessages from "./IncomingMessages.js"
import { messageOf, now, type SessionContext, timed } from "./SessionContext.js"
import type { SocketSignal } from "./SocketEvents.js"

/** New messages: each one to store becomes an `Incoming` event, in order. @since 1.0.0 */
export const upsert = (ctx: SessionContext, messages: ReadonlyArray<WAMessage>) =>
  Effect.forEach(messages, (m) =>
    Effect.gen(function*() {
      const { settings, state } = ctx
      const incoming = yield* IncomingMessages.toIncoming(m, {
        lids: ctx.lids,
        groups: ctx.groups,
        fetchGroup: (jid) => state.socket === null ? Promise.reject(new Error("not connected")) : state.socket.groupMetadata(jid),
        download: (message) =>
          Effect.suspend(() => {
            const s = state.socket
            if (s === null) return Effect.fail(new DriverUnavailable({ reason: "the number is not connected" }))
            return timed(() => ctx.deps.factory.download(s, message), settings.queryTimeoutMs * 3).pipe(
              Effect.mapError((e) => new DriverUnavailable({ reason: `media download failed: ${messageOf(e)}` }))
            )
          }),
        now: now(ctx)
      })
      if (incoming !== null) yield* ctx.onEvent({ _tag: "Incoming", message: incoming })
    }), { discard: true })

/** Delivery reports, LID mappings and group changes. @since 1.0.0 */
export const other = (
  ctx: SessionContext,
  s: Extract<SocketSignal, { _tag: "Updates" | "Receipts" | "Lids" | "Groups" }>
): Effect.Effect<void> => {
  switch (s._tag) {
    case "Updates":
      return Effect.forEach(Acks.fromUpdates(s.updates), ctx.onEvent, { discard: true })
    case "Receipts":
      return Effect.forEach(Acks.fromReceipts(s.receipts), ctx.onEvent, { discard: true })
    case "Lids":
      return ctx.lids.remember(s.pairs)
    case "Groups":
      return ctx.groups.update(s.groups)
  }
}
