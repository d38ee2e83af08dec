/**
 * Numbers sending at their limit, from a process of its own: each number sends a text to its
 * peer (who wrote first), waits out the rest of its second (plus 30 ms for jitter) and sends
 * the next, for as long as the run lasts. A number whose send took longer than a second sends
 * its next at once, so past the gateway's capacity the accepted rate is that capacity.
 *
 * `runSendLoad` starts the process and hands it the numbers over IPC (thousands do not fit in a
 * command line); the process answers `started` and, when the run is over, a `SendLoadResult`.
 */
import * as Effect from "effect/Effect"
import { fileURLToPath } from "node:url"
import { resolve } from "node:path"
import { type Child, nextMessage, spawnTs, stop } from "./Processes.js"

export interface Sender {
  readonly key: string
  readonly id: number
  readonly peer: string
}

export interface SendLoadSpec {
  readonly url: string
  readonly senders: ReadonlyArray<Sender>
  /** Texts are `<tag> <n>`. */
  readonly tag: string
  readonly warmupSeconds: number
  readonly seconds: number
}

export interface SendLoadResult {
  /** Answered 200 within the measured window (after the warm-up). */
  readonly accepted: number
  /** Other answers in the window, by error code (or status; "transport" when none came). */
  readonly refused: Record<string, number>
  readonly seconds: number
  /** Milliseconds, of the accepted sends. */
  readonly p50: number
  readonly p99: number
  readonly max: number
}

const SELF = fileURLToPath(import.meta.url)

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]

/**
 * Runs the load for the spec; `onMeasuring` runs when the measured window opens (after the
 * warm-up), and its result is handed back with the load's when the window closes.
 */
export const runSendLoad = <A>(spec: SendLoadSpec, onMeasuring: (load: Child) => Promise<A>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => spawnTs("send-load", SELF, { ipc: true, reportExit: false })),
    (load: Child) =>
      Effect.promise(async () => {
        const next = () => nextMessage(load)
        load.process.send(spec)
        await next() // started
        await new Promise((r) => setTimeout(r, spec.warmupSeconds * 1000))
        const measuring = onMeasuring(load)
        const result = (await next()) as SendLoadResult
        return { result, measured: await measuring }
      }),
    (load) => stop(load)
  )

const main = async () => {
  const spec = await new Promise<SendLoadSpec>((resolve) =>
    process.once("message", (message) => resolve(message as SendLoadSpec))
  )
  const { Agent, request } = await import("undici")
  const agent = new Agent({ connections: 256, pipelining: 1 })
  const latencies: Array<number> = []
  const refused: Record<string, number> = {}
  let accepted = 0
  const measureFrom = Date.now() + spec.warmupSeconds * 1000
  const endAt = measureFrom + spec.seconds * 1000
  const count = (code: string) => void (refused[code] = (refused[code] ?? 0) + 1)
  process.send!({ started: true })
  await Promise.all(spec.senders.map(async (sender, i) => {
    // Spread over the first second, as independent clients would be.
    await new Promise((r) => setTimeout(r, (i * 1000) / spec.senders.length))
    for (let k = 0; Date.now() < endAt; k++) {
      const started = performance.now()
      let status = 0
      let code = "transport"
      try {
        const response = await request(`${spec.url}/api/v1/messages/send`, {
          method: "POST",
          dispatcher: agent,
          headers: { authorization: `Bearer ${sender.key}`, "content-type": "application/json" },
          body: JSON.stringify({ to: sender.peer, text: `${spec.tag} ${k}`, from: sender.id })
        })
        status = response.statusCode
        const text = await response.body.text()
        try {
          code = (JSON.parse(text) as { code?: string }).code ?? String(status)
        } catch {
          code = `${status} (not JSON)`
        }
      } catch {
        status = 0
      }
      const elapsed = performance.now() - started
      const now = Date.now()
      if (now > measureFrom && now <= endAt) {
        if (status === 200) {
          accepted++
          latencies.push(elapsed)
        } else {
          count(code)
        }
      }
      await new Promise((r) => setTimeout(r, Math.max(0, 1030 - elapsed)))
    }
  }))
  latencies.sort((a, b) => a - b)
  const result: SendLoadResult = {
    accepted,
    refused,
    seconds: spec.seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: latencies[latencies.length - 1] ?? 0
  }
  process.send!(result, () => process.exit(0))
}

if (resolve(process.argv[1] ?? "") === SELF) await main()
