/**
 * A process that stops as the gateway does (NodeRuntime.runMain with the gateway's shutdown
 * bound) while something in it never finishes stopping, as a stuck entity does: it holds a port
 * (as the runner port) and a finalizer that never ends. Started by shutdown.test.ts.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createServer } from "node:net"
import * as Shutdown from "../../../apps/gateway/src/Shutdown.js"

const port = Number(process.argv[2])
const timeoutMs = Number(process.argv[3])

const Stuck = Layer.scopedDiscard(Effect.gen(function*() {
  const server = createServer()
  yield* Effect.async<void>((resume) => void server.listen(port, "127.0.0.1", () => resume(Effect.void)))
  // Stopping waits for this for ever, like an entity whose termination never completes.
  yield* Effect.addFinalizer(() => Effect.never)
  process.stdout.write("ready\n")
}))

NodeRuntime.runMain(Layer.launch(Layer.merge(Stuck, Shutdown.layer(timeoutMs))))
