/**
 * The simulated WhatsApp network of this process: which phones have an account, the gateway's
 * numbers as linked devices, the messages it carries and the acks it returns, peers that write
 * first or reply, failures on demand. The simulator driver connects sessions to it; tests and
 * the `/sim/v1` control API drive it.
 *
 * Every step is a synchronous change of the model, so steps never interleave; every delay is on
 * Effect's `Clock` (see SimAgenda), so `TestClock` drives the whole network.
 *
 * @since 1.0.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as SimConfig_ from "./SimConfig.js"
import * as SimDelivery from "./SimDelivery.js"
import * as SimDevice from "./SimDevice.js"
import type { SimNumberState } from "./SimDevice.js"
import { SimUnknownNumber, SimWrongPairingCode, SimWrongState } from "./SimErrors.js"
import type * as SimInbound from "./SimInbound.js"
import { normalizePairingCode } from "./SimLinkCodes.js"
import * as SimLinking from "./SimLinking.js"
import * as SimModel from "./SimModel.js"
import type { AutoReply, FailureRule } from "./SimModel.js"
import type { SimSentMessage } from "./SimSentMessage.js"
import * as SimSession from "./SimSession.js"
import type { DriverEvent, IncomingMessage, Session } from "../WhatsAppDriver.js"

type SimConfig = SimConfig_.SimConfig

export type { AutoReply, FailureRule } from "./SimModel.js"

/** How a connection ends on the network's side. @since 1.0.0 */
export type DisconnectReason = "logged_out" | "connection_lost"

/** @since 1.0.0 */
export interface SimNetworkService {
  /** The settings now in force. */
  readonly config: Effect.Effect<SimConfig>
  /** Changes some settings; messages and link attempts under way keep the timing they started with. */
  readonly updateConfig: (patch: Partial<SimConfig>) => Effect.Effect<SimConfig>
  /** Registers whether a phone has a WhatsApp account (overriding `existsByDefault`). */
  readonly setPhone: (phone: string, exists: boolean) => Effect.Effect<void>
  /** Whether a phone has an account: its registration, else true for a linked number, else `existsByDefault`. */
  readonly exists: (phone: string) => Effect.Effect<boolean>
  /** Trouble for the next messages to `to` (replaces an earlier rule for that phone). */
  readonly failures: (to: string, rule: FailureRule) => Effect.Effect<void>
  /** Makes `peer` answer every message it receives; null stops it. */
  readonly autoReply: (peer: string, reply: AutoReply | null) => Effect.Effect<void>
  /**
   * A peer writes to one of the gateway's numbers. Delivered at once when the number is
   * connected, otherwise queued until it connects.
   */
  readonly inbound: (
    message: SimInbound.InboundMessage
  ) => Effect.Effect<{ readonly message: IncomingMessage; readonly delivered: boolean }>
  /** The phone scans the QR shown now: the number becomes linked and WORKING. */
  readonly scan: (phone: string) => Effect.Effect<SimNumberState, SimUnknownNumber | SimWrongState>
  /** The pairing code is entered on the phone (with or without its dash, any case). */
  readonly pair: (
    phone: string,
    code: string
  ) => Effect.Effect<SimNumberState, SimUnknownNumber | SimWrongState | SimWrongPairingCode>
  /**
   * The network ends the connection. `logged_out`: the device is unlinked and goes STOPPED.
   * `connection_lost`: STARTING, then WORKING again after `reconnectDelayMs`.
   */
  readonly disconnect: (
    phone: string,
    reason: DisconnectReason
  ) => Effect.Effect<SimNumberState, SimUnknownNumber | SimWrongState>
  /**
   * The network restricts the number (what server error 463 means on WhatsApp): it reports a
   * `Restricted` event with the reason and the end of the restriction (null: unknown).
   */
  readonly restrict: (
    phone: string,
    restriction: { readonly reason: string; readonly until: number | null }
  ) => Effect.Effect<void, SimUnknownNumber>
  /** Every number of the gateway the network knows, by phone. */
  readonly numbers: Effect.Effect<ReadonlyArray<SimNumberState>>
  /** One of the gateway's numbers as the network sees it. */
  readonly number: (phone: string) => Effect.Effect<SimNumberState, SimUnknownNumber>
  /** What the network accepted from the gateway's numbers, oldest first: the latest `SimModel.LOG_LIMIT`. */
  readonly sent: (
    filter?: { readonly from?: string | undefined; readonly to?: string | undefined }
  ) => Effect.Effect<ReadonlyArray<SimSentMessage>>
  /**
   * Back to the initial settings, forgetting phones, failures, auto-replies, the log, pending
   * acks and queued messages, and numbers without a session. Numbers with an open session keep
   * it and their link, so a running gateway's entities keep working across test cases.
   */
  readonly reset: Effect.Effect<void>
  /**
   * Connects a session of the number for the scope (what the simulator driver's `open` does).
   * The number is linked if the network linked it in this process, or if `linked` says the
   * gateway linked it before (a restart forgets the network's memory, not the gateway's) and
   * the network did not log it out since. A second session of the same phone replaces the
   * first, which is told so (`STARTING`, replaced) and receives nothing more, unless it is still
   * open when the second closes: then it takes the number back after `reconnectDelayMs`.
   */
  readonly connect: (
    number: SimSession.SessionOwner,
    onEvent: (event: DriverEvent) => Effect.Effect<void>
  ) => Effect.Effect<Session, never, Scope.Scope>
}

/** @since 1.0.0 */
export class SimNetwork extends Context.Tag("@wagate/whatsapp/sim/SimNetwork")<SimNetwork, SimNetworkService>() {}

/**
 * A network with `config` (the defaults where it says nothing), living as long as the scope.
 *
 * @since 1.0.0
 */
export const make = (config: Partial<SimConfig> = {}): Effect.Effect<SimNetworkService, never, Scope.Scope> =>
  Effect.gen(function*() {
    const model = yield* SimModel.make(config)

    const known = (phone: string) =>
      Effect.suspend(() => {
        const device = model.devices.get(phone)
        return device === undefined ? Effect.fail(new SimUnknownNumber({ phone })) : Effect.succeed(device)
      })
    const wrongState = (device: SimDevice.SimDevice, reason: string) =>
      new SimWrongState({ phone: device.phone, status: device.status, reason })

    const scan = Effect.fn("SimNetwork.scan")(function*(phone: string) {
      const device = yield* known(phone)
      if (device.linking !== "qr") return yield* wrongState(device, "no QR code is shown to scan")
      SimLinking.complete(device)
      return SimDevice.snapshot(device)
    })

    const pair = Effect.fn("SimNetwork.pair")(function*(phone: string, code: string) {
      const device = yield* known(phone)
      if (device.linking !== "code") return yield* wrongState(device, "no pairing code is shown")
      if (normalizePairingCode(code) !== device.pairingCode) return yield* new SimWrongPairingCode({ phone })
      SimLinking.complete(device)
      return SimDevice.snapshot(device)
    })

    const restrict = Effect.fn("SimNetwork.restrict")(
      function*(phone: string, restriction: { readonly reason: string; readonly until: number | null }) {
        const device = yield* known(phone)
        SimDevice.deliver(device, { _tag: "Restricted", reason: restriction.reason, until: restriction.until })
      }
    )

    const disconnect = Effect.fn("SimNetwork.disconnect")(function*(phone: string, reason: DisconnectReason) {
      const now = yield* Clock.currentTimeMillis
      const device = yield* known(phone)
      if (!device.linked) return yield* wrongState(device, "the number is not linked")
      if (reason === "logged_out") {
        SimLinking.logOut(device, "logged out from the phone")
      } else if (device.mailbox === null) {
        return yield* wrongState(device, "no session is connected")
      } else {
        SimLinking.loseConnection(model, device, now)
      }
      return SimDevice.snapshot(device)
    })

    return {
      config: Effect.sync(() => model.settings),
      updateConfig: (patch) => Effect.sync(() => model.settings = SimConfig_.update(model.settings, patch)),
      setPhone: (phone, exists) => Effect.sync(() => void model.phones.set(phone, exists)),
      exists: (phone) => Effect.sync(() => SimModel.exists(model, phone)),
      failures: (to, rule) =>
        Effect.sync(() => void model.failureRules.set(to, { mode: rule.mode, remaining: rule.times ?? null })),
      autoReply: (peer, reply) =>
        Effect.sync(() => void (reply === null ? model.autoReplies.delete(peer) : model.autoReplies.set(peer, reply))),
      inbound: (input) =>
        Effect.map(Clock.currentTimeMillis, (now) => SimDelivery.receive(model, input, now)).pipe(
          Effect.withSpan("SimNetwork.inbound", { attributes: { to: input.to, from: input.from } })
        ),
      scan,
      pair,
      disconnect,
      restrict,
      numbers: Effect.sync(() => Array.from(model.devices.values(), SimDevice.snapshot)),
      number: (phone) => Effect.map(known(phone), SimDevice.snapshot),
      sent: (filter = {}) =>
        Effect.sync(() =>
          model.log
            .filter((e) => (filter.from === undefined || e.from === filter.from) && (filter.to === undefined || e.to === filter.to))
            .map((e) => ({ ...e }))
        ),
      reset: Effect.sync(() => {
        model.agenda.dropMessages()
        model.settings = model.initial
        model.phones.clear()
        model.failureRules.clear()
        model.autoReplies.clear()
        model.log.length = 0
        model.logged.clear()
        for (const [phone, device] of model.devices) {
          if (device.mailbox === null) {
            device.generation++
            model.devices.delete(phone)
          } else {
            device.pending = []
          }
        }
      }),
      connect: (number, onEvent) => SimSession.connect(model, number, onEvent)
    } satisfies SimNetworkService
  })

/**
 * The network as a layer, with `config` over the defaults.
 *
 * @since 1.0.0
 */
export const layer = (config: Partial<SimConfig> = {}): Layer.Layer<SimNetwork> => Layer.scoped(SimNetwork, make(config))
