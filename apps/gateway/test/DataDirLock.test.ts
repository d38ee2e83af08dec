/**
 * When a DATA_DIR lock is held and when it is left over: a live process of this boot holds it; a
 * dead process, this process's own pid, an earlier boot or an unreadable file leave it to be taken
 * over. (That a second gateway exits at start is test/e2e/data-dir-lock.test.ts.)
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as DataDirLock from "../src/infra/DataDirLock.js"

const bootId = existsSync("/proc/sys/kernel/random/boot_id")
  ? readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim()
  : undefined
const since = new Date().toISOString()
/** A pid no process has any more. */
const deadPid = () => spawnSync(process.execPath, ["-e", ""]).pid!

const dirWith = (contents: string | undefined, guard?: string) => {
  const dir = mkdtempSync(join(tmpdir(), "wagate-lock-"))
  if (contents !== undefined) writeFileSync(join(dir, DataDirLock.FILE_NAME), contents)
  if (guard !== undefined) writeFileSync(join(dir, `${DataDirLock.FILE_NAME}.takeover`), guard)
  return dir
}
const holderFile = (holder: DataDirLock.Holder) => JSON.stringify(holder)
const lockPid = (dir: string) => JSON.parse(readFileSync(join(dir, DataDirLock.FILE_NAME), "utf8")).pid

describe("the DATA_DIR lock", () => {
  it.effect("is refused while a live process of this boot holds it, naming the directory and the process", () =>
    Effect.gen(function*() {
      // The test runner's parent process: alive, and not this one.
      const dir = dirWith(holderFile({ pid: process.ppid, boot: bootId, since }))
      const refused = yield* Effect.flip(Effect.scoped(DataDirLock.acquire(dir)))
      assert.strictEqual(refused._tag, "DataDirInUse")
      assert.include(refused.message, `DATA_DIR ${dir} is in use by process ${process.ppid}`)
      assert.strictEqual(lockPid(dir), process.ppid)
    }))

  const leftOver: ReadonlyArray<readonly [string, () => string]> = [
    ["its process is gone", () => holderFile({ pid: deadPid(), boot: bootId, since })],
    ["it names this process (a restarted container)", () => holderFile({ pid: process.pid, boot: bootId, since })],
    ["it is unreadable", () => ""],
    ["it was written in another boot", () => holderFile({ pid: process.ppid, boot: "an-earlier-boot", since })]
  ]
  for (const [when, contents] of leftOver) {
    if (when.includes("another boot") && bootId === undefined) continue
    it.effect(`is taken over when ${when}, and removed when released`, () =>
      Effect.gen(function*() {
        const dir = dirWith(contents())
        const scope = yield* Scope.make()
        yield* Scope.extend(DataDirLock.acquire(dir), scope)
        assert.strictEqual(lockPid(dir), process.pid)
        yield* Scope.close(scope, Exit.void)
        assert.isFalse(existsSync(join(dir, DataDirLock.FILE_NAME)))
      }))
  }

  it.effect("is taken over past the guard of a process that died while taking it over", () =>
    Effect.gen(function*() {
      const dir = dirWith(holderFile({ pid: deadPid(), boot: bootId, since }), holderFile({ pid: deadPid(), boot: bootId, since }))
      yield* Effect.scoped(Effect.andThen(DataDirLock.acquire(dir), Effect.sync(() => assert.strictEqual(lockPid(dir), process.pid))))
      assert.isFalse(existsSync(join(dir, `${DataDirLock.FILE_NAME}.takeover`)))
    }))

  it.live("is left alone while a live process takes a stale one over", () =>
    Effect.gen(function*() {
      const stale = holderFile({ pid: deadPid(), boot: bootId, since })
      const dir = dirWith(stale, holderFile({ pid: process.ppid, boot: bootId, since }))
      const exit = yield* Effect.exit(Effect.scoped(DataDirLock.acquire(dir)))
      assert.isTrue(Exit.isFailure(exit) && String(exit.cause).includes("the lock could not be taken"), String(exit))
      assert.strictEqual(readFileSync(join(dir, DataDirLock.FILE_NAME), "utf8"), stale)
    }))

  it.effect("released leaves a lock another process has taken over since", () =>
    Effect.gen(function*() {
      const dir = dirWith(undefined)
      const other = holderFile({ pid: process.ppid, boot: bootId, since })
      yield* Effect.scoped(Effect.andThen(
        DataDirLock.acquire(dir),
        Effect.sync(() => writeFileSync(join(dir, DataDirLock.FILE_NAME), other))
      ))
      assert.strictEqual(readFileSync(join(dir, DataDirLock.FILE_NAME), "utf8"), other)
    }))
})
