/**
 * runtime/typescript.mjs, the loader `npm start` runs the gateway with: the project's TypeScript
 * compiled without esbuild's `keepNames`, so functions made at run time keep V8's fast
 * properties (docs/operations.md), while names and source-mapped stack traces stay as they were.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { REPO, TYPESCRIPT_LOADER } from "../bench/support/Processes.js"

const FIXTURE = fileURLToPath(new URL("./fixtures/named-functions.ts", import.meta.url))

const run = (loader: ReadonlyArray<string>) =>
  new Promise<{ name: string; fast: boolean; at: string }>((resolve, reject) =>
    execFile(process.execPath, ["--allow-natives-syntax", ...loader, FIXTURE], { cwd: REPO }, (error, stdout, stderr) =>
      error === null ? resolve(JSON.parse(stdout)) : reject(new Error(`${error.message}\n${stderr}`))
    )
  )

describe("the TypeScript loader", () => {
  it("keeps a function's name and fast properties, and points stack traces at the source", async () => {
    const ours = await run(TYPESCRIPT_LOADER)
    assert.strictEqual(ours.name, "next")
    assert.isTrue(ours.fast)
    assert.strictEqual(ours.at, `at fail (${FIXTURE}:14:9)`)
  }, 60_000)

  it("differs from plain tsx, whose named functions each get a property dictionary", async () => {
    const tsx = await run(["--import", "tsx"])
    assert.strictEqual(tsx.name, "next")
    assert.isFalse(tsx.fast)
    assert.strictEqual(tsx.at, `at fail (${FIXTURE}:14:9)`)
  }, 60_000)
})
