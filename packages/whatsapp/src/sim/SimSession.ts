/**
 * A number's session on the simulated network: attaching it to the number's device (the
 * simulator driver's `open`), the `Session` operations, and detaching it when its scope closes.
 *
 * @since 1.0.0
 */
import * as Clock from "effect/Clock"
import * as Traced from "@wagate/domain/Traced"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as SimDelivery from "./SimDelivery.js"
import * as SimDevice from "./SimDevice.js"
import * as SimLinking from "./SimLinking.js"
import * as SimMailbox from "./SimMailbox.js"
import * as SimModel from "./SimModel.js"
import * as SimOutgoing from "./SimOutgoing.js"
import { type DriverEvent, DriverUnavailable, type OutgoingMessage, type SendRejected, type Session } from "../WhatsAppDriver.js"

/** Who opens a session: the number's phone, and whether the gateway linked it before. @since 1.0.0 */
export interface SessionOwner {
  readonly phone: string
  readonly linked?: boolean | undefined
}

/**
 * Connects a session of the number for the scope. See `SimNetworkService.connect`.
 *
 * @since 1.0.0
 */
export const connect = (
  model: SimModel.SimModel,
  owner: SessionOwner,
  onEvent: (event: DriverEvent) => Effect.Effect<void>
): Effect.Effect<Session, never, Scope.Scope> =>
  Effect.gen(function*() {
    const mailbox = yield* SimMailbox.make(owner.phone, onEvent)
    const device = yield* Effect.sync(() => attach(model, owner, mailbox))
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        detach(model, device, mailbox, now)
        // What the session already received is handled before it is gone (an ack is stored, not
        // dropped); what it could not handle in time reaches the number's next session.
        const left = yield* mailbox.drain(DRAIN_LIMIT)
        SimDevice.redeliver(device, left)
      })
    )
    return make(model, device, mailbox)
  }).pipe(Effect.withSpan("SimNetwork.connect", { attributes: { phone: owner.phone } }))

/**
 * How long a closing session goes on handing over the events it had received: enough for a
 * database under load to store them; what is left then goes back to the network.
 *
 * @since 1.0.0
 */
export const DRAIN_LIMIT = "10 seconds"

/** What a session that a newer one replaced is told (it hears nothing else until it is back). */
export const REPLACED = "replaced by another session of this device"

const attach = (model: SimModel.SimModel, owner: SessionOwner, mailbox: SimMailbox.SimMailbox) => {
  const device = SimModel.deviceOf(model, owner.phone)
  // The network's memory dies with the process, the gateway's does not; a logout the network
  // saw still wins, as revoked credentials would on the real network.
  if (owner.linked === true && !device.loggedOut) device.linked = true
  // A newer session replaces an older one, which is told so and hears nothing more; if it is
  // still open when the newer one closes, it takes the device back (see `detach`). Without that,
  // a session opened late by a number's previous owner (a runner that lost the number's shard
  // while it was connecting) and then closed would leave the number with no session at all,
  // while its current owner believed it connected.
  const previous = device.mailbox
  if (previous !== null && previous !== mailbox) {
    previous.offer({ _tag: "Connection", status: "STARTING", reason: REPLACED })
    device.replaced.push(previous)
  }
  device.replaced = device.replaced.filter((m) => m !== mailbox)
  device.mailbox = mailbox
  device.linking = null
  device.generation++
  device.sessions++
  if (device.linked) {
    SimDevice.setStatus(device, "STARTING")
    SimDevice.setStatus(device, "WORKING")
  } else {
    SimDevice.setStatus(device, SimDevice.restStatus(device), device.loggedOut ? { reason: "logged out" } : {})
  }
  return device
}

const detach = (model: SimModel.SimModel, device: SimDevice.SimDevice, mailbox: SimMailbox.SimMailbox, now: number) => {
  // A replaced session that closes waits for the device no more.
  device.replaced = device.replaced.filter((m) => m !== mailbox)
  if (device.mailbox !== mailbox) return
  device.mailbox = null
  const generation = ++device.generation
  if (device.linking !== null) {
    // Linking happens in a session: without it, the QR or code is gone.
    device.linking = null
    SimDevice.setStatus(device, SimDevice.restStatus(device))
  }
  // The newest session this one replaced, if still open, connects again in a moment.
  const waiting = device.replaced.at(-1)
  if (waiting === undefined) return
  model.agenda.schedule(now + model.settings.reconnectDelayMs, "connection", () => {
    if (device.generation === generation && device.mailbox === null && device.replaced.includes(waiting)) {
      attach(model, { phone: device.phone }, waiting)
    }
  })
}

const make = (model: SimModel.SimModel, device: SimDevice.SimDevice, mailbox: SimMailbox.SimMailbox): Session => {
  const closed = () => new DriverUnavailable({ reason: "the session is closed" })
  const unavailable = (): DriverUnavailable | null =>
    device.mailbox !== mailbox
      ? closed()
      : device.status !== "WORKING"
      ? new DriverUnavailable({ reason: `the number is not connected (status ${device.status})` })
      : null
  const spanned = (name: string, attributes: Record<string, unknown>) =>
    Traced.span(`SimNetwork.${name}`, { attributes: { phone: device.phone, ...attributes } })
  const handOver = Effect.fnUntraced(function*(message: OutgoingMessage) {
    const notNow = unavailable()
    if (notNow !== null) return yield* notNow
    // The file is read as it would be uploaded; the network keeps a copy only for a recipient
    // that is a number of the gateway.
    const held = yield* SimOutgoing.read(message, model.devices.get(message.to)?.linked === true)
    const now = yield* Clock.currentTimeMillis
    const notAfter = unavailable()
    if (notAfter !== null) return yield* notAfter
    const rejected: SendRejected | null = SimDelivery.accept(model, device, held, now)
    if (rejected !== null) return yield* rejected
  })
  return {
    link: (method) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        Effect.suspend(() => {
          if (device.mailbox !== mailbox) return Effect.fail(closed())
          SimLinking.start(model, device, method, now)
          return Effect.void
        })).pipe(spanned("link", { method: method.kind })),
    send: (message) => handOver(message).pipe(spanned("send", { to: message.to })),
    exists: (phone) =>
      Effect.suspend(() => {
        const notNow = unavailable()
        return notNow !== null
          ? Effect.fail(notNow)
          : Effect.succeed({ exists: SimModel.exists(model, phone), chatId: `${phone}@c.us` })
      }),
    logout: Effect.sync(() => {
      if (device.mailbox === mailbox) SimLinking.logOut(device, "logged out")
    })
  }
}
