/**
 * What a benchmark run comes to: each target beside the figure measured and the baseline of the
 * same run, printed as a table, and a failure when a target is missed, so `npm run bench` exits
 * non-zero. `--no-fail` (for exploring: small sizes, a busy machine) prints the same verdict and
 * exits 0.
 */
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"

export interface Check {
  /** What is measured, e.g. "first, 16 conns: throughput vs baseline". */
  readonly what: string
  readonly target: string
  readonly measured: string
  /** The independent baseline's figure in the same run ("" when it has none). */
  readonly baseline: string
  readonly met: boolean
}

export class TargetMissed extends Data.TaggedError("TargetMissed")<{
  readonly benchmark: string
  readonly missed: ReadonlyArray<Check>
}> {
  override get message() {
    return `${this.benchmark}: ${this.missed.length} target(s) missed: ${this.missed.map((c) => c.what).join("; ")}`
  }
}

export const table = (checks: ReadonlyArray<Check>): string =>
  [
    "| check | target | measured | baseline (same run) | verdict |",
    "|---|---|---|---|---|",
    ...checks.map((c) => `| ${c.what} | ${c.target} | ${c.measured} | ${c.baseline} | ${c.met ? "met" : "MISSED"} |`)
  ].join("\n")

/** Prints the verdict; fails with TargetMissed when a check was not met. */
export const verdict = (benchmark: string, checks: ReadonlyArray<Check>) =>
  Effect.gen(function*() {
    yield* Console.log(`\n${benchmark}: targets\n\n${table(checks)}\n`)
    const missed = checks.filter((c) => !c.met)
    if (checks.length === 0) return yield* Effect.dieMessage(`${benchmark}: no target was checked`)
    if (missed.length > 0) return yield* new TargetMissed({ benchmark, missed })
    yield* Console.log(`${benchmark}: every target met`)
  })

/** Splits `--no-fail` off a benchmark's arguments. */
export const noFailFlag = (argv: ReadonlyArray<string>) => ({
  noFail: argv.includes("--no-fail"),
  argv: argv.filter((a) => a !== "--no-fail")
})

/** Runs a benchmark's main: a missed target fails the run unless `--no-fail` was given. */
export const run = <E, R>(main: (argv: ReadonlyArray<string>) => Effect.Effect<void, E, R>, rawArgv: ReadonlyArray<string>) => {
  const { argv, noFail } = noFailFlag(rawArgv)
  return main(argv).pipe(
    Effect.catchIf(
      (e): e is E & TargetMissed => noFail && e instanceof TargetMissed,
      (e) => Console.log(`${e.message} (exit 0: --no-fail)`)
    )
  )
}

/** `n` with `digits` decimals. */
export const fixed = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a")
