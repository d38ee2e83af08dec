/**
 * A {@link SimNetworkService} that is a standalone simulator process reached over the loopback
 * (`WA_SIM_URL`): the simulator driver and the `/sim/v1` control API work on it unchanged, and
 * every runner shares the one network, which outlives any of them.
 *
 * @since 1.0.0
 */
import * as NodeSocket from "@effect/platform-node/NodeSocket"
import * as RpcClient from "@effect/rpc/RpcClient"
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as SimOutgoing from "./SimOutgoing.js"
import { SimUnknownNumber, SimWrongPairingCode, SimWrongState } from "./SimErrors.js"
import { SimNetwork, type SimNetworkService } from "./SimNetwork.js"
import { DRAIN_LIMIT } from "./SimSession.js"
import {
  type DriverEvent,
  DriverUnavailable,
  fileOf,
  type IncomingMessage,
  readAll,
  SendRejected,
  type Session
} from "../WhatsAppDriver.js"
import type * as SimProtocol from "./SimProtocol.js"
import { SimRpcs, type WireUnknownNumber, type WireWrongPairingCode, type WireWrongState } from "./SimProtocol.js"

/** The path the standalone simulator serves its protocol at (a WebSocket). @since 1.0.0 */
export const RPC_PATH = "/sim/rpc"

const control = (error: WireUnknownNumber | WireWrongState | WireWrongPairingCode) => {
  switch (error._tag) {
    case "SimUnknownNumber":
      return new SimUnknownNumber({ phone: error.phone })
    case "SimWrongState":
      return new SimWrongState({ phone: error.phone, status: error.status, reason: error.reason })
    case "SimWrongPairingCode":
      return new SimWrongPairingCode({ phone: error.phone })
  }
}

const incoming = (wire: typeof SimProtocol.Incoming.Type): IncomingMessage => ({
  ...wire,
  media: wire.media === null ? null : {
    mimeType: wire.media.mimeType,
    filename: wire.media.filename,
    size: wire.media.size,
    download: fileOf(wire.media.bytes)
  }
})

const driverEvent = (wire: typeof SimProtocol.Event.Type): DriverEvent =>
  wire._tag === "Incoming" ? { _tag: "Incoming", message: incoming(wire.message) } : wire

/** What reaches a session's handler, in order: the network's events, the stream lost, the end of a drain. */
type Arrived =
  | { readonly _tag: "Event"; readonly event: typeof SimProtocol.Event.Type }
  | { readonly _tag: "Lost" }
  | { readonly _tag: "Drained"; readonly done: Deferred.Deferred<void> }

/** @since 1.0.0 */
export const make = Effect.gen(function*() {
  const client = yield* RpcClient.make(SimRpcs)
  const unavailable = (reason: string) => new DriverUnavailable({ reason })
  /** An incoming message or an ack handled (stored, or kept for a retry): the network may forget it. */
  const received = (phone: string, event: typeof SimProtocol.Event.Type) =>
    event._tag === "Incoming"
      ? Effect.ignore(client.Received({ phone, waMessageId: event.message.waMessageId }))
      : event._tag === "Ack"
      ? Effect.ignore(client.Received({ phone, waMessageId: event.waMessageId, ack: event.ack }))
      : Effect.void
  const session = (
    phone: string,
    linked: boolean | undefined,
    onEvent: (event: DriverEvent) => Effect.Effect<void>
  ) =>
    Effect.gen(function*() {
      const opened = yield* Deferred.make<number>()
      // The session on the network now; a new one after the stream was lost.
      let id = 0
      // What arrived, waiting for the number's handler: taken off the wire as it comes, so a
      // session that closes can still hand over all it received (below).
      const inbox = yield* Queue.unbounded<Arrived>()
      // Confirmations on their way: the next event does not wait for one (a round trip to the
      // simulator for each ack would hold up the number's events, its connection's included).
      const confirming = yield* FiberSet.make<void>()
      yield* Queue.take(inbox).pipe(
        Effect.flatMap((arrived) => {
          switch (arrived._tag) {
            case "Event":
              return Effect.zipRight(onEvent(driverEvent(arrived.event)), FiberSet.run(confirming, received(phone, arrived.event)))
            case "Lost":
              return onEvent({ _tag: "Connection", status: "STARTING", reason: "the connection to the network was lost" })
            case "Drained":
              return Deferred.succeed(arrived.done, undefined)
          }
        }),
        Effect.forever,
        Effect.forkScoped
      )
      const receiving = yield* client.Connect({ phone, linked }).pipe(
        Stream.runForEach((item) =>
          item._tag === "Opened"
            ? Effect.zipRight(Effect.sync(() => {
              id = item.session
            }), Deferred.succeed(opened, item.session))
            : Queue.offer(inbox, { _tag: "Event", event: item.event })
        ),
        Effect.catchAllCause((cause) => Effect.logWarning("simulator: the session's stream ended", cause)),
        // Lost while the number's entity still holds it (the socket to the simulator dropped, or
        // the simulator detached it): the entity hears so, and the session is opened again, as a
        // WhatsApp connection reconnects on its own.
        Effect.zipRight(Effect.whenEffect(Queue.offer(inbox, { _tag: "Lost" }), Deferred.isDone(opened))),
        Effect.zipRight(Effect.sleep("1 second")),
        Effect.forever,
        Effect.annotateLogs({ phone }),
        Effect.forkScoped
      )
      // Runs before the handler is stopped: the session leaves the network, then what it had
      // received is handed over (within DRAIN_LIMIT; what is not, the network keeps for the
      // number's next session, unconfirmed).
      yield* Effect.addFinalizer(() =>
        Effect.gen(function*() {
          yield* Fiber.interrupt(receiving)
          const done = yield* Deferred.make<void>()
          yield* Queue.offer(inbox, { _tag: "Drained", done })
          // Handed over and confirmed, so the number's next session does not get them again.
          yield* Effect.timeoutOption(
            Effect.interruptible(Effect.zipRight(Deferred.await(done), FiberSet.awaitEmpty(confirming))),
            DRAIN_LIMIT
          )
        })
      )
      yield* Deferred.await(opened)
      return {
        link: (method) =>
          client.Link({ session: id, method: method.kind }).pipe(
            Effect.mapError((e) => e._tag === "DriverUnavailable" ? unavailable(e.reason) : unavailable(String(e)))
          ),
        send: (message) =>
          Effect.flatMap(SimOutgoing.toWire(message), (wire) => client.Send({ session: id, message: wire })).pipe(
            Effect.mapError((e) =>
              e instanceof SendRejected || e instanceof DriverUnavailable
                ? e
                : e._tag === "SendRejected"
                ? new SendRejected({ reason: e.reason })
                : e._tag === "DriverUnavailable"
                ? unavailable(e.reason)
                : unavailable("the simulator is unreachable")
            )
          ),
        exists: (other) =>
          client.SessionExists({ session: id, phone: other }).pipe(
            Effect.mapError((e) => e._tag === "DriverUnavailable" ? unavailable(e.reason) : unavailable(String(e)))
          ),
        logout: Effect.orDie(client.Logout({ session: id }))
      } satisfies Session
    })

  return {
    config: Effect.orDie(client.Config()),
    updateConfig: (patch) => Effect.orDie(client.UpdateConfig({ patch })),
    setPhone: (phone, exists) => Effect.orDie(client.SetPhone({ phone, exists })),
    exists: (phone) => Effect.orDie(client.Exists({ phone })),
    failures: (to, rule) => Effect.orDie(client.Failures({ to, mode: rule.mode, times: rule.times })),
    autoReply: (peer, reply) => Effect.orDie(client.AutoReply({ peer, reply })),
    inbound: (input) =>
      Effect.flatMap(
        // The protocol carries a file's bytes: a downloaded one is read first.
        input.media === undefined || "bytes" in input.media
          ? Effect.succeed(input as SimProtocol.InboundPayload)
          : Effect.map(readAll(input.media.download), (bytes) => ({
            ...input,
            media: { mimeType: input.media!.mimeType, filename: input.media!.filename, bytes }
          })),
        (payload) => client.Inbound(payload)
      ).pipe(
        Effect.orDie,
        Effect.map(({ delivered, message }) => ({ delivered, message: incoming(message) }))
      ),
    scan: (phone) =>
      client.Scan({ phone }).pipe(
        Effect.catchTag("RpcClientError", Effect.die),
        Effect.mapError(control)
      ) as Effect.Effect<typeof SimProtocol.NumberState.Type, SimUnknownNumber | SimWrongState>,
    pair: (phone, code) =>
      client.Pair({ phone, code }).pipe(Effect.catchTag("RpcClientError", Effect.die), Effect.mapError(control)),
    disconnect: (phone, reason) =>
      client.Disconnect({ phone, reason }).pipe(
        Effect.catchTag("RpcClientError", Effect.die),
        Effect.mapError(control)
      ) as Effect.Effect<typeof SimProtocol.NumberState.Type, SimUnknownNumber | SimWrongState>,
    restrict: (phone, restriction) =>
      client.Restrict({ phone, ...restriction }).pipe(
        Effect.catchTag("RpcClientError", Effect.die),
        Effect.mapError(control)
      ) as Effect.Effect<void, SimUnknownNumber>,
    numbers: Effect.orDie(client.Numbers()),
    number: (phone) =>
      client.Number({ phone }).pipe(
        Effect.catchTag("RpcClientError", Effect.die),
        Effect.mapError(control)
      ) as Effect.Effect<typeof SimProtocol.NumberState.Type, SimUnknownNumber>,
    sent: (filter = {}) => Effect.orDie(client.SentLog({ from: filter.from, to: filter.to })),
    reset: Effect.orDie(client.Reset()),
    connect: (owner, onEvent) => session(owner.phone, owner.linked, onEvent)
  } satisfies SimNetworkService
})

/**
 * The network of the standalone simulator at `url` (`http://host:port`), over one WebSocket
 * that is opened again when it drops.
 *
 * @since 1.0.0
 */
export const layer = (url: string): Layer.Layer<SimNetwork> =>
  Layer.scoped(SimNetwork, make).pipe(
    Layer.provide(
      RpcClient.layerProtocolSocket({ retryTransientErrors: true, retrySchedule: Schedule.spaced("250 millis") })
    ),
    Layer.provide(NodeSocket.layerWebSocket(`${url.replace(/^http/, "ws").replace(/\/$/, "")}${RPC_PATH}`)),
    Layer.provide(RpcSerialization.layerMsgPack)
  )
