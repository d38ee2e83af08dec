/**
 * The gateway exactly as `npm start` composes it, with one test hook: a send whose text is
 * "wedge" never leaves its number's entity, and cannot be interrupted there (as an entity whose
 * step never returns). Started by shutdown-stuck.test.ts with the gateway's environment.
 */
import { NumberHooks } from "@wagate/numbers/NumberHooks"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { launch, Main } from "../../../apps/gateway/src/main.js"

const wedge = Layer.succeed(NumberHooks, {
  onSend: ({ text }) => (text === "wedge" ? Effect.uninterruptible(Effect.never) : Effect.void),
  afterRecord: () => Effect.void
})

launch(Main.pipe(Layer.provide(wedge)))
