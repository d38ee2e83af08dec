/**
 * The standalone simulator over its wire protocol: a driver on a remote network links, sends and
 * receives exactly as on the in-process one, and closing a session (a runner stopping or dying)
 * detaches it on the network, so another runner can take the number over.
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as RpcSerialization from "@effect/rpc/RpcSerialization"
import * as RpcServer from "@effect/rpc/RpcServer"
import { assert, describe, it } from "@effect/vitest"
import * as HttpServer from "@effect/platform/HttpServer"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { createServer } from "node:http"
import { SimRpcs } from "../../src/sim/SimProtocol.js"
import * as SimRemote from "../../src/sim/SimRemote.js"
import * as SimServer from "../../src/sim/SimServer.js"
import * as SimNetwork from "../../src/sim/SimNetwork.js"
import * as SimulatorDriver from "../../src/sim/SimulatorDriver.js"
import { type DriverEvent, readAll, WhatsAppDriver } from "../../src/WhatsAppDriver.js"

const A = "77010000001"
const PEER = "77779998877"

/** A simulator server on a free loopback port, its network, and a driver reaching it over the wire. */
const remote = Effect.gen(function*() {
  const network = yield* SimNetwork.make({ autoScan: false, deliveredDelayMs: 0, readDelayMs: null })
  const server = yield* Layer.build(
    HttpLayerRouter.serve(
      RpcServer.layerHttpRouter({ group: SimRpcs, path: SimRemote.RPC_PATH, protocol: "websocket" }).pipe(
        Layer.provide(SimServer.layerHandlers),
        Layer.provide(RpcSerialization.layerMsgPack)
      ),
      { disableLogger: true, disableListenLog: true }
    ).pipe(
      Layer.provideMerge(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 0 })),
      Layer.provide(Layer.succeed(SimNetwork.SimNetwork, network))
    )
  )
  const address = Context.get(server, HttpServer.HttpServer).address
  const port = address._tag === "TcpAddress" ? address.port : 0
  const client = yield* Layer.build(
    SimulatorDriver.layer.pipe(Layer.provideMerge(SimRemote.layer(`http://127.0.0.1:${port}`)))
  )
  return { network, driver: Context.get(client, WhatsAppDriver) }
})

const waitFor = <A>(check: () => A | undefined) =>
  Effect.promise(async () => {
    const deadline = Date.now() + 10_000
    for (;;) {
      const value = check()
      if (value !== undefined) return value
      if (Date.now() > deadline) throw new Error("condition never held")
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  })

describe("standalone simulator", () => {
  it.scopedLive("links, sends and receives over the wire, and a closed session detaches on the network", () =>
    Effect.gen(function*() {
      const { driver, network } = yield* remote
      const events: Array<DriverEvent> = []
      const sessionScope = yield* Scope.make()
      const session = yield* driver.open({ id: 1, phone: A, linked: false }, (e) => Effect.sync(() => void events.push(e)))
        .pipe(Scope.extend(sessionScope))
      yield* session.link({ kind: "qr" })
      yield* waitFor(() => events.find((e) => e._tag === "Connection" && e.status === "SCAN_QR_CODE"))
      yield* network.scan(A)
      yield* waitFor(() => events.find((e) => e._tag === "Connection" && e.status === "WORKING"))

      yield* session.send({ waMessageId: "M1", to: PEER, content: { kind: "text", text: "Салем" } })
      const sent = yield* network.sent({ from: A })
      assert.deepStrictEqual(sent.map((m) => [m.waMessageId, m.to, m.text]), [["M1", PEER, "Салем"]])
      yield* waitFor(() => events.find((e) => e._tag === "Ack" && e.waMessageId === "M1" && e.ack === "delivered"))

      yield* network.inbound({
        to: A,
        from: PEER,
        text: "with a file",
        media: { mimeType: "text/plain", filename: "a.txt", bytes: new TextEncoder().encode("hi") }
      })
      const incoming = yield* waitFor(() => events.find((e) => e._tag === "Incoming"))
      assert.strictEqual(incoming._tag === "Incoming" && incoming.message.text, "with a file")
      const media = incoming._tag === "Incoming" ? incoming.message.media : null
      assert.deepStrictEqual(new TextDecoder().decode(yield* readAll(media!.download)), "hi")

      const rejected = yield* Effect.flip(session.send({ waMessageId: "M2", to: PEER, content: { kind: "text", text: "x" } })
        .pipe(Effect.zipRight(network.failures(PEER, { mode: "reject" })), Effect.zipRight(
          session.send({ waMessageId: "M3", to: PEER, content: { kind: "text", text: "y" } })
        )))
      assert.strictEqual(rejected._tag, "SendRejected")

      yield* Scope.close(sessionScope, Exit.void)
      const detached = yield* Effect.gen(function*() {
        for (;;) {
          const state = yield* network.number(A)
          if (!state.sessionOpen) return state
          yield* Effect.sleep("10 millis")
        }
      }).pipe(Effect.timeout("10 seconds"), Effect.orDie)
      assert.strictEqual(detached.linked, true)
    }))

  it.scopedLive("an incoming message its runner never confirmed is handed to the number's next session, a confirmed one is not", () =>
    Effect.gen(function*() {
      const { driver, network } = yield* remote
      // The first runner takes the message and dies before storing it.
      const dying = yield* Scope.make()
      const taken: Array<string> = []
      yield* driver.open({ id: 1, phone: A, linked: true }, (e) =>
        e._tag === "Incoming" ? Effect.zipRight(Effect.sync(() => void taken.push(e.message.text ?? "")), Effect.never) : Effect.void
      ).pipe(Scope.extend(dying))
      yield* network.inbound({ to: A, from: PEER, text: "are you open?" })
      yield* waitFor(() => taken.length > 0 ? true : undefined)
      yield* Scope.close(dying, Exit.void)

      // The runner that takes the number over gets it, and confirms it.
      const next = yield* Scope.make()
      const stored: Array<string> = []
      yield* driver.open({ id: 1, phone: A, linked: true }, (e) =>
        Effect.sync(() => void (e._tag === "Incoming" && stored.push(e.message.text ?? "")))
      ).pipe(Scope.extend(next))
      yield* waitFor(() => stored.length > 0 ? true : undefined)
      assert.deepStrictEqual(stored, ["are you open?"])
      yield* Effect.sleep("200 millis")
      yield* Scope.close(next, Exit.void)

      // Confirmed: a later session does not get it again.
      const later: Array<string> = []
      yield* driver.open({ id: 1, phone: A, linked: true }, (e) =>
        Effect.sync(() => void (e._tag === "Incoming" && later.push(e.message.text ?? "")))
      )
      yield* network.inbound({ to: A, from: PEER, text: "hello?" })
      yield* waitFor(() => later.length > 0 ? true : undefined)
      assert.deepStrictEqual(later, ["hello?"])
    }))

  it.scopedLive("acks its runner never confirmed are handed to the number's next session, each once", () =>
    Effect.gen(function*() {
      const { driver, network } = yield* remote
      // The first runner's session closes while it is storing the delivered ack.
      const closing = yield* Scope.make()
      const taken: Array<string> = []
      const first = yield* driver.open({ id: 1, phone: A, linked: true }, (e) =>
        e._tag !== "Ack" ? Effect.void : Effect.zipRight(
          Effect.sync(() => void taken.push(e.ack)),
          e.ack === "delivered" ? Effect.never : Effect.void
        )
      ).pipe(Scope.extend(closing))
      yield* waitFor(() => Effect.runSync(network.number(A)).status === "WORKING" ? true : undefined)
      yield* first.send({ waMessageId: "M1", to: PEER, content: { kind: "text", text: "Салем" } })
      yield* waitFor(() => taken.includes("delivered") ? true : undefined)
      yield* Scope.close(closing, Exit.void)

      // The runner that takes the number over gets the ack it did not store, and confirms it.
      const next = yield* Scope.make()
      const acks: Array<string> = []
      yield* driver.open({ id: 1, phone: A, linked: true }, (e) =>
        Effect.sync(() => void (e._tag === "Ack" && acks.push(`${e.waMessageId} ${e.ack}`)))
      ).pipe(Scope.extend(next))
      yield* waitFor(() => acks.length > 0 ? true : undefined)
      assert.deepStrictEqual(acks, ["M1 delivered"])
      yield* Effect.sleep("200 millis")
      yield* Scope.close(next, Exit.void)

      // Confirmed: a later session does not get it again.
      const later: Array<string> = []
      yield* driver.open({ id: 1, phone: A, linked: true }, (e) =>
        Effect.sync(() => void (e._tag === "Ack" && later.push(`${e.waMessageId} ${e.ack}`)))
      )
      yield* network.inbound({ to: A, from: PEER, text: "hello?" })
      yield* Effect.sleep("300 millis")
      assert.deepStrictEqual(later, [])
    }))

  it.scopedLive("a session that closes hands over the acks it had received before it is gone, and they are not handed over again", () =>
    Effect.gen(function*() {
      const { driver, network } = yield* remote
      // Storing the sent ack takes a while; the delivered ack arrives meanwhile.
      const stored = yield* Deferred.make<void>()
      const closing = yield* Scope.make()
      const acks: Array<string> = []
      const first = yield* driver.open({ id: 1, phone: A, linked: true }, (e) =>
        e._tag !== "Ack" ? Effect.void : Effect.zipRight(
          Effect.sync(() => void acks.push(`${e.waMessageId} ${e.ack}`)),
          e.ack === "sent" ? Deferred.await(stored) : Effect.void
        )
      ).pipe(Scope.extend(closing))
      yield* waitFor(() => Effect.runSync(network.number(A)).status === "WORKING" ? true : undefined)
      yield* first.send({ waMessageId: "M1", to: PEER, content: { kind: "text", text: "Салем" } })
      yield* waitFor(() => Effect.runSync(network.sent({ from: A }))[0]?.ack === "delivered" ? true : undefined)
      // Time for the delivered ack to cross the wire.
      yield* Effect.sleep("300 millis")
      assert.deepStrictEqual(acks, ["M1 sent"])

      // The runner stops meanwhile: the session closes once both acks are stored.
      const closed = yield* Effect.fork(Scope.close(closing, Exit.void))
      yield* Effect.sleep("100 millis")
      yield* Deferred.succeed(stored, undefined)
      yield* Fiber.join(closed)
      assert.deepStrictEqual(acks, ["M1 sent", "M1 delivered"])

      // Both were stored by it: the number's next session does not get them again.
      yield* Effect.sleep("200 millis")
      const later: Array<string> = []
      yield* driver.open({ id: 1, phone: A, linked: true }, (e) =>
        Effect.sync(() => void (e._tag === "Ack" && later.push(`${e.waMessageId} ${e.ack}`)))
      )
      yield* Effect.sleep("300 millis")
      assert.deepStrictEqual(later, [])
    }))
})
