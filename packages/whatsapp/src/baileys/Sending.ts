/**
 * Sending a message: it is handed to Baileys under the gateway's id, the message Baileys built
 * is kept (WhatsApp asks for it again when a recipient device could not decrypt it), and the
 * send succeeds only when WhatsApp's server acknowledges it (`<ack class="message">`): a message
 * written to a socket that then dropped was not taken, and stays pending to be re-sent under
 * the same id.
 *
 * @since 1.0.0
 */
import { proto, type WAMessage, type WAMessageKey } from "@whiskeysockets/baileys"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberId from "effect/FiberId"
import * as Runtime from "effect/Runtime"
import { Readable } from "node:stream"
import * as VoiceNote from "../VoiceNote.js"
import { DriverUnavailable, type OutgoingMessage, SendRejected } from "../WhatsAppDriver.js"
import type { BaileysSocket } from "./BaileysSocket.js"
import * as Jids from "./Jids.js"
import * as Outgoing from "./Outgoing.js"
import { type ContactCheck, messageOf, now, type SessionContext, timed } from "./SessionContext.js"

/** WhatsApp's server ack arrived (from the socket's listener, at once). @since 1.0.0 */
export const serverAck = (ctx: SessionContext, id: string, error: string | undefined): void => {
  const waiting = ctx.state.awaitingAck.get(id)
  if (waiting === undefined) return
  ctx.state.awaitingAck.delete(id)
  Deferred.unsafeDone(
    waiting,
    error === undefined || error === ""
      ? Effect.void
      : Effect.fail(new SendRejected({ reason: `refused by WhatsApp (${error})` }))
  )
}

/** The connection is gone: sends still waiting for their ack were not taken. @since 1.0.0 */
export const connectionLost = (ctx: SessionContext): void => {
  for (const waiting of ctx.state.awaitingAck.values()) {
    Deferred.unsafeDone(
      waiting,
      Effect.fail(new DriverUnavailable({ reason: "connection lost before WhatsApp acknowledged the message" }))
    )
  }
  ctx.state.awaitingAck.clear()
}

/** Why a message to a phone without WhatsApp failed; the simulator's words. @since 1.0.0 */
export const NOT_ON_WHATSAPP = "the recipient is not on WhatsApp"

/**
 * Sends `message` on `socket`; succeeds when WhatsApp's server acknowledged it. A message to a
 * phone without WhatsApp is not sent: it succeeds, and fails by an Ack (`unreachable`). A phone
 * WhatsApp knows by other digits is the entity's (`PhoneMapped` handled) before the send
 * succeeds, so what the caller records next (the `sent` ack) is that phone's.
 *
 * @since 1.0.0
 */
export const send = Effect.fnUntraced(function*(ctx: SessionContext, socket: BaileysSocket, message: OutgoingMessage) {
  const { settings, state } = ctx
  const id = message.waMessageId
  const to = yield* destination(ctx, socket, message)
  if (to === null) {
    ctx.signal({ _tag: "NotOnWhatsApp", waMessageId: id })
    return
  }
  const { jid, mapped } = to
  // The file's own error (gone, unreadable) is the send's, not what Baileys makes of a broken stream.
  let readFailure: SendRejected | DriverUnavailable | undefined
  const opened = message.content.kind === "text" ? undefined : yield* message.content.media.open
  const file = opened === undefined ? Readable.from([]) : opened.readable
  file.on("error", (e) => void (readFailure ??= opened?.failure(e)))
  const timeout = message.content.kind === "text" ? settings.sendTimeoutMs : settings.mediaSendTimeoutMs
  const acked = Deferred.unsafeMake<void, SendRejected | DriverUnavailable>(FiberId.none)
  const earlier = state.awaitingAck.get(id)
  if (earlier !== undefined) Deferred.unsafeDone(earlier, Effect.interrupt)
  state.awaitingAck.set(id, acked)
  const start = ctx.clock.unsafeCurrentTimeMillis()
  // A voice note goes out as mono Opus in OGG, encoded while Baileys reads it (every phone plays those).
  const upload = message.content.kind === "voice" ? VoiceNote.toOpus(file) : file
  const sent = yield* timed(
    () => socket.sendMessage(jid, Outgoing.content(message.content, upload), { messageId: id }),
    timeout
  ).pipe(
    Effect.mapError((e) =>
      readFailure ?? (e instanceof VoiceNote.TranscodeFailed ? new SendRejected({ reason: e.message }) : Outgoing.sendFailure(e))
    ),
    Effect.ensuring(Effect.sync(() => {
      file.destroy()
      upload.destroy()
    })),
    Effect.tapError(() => Effect.sync(() => state.awaitingAck.get(id) === acked && state.awaitingAck.delete(id)))
  )
  yield* keep(ctx, sent)
  const left = Math.max(1, timeout - (ctx.clock.unsafeCurrentTimeMillis() - start))
  yield* Deferred.await(acked).pipe(
    Effect.timeoutFail({
      duration: Duration.millis(left),
      onTimeout: () => new DriverUnavailable({ reason: `no server ack from WhatsApp within ${timeout} ms` })
    }),
    Effect.ensuring(Effect.sync(() => state.awaitingAck.get(id) === acked && state.awaitingAck.delete(id)))
  )
  // Taken by WhatsApp whatever comes of this wait: it never fails the send (that would send it again).
  if (mapped !== null) yield* Effect.ignore(Effect.timeout(Deferred.await(mapped), Duration.millis(timeout)))
}, Effect.scoped)

/**
 * Where `message` goes; null when it would reach no one. WhatsApp takes a message for a phone
 * without WhatsApp like any other: Baileys finds no devices of the recipient, encrypts it for
 * the account's own devices only, and the server acks it, so it stays `sent` forever. The first
 * message to a person (a phone, not a LID or a group) is therefore preceded by the contact
 * check, kept as `exists` keeps it; later ones trust the contact, unless a kept answer says the
 * phone has no WhatsApp. A check that fails (no answer, connection trouble) sends the message:
 * a lookup never loses one.
 *
 * A phone WhatsApp knows by other digits (Brazil's ninth digit, Mexico's 521/52) gets the
 * message at the JID WhatsApp answered with, and the entity is told, so that the conversation
 * is that phone's (`PhoneMapped`).
 */
const destination = (
  ctx: SessionContext,
  socket: BaileysSocket,
  message: OutgoingMessage
): Effect.Effect<{ readonly jid: string; readonly mapped: Deferred.Deferred<void> | null } | null> => {
  const jid = Jids.sendJid(message.to)
  if (!Jids.isPhone(jid)) return Effect.succeed({ jid, mapped: null })
  const phone = Jids.userOf(message.to)
  const answer: Effect.Effect<ContactCheck | null> = message.firstContact === true
    ? check(ctx, socket, phone).pipe(
      Effect.catchTag("DriverUnavailable", (e) =>
        Effect.as(Effect.logWarning(`number ${ctx.number.id}: sending ${message.waMessageId} unchecked: ${e.reason}`), null))
    )
    : kept(ctx, phone)
  return Effect.map(answer, (found) => {
    if (found === null) return { jid, mapped: null }
    if (!found.exists) return null
    if (found.user === phone) return { jid, mapped: null }
    const mapped = Deferred.unsafeMake<void>(FiberId.none)
    ctx.signal({ _tag: "PhoneMapped", asked: phone, phone: found.user, done: mapped })
    return { jid: Jids.phoneJid(found.user), mapped }
  })
}

/**
 * The answer kept about a contact's phone, without asking WhatsApp: this process's, or the one in
 * `wa_driver_state` (read once per phone and process, so a restart does not forget that a phone
 * has no WhatsApp, and a known contact's sends cost no read after the first).
 */
const kept = (ctx: SessionContext, phone: string): Effect.Effect<ContactCheck | null> =>
  Effect.suspend(() => {
    const at = now(ctx)
    const seen = fresh(ctx.deps.checked.get(phone), at)
    if (seen !== null || ctx.deps.checked.has(phone)) return Effect.succeed(seen)
    return ctx.deps.store.getValue(`${CHECK_PREFIX}${phone}`).pipe(
      Effect.map((json) => {
        const stored = parseCheck(json)
        // Remembered even when there is none (or it is stale): the next send does not read again.
        remember(ctx, phone, stored ?? { exists: true, user: phone, at: -Infinity })
        return fresh(stored, at)
      }),
      Effect.catchAllCause((cause) =>
        Effect.as(Effect.logWarning(`number ${ctx.number.id}: the kept contact check of ${phone} could not be read`, cause), null))
    )
  })

/** Keeps the message Baileys built, for `getMessage`. */
const keep = (ctx: SessionContext, sent: WAMessage | undefined) =>
  Effect.suspend(() => {
    const id = sent?.key.id
    if (sent?.message === null || sent?.message === undefined || typeof id !== "string") return Effect.void
    const bytes = proto.Message.encode(sent.message).finish()
    return ctx.deps.store.saveSent(ctx.number.id, id, bytes).pipe(
      Effect.catchAllCause((cause) => Effect.logWarning(`number ${ctx.number.id}: could not keep sent message ${id}`, cause))
    )
  })

/**
 * Baileys' `getMessage`: a message this number sent, from the database, for a recipient device
 * that asks for it again (a retry receipt), also after a reconnect or a restart.
 *
 * @since 1.0.0
 */
export const getMessage = (ctx: SessionContext, runtime: Runtime.Runtime<never>) => (key: WAMessageKey) =>
  Runtime.runPromise(runtime)(
    Effect.gen(function*() {
      if (typeof key.id !== "string") return undefined
      const bytes = yield* ctx.deps.store.findSent(ctx.number.id, key.id)
      return bytes === null ? undefined : proto.Message.decode(bytes)
    }).pipe(
      Effect.catchAllCause((cause) =>
        Effect.as(Effect.logWarning(`number ${ctx.number.id}: could not read sent message ${key.id}`, cause), undefined)
      )
    )
  )

/** Whether a phone has WhatsApp, and the JID WhatsApp knows it by. @since 1.0.0 */
export const exists = (ctx: SessionContext, socket: BaileysSocket, phone: string) =>
  Effect.map(check(ctx, socket, phone), (answer) => ({ exists: answer.exists, chatId: Jids.chatOf(answer.user) }))

/** WhatsApp's answer about `phone`: kept, or asked now (and kept). */
const check = Effect.fnUntraced(function*(ctx: SessionContext, socket: BaileysSocket, phone: string) {
  const key = `${CHECK_PREFIX}${phone}`
  const at = now(ctx)
  const cached = fresh(ctx.deps.checked.get(phone), at) ?? fresh(parseCheck(yield* ctx.deps.store.getValue(key)), at)
  if (cached !== null) {
    remember(ctx, phone, cached)
    return cached
  }
  const found = yield* timed(() => socket.onWhatsApp(phone), ctx.settings.queryTimeoutMs).pipe(
    Effect.mapError((e) => new DriverUnavailable({ reason: `contact check failed: ${messageOf(e)}` }))
  )
  // WhatsApp answers with the JID it knows the phone by, which can differ from the digits asked
  // (Brazil's ninth digit, Mexico's 521/52): that one is the chat to write to.
  const hit = found?.find((r) => r.exists)
  const answer: ContactCheck = { exists: hit !== undefined, user: hit === undefined ? phone : Jids.userOf(hit.jid), at }
  yield* ctx.deps.store.setValue(key, JSON.stringify(answer))
  remember(ctx, phone, answer)
  return answer
})

/** A kept answer while it is believed. */
const fresh = (check: ContactCheck | null | undefined, at: number): ContactCheck | null =>
  check !== null && check !== undefined && at - check.at < (check.exists ? CHECK_EXISTS_MS : CHECK_MISSING_MS) ? check : null

const remember = (ctx: SessionContext, phone: string, check: ContactCheck) => {
  if (ctx.deps.checked.size >= 100_000) ctx.deps.checked.clear()
  ctx.deps.checked.set(phone, check)
}

/** Contact checks are kept in the driver's rows under this prefix, for every number. */
const CHECK_PREFIX = "contact-check/"
/** A phone on WhatsApp is believed for 30 days, one that is not for 7 (it may join). @since 1.0.0 */
export const CHECK_EXISTS_MS = 30 * 24 * 3600_000
/** @since 1.0.0 */
export const CHECK_MISSING_MS = 7 * 24 * 3600_000

const parseCheck = (json: string | null): ContactCheck | null => {
  if (json === null) return null
  try {
    const v = JSON.parse(json) as { exists?: unknown; user?: unknown; at?: unknown }
    return typeof v.exists === "boolean" && typeof v.user === "string" && typeof v.at === "number"
      ? { exists: v.exists, user: v.user, at: v.at }
      : null
  } catch {
    return null
  }
}
