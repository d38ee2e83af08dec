/**
 * The gateway under test, started as `npm start` starts it (its composition root in a Node
 * process of its own, configured through the environment), and the account the load uses.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as OpsClient from "@wagate/client/OpsClient"
import * as Effect from "effect/Effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { provision } from "../../support/Fixtures.js"
import { type Child, GATEWAY_NODE_ARGS, REPO, scopedTs, waitReady } from "./Processes.js"
import { freePort } from "../../support/Ports.js"

const ENTRY = join(REPO, "test/bench/support/GatewayProcess.ts")
export const OPERATOR_TOKEN = "wag_op_bench_operator_token"

/**
 * Account keys the load spreads over round-robin: every key counts against the limit of 3000
 * requests a minute, so each must stay well under it at the highest throughput measured.
 */
export const KEYS = 200

export interface Server {
  readonly name: string
  readonly child: Child
  readonly url: string
}

/**
 * A gateway for the scope. With `cpuProfDir`, V8 writes a CPU profile of each of its threads
 * (the main thread is the largest file) into a directory named after it there when it stops.
 */
export const startGateway = (name: string, env: Record<string, string>, cpuProfDir?: string | undefined) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const runnerPort = yield* freePort
    const child = yield* scopedTs(name, ENTRY, {
      env: {
        HTTP_HOST: "127.0.0.1",
        HTTP_PORT: String(port),
        RUNNER_PORT: String(runnerPort),
        OPERATOR_TOKEN,
        // Reads do not touch the network; the simulator keeps the run off WhatsApp whatever the default.
        WA_DRIVER: "simulator",
        DATA_DIR: mkdtempSync(join(tmpdir(), "wagate-bench-data-")),
        ...env
      },
      nodeArgs: cpuProfDir === undefined
        ? GATEWAY_NODE_ARGS
        : [...GATEWAY_NODE_ARGS, "--cpu-prof", `--cpu-prof-dir=${join(cpuProfDir, name.replace(/\W+/g, "-").replace(/-$/, ""))}`]
    })
    const url = `http://127.0.0.1:${port}`
    yield* waitReady(child, `${url}/api/status`)
    return { name, child, url } satisfies Server
  })

/** `count` more account keys of `accountId`, issued through the operator API. */
export const issueKeys = (url: string, accountId: number, count: number) =>
  Effect.gen(function*() {
    const ops = yield* OpsClient.make({ baseUrl: url, token: OPERATOR_TOKEN })
    const keys: Array<string> = []
    while (keys.length < count) {
      keys.push((yield* ops.ops.issueKey({ payload: { account_id: accountId } })).key)
    }
    return keys
  }).pipe(Effect.provide(NodeHttpClient.layerUndici), Effect.orDie)

/** An account with two numbers and `KEYS` account keys, provisioned through the operator API. */
export const provisionAccount = (url: string) =>
  Effect.gen(function*() {
    const ops = yield* OpsClient.make({ baseUrl: url, token: OPERATOR_TOKEN })
    const account = yield* provision(ops, { numbers: 2 })
    const more = yield* issueKeys(url, account.accountId, KEYS - 1)
    return { ...account, keys: [account.accountKey, ...more] }
  }).pipe(Effect.provide(NodeHttpClient.layerUndici), Effect.orDie)
