/**
 * One gateway per DATA_DIR on the embedded database. PGlite takes no lock of its own: a second
 * process on the same directory loads the database into its own memory and writes over the first
 * one's files, so rows one of them confirmed are lost; both also connect every number and run the
 * billing drawdown. So a gateway on the embedded database holds `DATA_DIR/gateway.lock`, a file
 * naming its process, from before it opens anything there until it stops.
 *
 * The file appears whole: it is written aside and hard-linked into place, and the link fails when
 * a lock exists, so no reader ever sees it half written. A lock whose holder is gone is taken over,
 * so a gateway killed with SIGKILL or by a power loss does not block the next start. Gone means:
 * its process is not alive; its pid is this process's own (a restarted container, where the gateway
 * is pid 1 again); it was written during an earlier boot of the machine (its pid may belong to
 * another program now); or it cannot be read (a power loss before its contents reached the disk).
 * A stale lock is removed only under a second lock of the same kind, `gateway.lock.takeover`, so
 * two gateways starting at once cannot both take it over.
 *
 * Process ids are those of one machine (one pid namespace): the lock does not see a gateway in
 * another container or on another host sharing the directory.
 */
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { randomBytes } from "node:crypto"
import { linkSync, readFileSync, unlinkSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"

export const FILE_NAME = "gateway.lock"

/** What a lock file holds. */
export interface Holder {
  readonly pid: number
  /** The machine's boot (Linux `boot_id`), where the system tells it. */
  readonly boot?: string | undefined
  readonly since: string
}

/** Another live gateway holds the directory. */
export class DataDirInUse extends Data.TaggedError("DataDirInUse")<{
  readonly dataDir: string
  readonly holder: Holder
}> {
  override get message() {
    const { pid, since } = this.holder
    return `DATA_DIR ${this.dataDir} is in use by process ${pid} (a gateway there since ${since}): the embedded ` +
      "database serves one process. Stop that gateway, give this one another DATA_DIR, or set DATABASE_URL to " +
      `run several processes on PostgreSQL. If process ${pid} is not a wagate gateway, delete ${join(this.dataDir, FILE_NAME)}.`
  }
}

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code

const bootId = (() => {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() || undefined
  } catch {
    return undefined
  }
})()

const parse = (text: string): Holder | undefined => {
  try {
    const holder = JSON.parse(text)
    return Number.isSafeInteger(holder?.pid) && holder.pid > 0 && typeof holder.since === "string" ? holder : undefined
  } catch {
    return undefined
  }
}

/** The lock at `path`: null when there is none, undefined when it cannot be read as one. */
const read = (path: string): Holder | null | undefined => {
  try {
    return parse(readFileSync(path, "utf8"))
  } catch (error) {
    if (errorCode(error) === "ENOENT") return null
    throw error
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // The process exists but belongs to another user.
    return errorCode(error) === "EPERM"
  }
}

/** Whether the holder of a lock still runs (see the module's comment). */
export const isLive = (holder: Holder | undefined): holder is Holder =>
  holder !== undefined &&
  holder.pid !== process.pid &&
  (holder.boot === undefined || bootId === undefined || holder.boot === bootId) &&
  alive(holder.pid)

/** Links `draft` into place at `path`; false when a file is there. */
const place = (draft: string, path: string) => {
  try {
    linkSync(draft, path)
    return true
  } catch (error) {
    if (errorCode(error) === "EEXIST") return false
    throw error
  }
}

const remove = (path: string) => {
  try {
    unlinkSync(path)
  } catch (error) {
    if (errorCode(error) !== "ENOENT") throw error
  }
}

/**
 * One attempt: taken; held by a live gateway; try again at once (the lock was released, or stale
 * and removed); or wait a little (another gateway is taking a stale lock over).
 */
const attempt = (lock: string, draft: string): "taken" | "again" | "wait" | Holder => {
  if (place(draft, lock)) return "taken"
  const holder = read(lock)
  if (holder === null) return "again"
  if (isLive(holder)) return holder
  const guard = `${lock}.takeover`
  if (place(draft, guard)) {
    try {
      // Under the guard nobody else removes it: whatever is there now is checked once more.
      const current = read(lock)
      if (current !== null && !isLive(current)) remove(lock)
    } finally {
      remove(guard)
    }
    return "again"
  }
  const taker = read(guard)
  if (isLive(taker ?? undefined)) return "wait"
  // A gateway died while it took a lock over (the guard is held for a few system calls).
  if (taker !== null) remove(guard)
  return "again"
}

/**
 * Holds DATA_DIR for this process until the scope closes; fails with {@link DataDirInUse} when a
 * live gateway holds it.
 */
export const acquire = (dataDir: string) => {
  const dir = resolve(dataDir)
  const lock = join(dir, FILE_NAME)
  const contents = JSON.stringify({ pid: process.pid, boot: bootId, since: new Date().toISOString() } satisfies Holder)
  const take = Effect.gen(function*() {
    const draft = `${lock}.${process.pid}-${randomBytes(4).toString("hex")}`
    yield* Effect.acquireUseRelease(
      Effect.sync(() => writeFileSync(draft, contents, { mode: 0o600 })),
      () =>
        Effect.gen(function*() {
          for (let tries = 0;; tries++) {
            const result = yield* Effect.sync(() => attempt(lock, draft))
            if (result === "taken") return
            if (typeof result !== "string") return yield* new DataDirInUse({ dataDir: dir, holder: result })
            if (tries === 50) return yield* Effect.dieMessage(`${lock}: the lock could not be taken`)
            if (result === "wait") yield* Effect.sleep(Duration.millis(10 + Math.random() * 40))
          }
        }),
      () => Effect.sync(() => remove(draft))
    )
  })
  // Only the lock this process wrote is removed: never one a later gateway took over.
  const release = Effect.sync(() => {
    try {
      if (readFileSync(lock, "utf8") === contents) remove(lock)
    } catch {
      // gone already
    }
  })
  return Effect.acquireRelease(take, () => release)
}
