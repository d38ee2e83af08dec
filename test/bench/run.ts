/**
 * Runs the named benchmarks: `npm run bench -- <name> [options] [--no-fail]` (see each
 * benchmark's header). A benchmark prints its figures against its targets and an independent
 * baseline of the same run, and exits non-zero when a target is missed; `--no-fail` exits 0
 * anyway (exploring with small sizes or on a busy machine).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Verdict from "./support/Verdict.js"

const benchmarks: Record<string, (argv: ReadonlyArray<string>) => Effect.Effect<void, unknown>> = {
  messages: (argv) => Effect.flatMap(Effect.promise(() => import("./messages.js")), (m) => m.main(argv)),
  baileys: (argv) => Effect.flatMap(Effect.promise(() => import("./baileys.js")), (m) => m.main(argv)),
  webhooks: (argv) => Effect.flatMap(Effect.promise(() => import("./webhooks.js")), (m) => m.main(argv)),
  "webhook-log": (argv) => Effect.flatMap(Effect.promise(() => import("./webhook-log.js")), (m) => m.main(argv)),
  "webhook-log-upkeep": (argv) =>
    Effect.flatMap(Effect.promise(() => import("./webhook-log-upkeep.js")), (m) => m.main(argv)),
  "trust-index": (argv) => Effect.flatMap(Effect.promise(() => import("./trust-index.js")), (m) => m.main(argv)),
  balance: (argv) => Effect.flatMap(Effect.promise(() => import("./balance.js")), (m) => m.main(argv)),
  media: (argv) => Effect.flatMap(Effect.promise(() => import("./media.js")), (m) => m.main(argv)),
  send: (argv) => Effect.flatMap(Effect.promise(() => import("./send.js")), (m) => m.main(argv)),
  exports: (argv) => Effect.flatMap(Effect.promise(() => import("./exports.js")), (m) => m.main(argv)),
  cluster: (argv) => Effect.flatMap(Effect.promise(() => import("./cluster.js")), (m) => m.main(argv))
}

const [name, ...argv] = process.argv.slice(2)
const benchmark = benchmarks[name ?? ""]
if (benchmark === undefined) {
  console.error(`usage: npm run bench -- <${Object.keys(benchmarks).join("|")}> [options] [--no-fail]`)
  process.exit(2)
}
NodeRuntime.runMain(Verdict.run(benchmark, argv))
