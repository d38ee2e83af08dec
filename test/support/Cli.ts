/**
 * The operator CLI run as a process, as an operator runs it: `npm run cli`'s command, or the
 * `wagate` command of the gateway package (apps/gateway/bin/wagate.mjs). Its stdin is a pipe, as
 * in a script.
 */
import * as Effect from "effect/Effect"
import { execFile } from "node:child_process"
import { join } from "node:path"

const root = join(import.meta.dirname, "../..")

export interface CliRun {
  /** The exit status; the signal's name when it was killed (past `timeoutMs`). */
  readonly exit: number | string
  readonly stdout: string
  readonly stderr: string
}

/** `npm run cli -- ...args`, or with `bin` the `wagate` command itself. */
export const runCli = (
  args: ReadonlyArray<string>,
  options: { readonly env?: Record<string, string>; readonly bin?: boolean; readonly timeoutMs?: number } = {}
) =>
  Effect.async<CliRun>((resume) => {
    const [command, commandArgs] = options.bin === true
      ? [join(root, "apps/gateway/bin/wagate.mjs"), args]
      : [process.execPath, ["--import", "tsx", join(root, "apps/gateway/src/cli.ts"), ...args]]
    const child = execFile(
      command,
      commandArgs,
      { cwd: root, env: { ...process.env, ...options.env }, timeout: options.timeoutMs ?? 60_000 },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ exit: error === null ? 0 : error.signal ?? Number(error.code), stdout, stderr }))
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })
