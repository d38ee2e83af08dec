/**
 * DATA_DIR holds the embedded database (message history, webhook secrets, key hashes), the
 * operator token and stored files: only the gateway's own user may read it. It is created with
 * mode 0700; an existing one that others can read or enter is reported at start, with the fix.
 */
import * as Effect from "effect/Effect"
import { mkdirSync, statSync } from "node:fs"
import { resolve } from "node:path"

/** Creates DATA_DIR (0700) if it is missing; warns when others may read or enter it. */
export const prepare = (dataDir: string) =>
  Effect.gen(function*() {
    const path = resolve(dataDir)
    yield* Effect.sync(() => mkdirSync(path, { recursive: true, mode: 0o700 }))
    const mode = (yield* Effect.sync(() => statSync(path))).mode & 0o777
    if ((mode & 0o077) !== 0) {
      yield* Effect.logWarning(
        `DATA_DIR ${path} has mode 0${mode.toString(8)}: other users of this machine can read the database, secrets and files in it. Run: chmod 700 ${path}`
      )
    }
  })
