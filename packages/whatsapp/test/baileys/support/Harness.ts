/**
 * The Baileys driver on fake sockets and auth state in memory, with helpers to open sessions,
 * let every fiber (and promise) run, and move the TestClock.
 */
import { initAuthCreds } from "@whiskeysockets/baileys"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/TestClock"
import * as BaileysDriver from "../../../src/BaileysDriver.js"
import * as AuthCodec from "../../../src/baileys/AuthCodec.js"
import * as AuthStore from "../../../src/baileys/AuthStore.js"
import type { BaileysSettings } from "../../../src/baileys/BaileysSettings.js"
import { WhatsAppDriver } from "../../../src/WhatsAppDriver.js"
import * as Recorder from "../../support/Recorder.js"
import * as FakeSocket from "./FakeSocket.js"

export const PHONE = "77011234567"

export const make = (settings: Partial<BaileysSettings> = {}) => {
  const fake = FakeSocket.make()
  const backend = AuthStore.memoryBackend()
  const layer = BaileysDriver.layerTest(settings).pipe(
    Layer.provide(fake.layer),
    Layer.provide(Layer.succeed(AuthStore.AuthStore, AuthStore.fromBackend(backend)))
  )
  return { fake, backend, layer }
}

export type Harness = ReturnType<typeof make>

/** The same driver after a restart: a new process (nothing in memory), the same stored state. */
export const restarted = (h: Harness, settings: Partial<BaileysSettings> = {}): Harness => {
  const fake = FakeSocket.make()
  const layer = BaileysDriver.layerTest(settings).pipe(
    Layer.provide(fake.layer),
    Layer.provide(Layer.succeed(AuthStore.AuthStore, AuthStore.fromBackend(h.backend)))
  )
  return { fake, backend: h.backend, layer }
}

/** Lets every fiber run and every settled promise deliver, without moving the clock. */
export const flush = Effect.gen(function*() {
  for (let i = 0; i < 8; i++) {
    yield* TestClock.adjust(0)
    yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
  }
})

/** Moves the clock by `ms`, then lets everything due run. */
export const advance = (ms: number) => Effect.zipRight(TestClock.adjust(ms), flush)

/** Credentials of a device the phone linked, stored for `numberId`. */
export const storeLinked = (h: Harness, numberId: number, phone = PHONE) => {
  const creds = initAuthCreds()
  creds.me = { id: `${phone}:7@s.whatsapp.net`, name: "Shop" }
  creds.account = { details: Buffer.from([1]), accountSignature: Buffer.alloc(64, 1) }
  h.backend.rows.set(numberId, new Map([["creds/", AuthCodec.encode(creds)]]))
}

export const credsOf = (h: Harness, numberId: number) => {
  const json = h.backend.rows.get(numberId)?.get("creds/")
  return json === undefined ? null : AuthCodec.decodeCreds(json)
}

export interface Opened {
  readonly session: WhatsAppDriver["Type"] extends { open: (...a: any) => Effect.Effect<infer S, any, any> } ? S : never
  readonly rec: Recorder.Recorder
  readonly close: Effect.Effect<void>
}

/** A session of the number in a scope of its own, with a recorder of its events. */
export const open = (
  number: { readonly id: number; readonly phone?: string; readonly linked?: boolean } = { id: 1 },
  rec: Recorder.Recorder = Recorder.make()
) =>
  Effect.gen(function*() {
    const driver = yield* WhatsAppDriver
    const scope = yield* Scope.make()
    const session = yield* Scope.extend(
      driver.open({ id: number.id, phone: number.phone ?? PHONE, linked: number.linked ?? false }, rec.onEvent),
      scope
    )
    yield* flush
    return { session, rec, close: Effect.zipRight(Scope.close(scope, Exit.void), flush) } satisfies Opened
  })

/** Number 1 linked before, its session opened and WORKING, the events so far taken. */
export const working = (h: Harness) =>
  Effect.gen(function*() {
    storeLinked(h, 1)
    const opened = yield* open({ id: 1, linked: true })
    h.fake.latest().open()
    yield* flush
    opened.rec.take()
    return opened
  })
