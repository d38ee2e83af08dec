/**
 * The gateway exactly as `npm start` composes it, with three test hooks inside the number
 * entities: a send whose text is "wedge" never leaves its entity and cannot be interrupted there
 * (an entity whose step never returns); a send whose text is "crash" kills the process with
 * SIGKILL once it is recorded and before its answer goes out; a send whose text is "stray"
 * leaves a failed promise nobody waits for (as a library's stray command would); one whose text
 * is "deprecated" makes Node emit a DeprecationWarning (as pg does). Started by the
 * e2e tests with the gateway's environment.
 */
import { NumberHooks } from "@wagate/numbers/NumberHooks"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { launch, Main } from "../../../apps/gateway/src/main.js"

const hooks = Layer.succeed(NumberHooks, {
  onSend: ({ text }) =>
    text === "wedge"
      ? Effect.uninterruptible(Effect.never)
      : text === "stray"
      ? Effect.sync(() => void Promise.reject(new Error("a stray command failed")))
      : text === "deprecated"
      ? Effect.sync(() => process.emitWarning("this call goes away in the next major", "DeprecationWarning"))
      : Effect.void,
  afterRecord: ({ text }) =>
    text === "crash" ? Effect.zipRight(Effect.sync(() => process.kill(process.pid, "SIGKILL")), Effect.never) : Effect.void
})

launch(Main.pipe(Layer.provide(hooks)))
