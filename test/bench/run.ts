/**
 * Runs the named benchmarks: `npm run bench -- <name> [options]` (see each benchmark's header).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"

const benchmarks: Record<string, (argv: ReadonlyArray<string>) => Effect.Effect<void, unknown>> = {
  messages: (argv) => Effect.flatMap(Effect.promise(() => import("./messages.js")), (m) => m.main(argv)),
  baileys: (argv) => Effect.flatMap(Effect.promise(() => import("./baileys.js")), (m) => m.main(argv)),
  webhooks: (argv) => Effect.flatMap(Effect.promise(() => import("./webhooks.js")), (m) => m.main(argv)),
  media: (argv) => Effect.flatMap(Effect.promise(() => import("./media.js")), (m) => m.main(argv))
}

const [name, ...argv] = process.argv.slice(2)
const benchmark = benchmarks[name ?? ""]
if (benchmark === undefined) {
  console.error(`usage: npm run bench -- <${Object.keys(benchmarks).join("|")}> [options]`)
  process.exit(2)
}
NodeRuntime.runMain(benchmark(argv))
