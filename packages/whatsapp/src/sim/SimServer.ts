/**
 * The standalone simulator's side of {@link SimRpcs}: every call runs on the one network of the
 * process. A session lives as long as the stream of its `Connect` call: a runner that closes it,
 * stops or dies detaches the session, as a phone's linked device goes offline.
 *
 * @since 1.0.0
 */
import * as Effect from "effect/Effect"
import * as Mailbox from "effect/Mailbox"
import * as Scope from "effect/Scope"
import * as SimOutgoing from "./SimOutgoing.js"
import { SimNetwork } from "./SimNetwork.js"
import type { SimUnknownNumber, SimWrongPairingCode, SimWrongState } from "./SimErrors.js"
import { type DriverEvent, type DriverUnavailable, type LinkRefused, readAll, type SendRejected, type Session } from "../WhatsAppDriver.js"
import type * as SimProtocol from "./SimProtocol.js"
import {
  SimRpcs,
  WireSendRejected,
  WireUnavailable,
  WireUnknownNumber,
  WireWrongPairingCode,
  WireWrongState
} from "./SimProtocol.js"

const control = (error: SimUnknownNumber | SimWrongState | SimWrongPairingCode) => {
  switch (error._tag) {
    case "SimUnknownNumber":
      return new WireUnknownNumber({ phone: error.phone })
    case "SimWrongState":
      return new WireWrongState({ phone: error.phone, status: error.status, reason: error.reason })
    case "SimWrongPairingCode":
      return new WireWrongPairingCode({ phone: error.phone })
  }
}

const unknownNumber = (error: SimUnknownNumber) => new WireUnknownNumber({ phone: error.phone })

const unavailable = (error: DriverUnavailable | LinkRefused) => new WireUnavailable({ reason: error.reason })

const driverError = (error: SendRejected | DriverUnavailable) =>
  error._tag === "SendRejected"
    ? new WireSendRejected({ reason: error.reason })
    : new WireUnavailable({ reason: error.reason })

/** A driver event with its file, if any, read so it can travel. */
const wireEvent = (event: DriverEvent): Effect.Effect<typeof SimProtocol.Event.Type> => {
  if (event._tag !== "Incoming") return Effect.succeed(event)
  const { media, ...message } = event.message
  if (media === null) return Effect.succeed({ _tag: "Incoming", message: { ...message, media: null } })
  return readAll(media.download).pipe(
    Effect.orDie,
    Effect.map((bytes) => ({
      _tag: "Incoming" as const,
      message: { ...message, media: { mimeType: media.mimeType, filename: media.filename, size: media.size, bytes } }
    }))
  )
}

/** The key of an incoming message, or of one ack of a sent message, among those kept. */
const keyOf = (waMessageId: string, ack?: string) => ack === undefined ? waMessageId : `${waMessageId} ${ack}`

/** @since 1.0.0 */
export const layerHandlers = SimRpcs.toLayer(Effect.gen(function*() {
  const network = yield* SimNetwork
  const sessions = new Map<number, Session>()
  /**
   * Incoming messages and acks handed to a runner and not yet confirmed stored, by phone and
   * `keyOf` (a message's acks are kept one by one).
   */
  const unreceived = new Map<string, Map<string, typeof SimProtocol.SessionItem.Type>>()
  let nextSession = 0
  const session = (id: number) =>
    Effect.suspend(() => {
      const found = sessions.get(id)
      return found === undefined
        ? Effect.fail(new WireUnavailable({ reason: "the session is closed" }))
        : Effect.succeed(found)
    })

  return SimRpcs.of({
    Config: () => network.config,
    UpdateConfig: ({ patch }) => network.updateConfig(patch),
    SetPhone: ({ exists, phone }) => network.setPhone(phone, exists),
    Exists: ({ phone }) => network.exists(phone),
    Failures: ({ mode, times, to }) => network.failures(to, { mode, times }),
    AutoReply: ({ peer, reply }) => network.autoReply(peer, reply),
    Inbound: (input) =>
      Effect.flatMap(network.inbound(input), ({ delivered, message }) =>
        Effect.map(wireEvent({ _tag: "Incoming", message }), (event) => ({
          delivered,
          message: (event as Extract<typeof event, { _tag: "Incoming" }>).message
        }))),
    Scan: ({ phone }) => Effect.mapError(network.scan(phone), control),
    Pair: ({ code, phone }) => Effect.mapError(network.pair(phone, code), control),
    Disconnect: ({ phone, reason }) => Effect.mapError(network.disconnect(phone, reason), control),
    Restrict: ({ phone, reason, until }) => Effect.mapError(network.restrict(phone, { reason, until }), unknownNumber),
    Numbers: () => network.numbers,
    Number: ({ phone }) => Effect.mapError(network.number(phone), unknownNumber),
    SentLog: (filter) => network.sent(filter),
    Reset: () => network.reset,
    Connect: ({ linked, phone }, { clientId }) =>
      Effect.gen(function*() {
        const mailbox = yield* Mailbox.make<typeof SimProtocol.SessionItem.Type>()
        // The session's scope is the stream's: it closes when the runner ends the call or goes away.
        const scope = yield* Effect.scope
        const id = ++nextSession
        let waiting = unreceived.get(phone)
        if (waiting === undefined) {
          waiting = new Map()
          unreceived.set(phone, waiting)
        }
        const kept = waiting
        // What an earlier session of the number got but never confirmed (its runner died, or it
        // closed with events still on their way) comes first.
        const redelivered = [...kept.values()]
        yield* mailbox.offer({ _tag: "Opened", session: id })
        for (const item of redelivered) yield* mailbox.offer(item)
        const opened = yield* network.connect(
          { phone, linked },
          (event) =>
            Effect.flatMap(wireEvent(event), (wire) => {
              const item = { _tag: "Event", event: wire } as const
              if (wire._tag === "Incoming") kept.set(keyOf(wire.message.waMessageId), item)
              else if (wire._tag === "Ack") kept.set(keyOf(wire.waMessageId, wire.ack), item)
              return mailbox.offer(item)
            })
        ).pipe(Scope.extend(scope))
        sessions.set(id, opened)
        // Which runner (connection) holds which session, for the reader of a number's history.
        yield* Effect.logDebug(`${phone}: session ${id} opened by client ${clientId}`)
        yield* Scope.addFinalizer(
          scope,
          Effect.zipRight(Effect.sync(() => sessions.delete(id)), Effect.logDebug(`${phone}: session ${id} closed`))
        )
        return mailbox
      }),
    Link: ({ method, session: id }) =>
      Effect.flatMap(session(id), (s) => Effect.mapError(s.link({ kind: method }), unavailable)),
    Send: ({ message, session: id }) => Effect.flatMap(session(id), (s) => Effect.mapError(s.send(SimOutgoing.fromWire(message)), driverError)),
    SessionExists: ({ phone, session: id }) =>
      Effect.flatMap(session(id), (s) => Effect.mapError(s.exists(phone), unavailable)),
    Logout: ({ session: id }) => Effect.flatMap(session(id), (s) => s.logout).pipe(Effect.catchAll(() => Effect.void)),
    Received: ({ ack, phone, waMessageId }) => Effect.sync(() => unreceived.get(phone)?.delete(keyOf(waMessageId, ack)))
  })
}))
