/**
 * The number's session as its entity holds it: a session given up because the number's shard
 * moved away says nothing more about the connection, but the acks and messages it hands over as
 * it closes are still the number's.
 */
import { assert, describe, it } from "@effect/vitest"
import type { DriverEvent, Session } from "@wagate/whatsapp/WhatsAppDriver"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as HeldSession from "../src/HeldSession.js"

const idle: Session = {
  link: () => Effect.void,
  send: () => Effect.void,
  exists: (phone) => Effect.succeed({ exists: true, chatId: `${phone}@c.us` }),
  logout: Effect.void
}

describe("HeldSession", () => {
  it.scoped("a session given up hands over the acks it had received as it closes; its connection events are dropped", () =>
    Effect.gen(function*() {
      const applied: Array<string> = []
      const closed = yield* Deferred.make<void>()
      // The number's shard moves to another runner while its session opens.
      let moved = false
      const held = yield* HeldSession.make({
        numberId: 1,
        shard: "default:1",
        // As a driver does on close: what the session had received is handed over first.
        open: (onEvent) =>
          Effect.as(
            Effect.addFinalizer(() =>
              Effect.zipRight(
                Effect.zipRight(
                  onEvent({ _tag: "Ack", waMessageId: "M1", ack: "read" }),
                  onEvent({ _tag: "Connection", status: "STARTING", reason: "replaced" })
                ),
                Deferred.succeed(closed, undefined)
              )
            ),
            idle
          ).pipe(Effect.ensuring(Effect.sync(() => void (moved = true)))),
        onEvent: (event: DriverEvent) =>
          Effect.sync(() => void applied.push(event._tag === "Ack" ? `ack ${event.waMessageId} ${event.ack}` : event._tag)),
        movedAway: Effect.sync(() => moved),
        scope: yield* Effect.scope
      })
      yield* held.start
      yield* Deferred.await(closed)
      assert.deepStrictEqual(applied, ["ack M1 read"])
    }))

  it.scoped("an entity whose shard moved on before it started opens no session (the owner's is not replaced); it connects when the shard comes back", () =>
    Effect.gen(function*() {
      let opened = 0
      let moved = true
      const held = yield* HeldSession.make({
        numberId: 1,
        shard: "default:1",
        open: () => Effect.sync(() => (opened++, idle)),
        onEvent: () => Effect.void,
        movedAway: Effect.sync(() => moved),
        scope: yield* Effect.scope
      })
      yield* held.start
      assert.strictEqual(opened, 0)
      moved = false
      yield* held.reclaim
      assert.strictEqual(opened, 1)
    }))
})
